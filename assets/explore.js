/* echomark's explorer: plain JavaScript written for this site, no framework, no network.
 *
 * It reads window.ECHOMARK_EXPLORE (data/explore.js, written by `echomark build`) and the
 * page's words (#explore-text), and builds every control with createElement and
 * textContent: no string from the data ever becomes HTML. The comparison rule is a port of
 * echomark_decide::compare (Welch t interval on the logarithms of the repetitions); a test
 * checks it against the generator's on every pair of datasets of the committed data.
 */
(function () {
  'use strict';
  var root = document.getElementById('explorer');
  var DATA = window.ECHOMARK_EXPLORE;
  var words = document.getElementById('explore-text');
  if (!root || !DATA || !words) return;
  var T = JSON.parse(words.textContent);
  var X = T.explore;

  /* ---------- the comparison rule (echomark_decide) ---------- */

  var LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028,
    771.32342877765313, -176.61502916214059, 12.507343278686905,
    -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];

  function lnGamma(x) {
    if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
    x -= 1;
    var a = LANCZOS[0];
    var t = x + 7.5;
    for (var i = 1; i < 9; i++) a += LANCZOS[i] / (x + i);
    return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
  }

  // The continued fraction of the regularized incomplete beta function (Lentz).
  function betaFraction(a, b, x) {
    var tiny = 1e-300;
    var qab = a + b, qap = a + 1, qam = a - 1;
    var c = 1, d = 1 - qab * x / qap;
    if (Math.abs(d) < tiny) d = tiny;
    d = 1 / d;
    var h = d;
    for (var m = 1; m <= 500; m++) {
      var m2 = 2 * m;
      var aa = m * (b - m) * x / ((qam + m2) * (a + m2));
      d = 1 + aa * d; if (Math.abs(d) < tiny) d = tiny;
      c = 1 + aa / c; if (Math.abs(c) < tiny) c = tiny;
      d = 1 / d; h *= d * c;
      aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
      d = 1 + aa * d; if (Math.abs(d) < tiny) d = tiny;
      c = 1 + aa / c; if (Math.abs(c) < tiny) c = tiny;
      d = 1 / d;
      var del = d * c;
      h *= del;
      if (Math.abs(del - 1) < 1e-16) break;
    }
    return h;
  }

  function incompleteBeta(a, b, x) {
    if (x <= 0) return 0;
    if (x >= 1) return 1;
    var front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) +
      a * Math.log(x) + b * Math.log(1 - x));
    if (x < (a + 1) / (a + b + 2)) return front * betaFraction(a, b, x) / a;
    return 1 - front * betaFraction(b, a, 1 - x) / b;
  }

  function tCdf(t, df) {
    var tail = 0.5 * incompleteBeta(df / 2, 0.5, df / (df + t * t));
    return t > 0 ? 1 - tail : tail;
  }

  function tPdf(t, df) {
    return Math.exp(lnGamma((df + 1) / 2) - lnGamma(df / 2) - 0.5 * Math.log(df * Math.PI) -
      (df + 1) / 2 * Math.log(1 + t * t / df));
  }

  var quantiles = {};
  // The two-sided t quantile at `level` with `df` degrees of freedom (Newton's method on
  // the CDF, kept inside a bracket that bisection narrows when a step would leave it).
  function tQuantile(df, level) {
    df = Math.max(df, 1e-3);
    var key = df + ':' + level;
    if (key in quantiles) return quantiles[key];
    var p = 1 - (1 - level) / 2;
    var lo = 0, hi = 1;
    while (tCdf(hi, df) < p && hi < 1e300) hi *= 2;
    var t = Math.min(hi, 2);
    for (var i = 0; i < 200; i++) {
      var f = tCdf(t, df) - p;
      if (f > 0) hi = t; else lo = t;
      var next = t - f / tPdf(t, df);
      if (!(next > lo && next < hi)) next = (lo + hi) / 2;
      if (Math.abs(next - t) <= 1e-15 * Math.max(1, Math.abs(t))) { t = next; break; }
      t = next;
    }
    quantiles[key] = t;
    return t;
  }

  function logMoments(values) {
    var n = values.length, mean = 0, i;
    for (i = 0; i < n; i++) mean += Math.log(values[i]);
    mean /= n;
    var variance = 0;
    if (n > 1) {
      for (i = 0; i < n; i++) { var dev = Math.log(values[i]) - mean; variance += dev * dev; }
      variance /= (n - 1);
    }
    return [mean, variance];
  }

  var MAX_RUNS = 1000;

  function perLook(rule) { return 1 - (1 - rule.level) / Math.max(1, rule.looks); }

  function runsNeeded(d, variance, rule, current) {
    if (!(isFinite(variance) && variance > 0)) return null;
    var level = perLook(rule), s = Math.sqrt(variance);
    var toDiffer = Math.abs(d);
    var toMatch = Math.min(Math.log(1 + rule.margin) - d, d - Math.log(1 - rule.margin));
    var target = Math.max(toDiffer, toMatch);
    if (target <= 0) return null;
    var fits = function (n) {
      return tQuantile(2 * (n - 1), level) * s * Math.sqrt(2 / n) < target;
    };
    var start = Math.max(current + 1, 2);
    if (!fits(MAX_RUNS)) return null;
    var lo = start, hi = MAX_RUNS;
    if (fits(lo)) return lo;
    while (hi - lo > 1) {
      var mid = Math.floor((lo + hi) / 2);
      if (fits(mid)) hi = mid; else lo = mid;
    }
    return hi;
  }

  // `subject` against `base` under `rule` ({level, margin, looks}).
  function compare(base, subject, rule) {
    var nb = base.length, ns = subject.length;
    var out = { ratio: 1, low: 0, high: Infinity, margin: rule.margin, baseRuns: nb, subjectRuns: ns };
    if (nb === 0 || ns === 0) { out.verdict = 'not_comparable'; return out; }
    for (var i = 0; i < nb + ns; i++) {
      var v = i < nb ? base[i] : subject[i - nb];
      if (!(isFinite(v) && v > 0)) { out.verdict = 'not_comparable'; return out; }
    }
    var level = perLook(rule);
    var b = logMoments(base), s = logMoments(subject);
    var d = s[0] - b[0];
    out.ratio = Math.exp(d);
    if (nb < 2 || ns < 2) {
      var spread = null;
      if (nb > 1) spread = b[1];
      if (ns > 1) spread = spread === null ? s[1] : Math.max(spread, s[1]);
      out.verdict = 'undecided';
      out.runs = spread === null ? null : runsNeeded(d, spread, rule, Math.max(nb, ns));
      return out;
    }
    var eb = b[1] / nb, es = s[1] / ns, se2 = eb + es;
    var low, high;
    if (se2 <= 0) { low = d; high = d; } else {
      var se = Math.sqrt(se2);
      var df = se2 * se2 / (eb * eb / (nb - 1) + es * es / (ns - 1));
      var half = tQuantile(df, level) * se;
      low = d - half; high = d + half;
    }
    out.low = Math.exp(low); out.high = Math.exp(high);
    if (out.low >= 1 - rule.margin && out.high <= 1 + rule.margin) out.verdict = 'equivalent';
    else if (out.low > 1) out.verdict = 'higher';
    else if (out.high < 1) out.verdict = 'lower';
    else {
      out.verdict = 'undecided';
      out.runs = runsNeeded(d, (b[1] + s[1]) / 2, rule, Math.max(nb, ns));
    }
    return out;
  }

  /* ---------- words and numbers (format.rs, labels::decision) ---------- */

  function grouped(value, decimals) {
    if (!isFinite(value)) return 'N/A';
    var text = value.toFixed(decimals);
    var sign = '';
    if (text.charAt(0) === '-') { sign = '-'; text = text.slice(1); }
    var parts = text.split('.');
    var int = parts[0], out = '';
    for (var i = 0; i < int.length; i++) {
      if (i > 0 && (int.length - i) % 3 === 0) out += ',';
      out += int.charAt(i);
    }
    return sign + out + (parts.length > 1 ? '.' + parts[1] : '');
  }

  function percent(share) {
    var p = Math.abs(share) * 100;
    return grouped(p, p < 10 ? 1 : 0) + '%';
  }

  function wholePercent(share) {
    var p = share * 100;
    return grouped(p, Math.abs(p - Math.round(p)) < 1e-9 ? 0 : 1) + '%';
  }

  function fill(template, args) {
    return String(template).replace(/\{([a-z_]+)\}/g, function (all, name) {
      return name in args ? String(args[name]) : all;
    });
  }

  function latency(value) {
    if (!isFinite(value)) return 'N/A';
    if (value === 0) return '0';
    var magnitude = Math.floor(Math.log10(Math.abs(value)));
    if (magnitude >= 2) {
      var unit = Math.pow(10, magnitude - 2);
      return grouped(Math.round(value / unit) * unit, 0);
    }
    return grouped(value, 2 - magnitude);
  }

  var HIGHER_IS_BETTER = { rate: true };

  function decisionText(d, metric) {
    var rate = !!HIGHER_IS_BETTER[metric];
    var word, up;
    switch (d.verdict) {
      case 'higher': word = rate ? 'faster' : 'higher'; up = true; break;
      case 'lower': word = rate ? 'slower' : 'lower'; up = false; break;
      case 'equivalent': return fill(T.decision.equivalent, { margin: wholePercent(d.margin) });
      case 'undecided':
        if (d.runs) return fill(T.decision.undecided_runs, { runs: grouped(d.runs, 0) });
        if (d.baseRuns < 2 || d.subjectRuns < 2) return T.decision.undecided_one;
        return T.decision.undecided_far;
      default: return T.decision.not_comparable;
    }
    if (d.ratio >= 2 || d.ratio <= 0.5) {
      return fill(T.decision[word + '_times'], {
        ratio: grouped(d.ratio, 2) + '×', low: grouped(d.low, 2), high: grouped(d.high, 2)
      });
    }
    var near = up ? d.low - 1 : 1 - d.high, far = up ? d.high - 1 : 1 - d.low;
    return fill(T.decision[word], { change: percent(d.ratio - 1), low: percent(near), high: percent(far) });
  }

  // better / worse / equivalent / undecided, for counting.
  function judgement(d, metric) {
    var up = !!HIGHER_IS_BETTER[metric];
    if (d.verdict === 'higher') return up ? 'better' : 'worse';
    if (d.verdict === 'lower') return up ? 'worse' : 'better';
    return d.verdict === 'equivalent' ? 'equivalent' : 'undecided';
  }

  /* ---------- the data ---------- */

  var S = DATA.s;
  var METRICS = ['rate', 'p50', 'p99', 'cpu'];
  var datasets = DATA.d.map(function (r, i) {
    return {
      i: i, name: S[r[0]], slug: S[r[1]], host: S[r[2]], kind: [S[r[3]], S[r[4]]],
      recorded: S[r[5]], rule: { level: r[6], throughput: r[7], latency: r[8], looks: r[9] }
    };
  });
  var configs = DATA.c.map(function (r, i) {
    return {
      i: i, d: r[0], id: S[r[1]], protocol: S[r[2]], program: S[r[3]], backend: S[r[4]],
      model: S[r[5]], threads: r[6], payload: r[7], clients: r[8], window: r[9], work: r[10],
      setting: S[r[11]], ok: r[12] === 1, runs: r[13]
    };
  });
  // What two configurations of different datasets must share to be compared.
  configs.forEach(function (c) {
    c.key = [c.protocol, c.program, c.backend, c.model, c.threads, c.payload, c.clients,
      c.window, c.work, c.setting].join('|');
  });
  var byId = {};
  configs.forEach(function (c) { byId[c.id] = c; });

  function values(c, metric) { return DATA.m[metric][c.i] || []; }

  // Each configuration's median, lowest and highest of a metric, computed once.
  var stats = {};
  function stat(c, metric) {
    var cache = stats[metric] || (stats[metric] = []);
    var s = cache[c.i];
    if (!s) {
      var v = values(c, metric);
      s = cache[c.i] = v.length
        ? { med: median(v), lo: Math.min.apply(null, v), hi: Math.max.apply(null, v) }
        : { med: NaN, lo: NaN, hi: NaN };
    }
    return s;
  }

  function median(v) {
    if (!v.length) return NaN;
    var s = v.slice().sort(function (a, b) { return a - b; });
    var m = Math.floor(s.length / 2);
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
  }

  function ruleFor(metric, state) {
    var margin = metric === 'p50' || metric === 'p99' ? DATA.rule[2] : marginOf(state);
    return { level: DATA.rule[0], margin: margin, looks: 1 };
  }

  function marginOf(state) {
    var m = parseFloat(state.margin);
    return m > 0 && m < 100 ? m / 100 : DATA.rule[1];
  }

  /* ---------- labels ---------- */

  var LANG = root.getAttribute('data-lang') || 'en';
  function protocolLabel(p) { return (T.protocol && T.protocol[p]) || p; }
  function backendLabel(b) { return (T.backend && T.backend[b]) || b; }
  function topology(c) {
    var family = c.backend === 'standalone' || c.backend === 'boost' ? 'asio' : 'tokio';
    var args = {
      unit: T.topology['unit_' + family], units: T.topology['units_' + family], threads: c.threads
    };
    if (c.model === 'shared') return fill(c.threads === 1 ? T.topology.shared_one : T.topology.shared_many, args);
    return fill(T.topology.sharded, args);
  }
  function clientsLabel(n) { return n === 1 ? T.clients.one : fill(T.clients.many, { n: grouped(n, 0) }); }
  function loadLabel(c) {
    var text = fill(X.load, { payload: grouped(c.payload, 0), clients: clientsLabel(c.clients), window: c.window });
    if (c.work) text += fill(X.work, { work: grouped(c.work, 0) });
    if (c.setting) text += ' · ' + c.setting;
    return text;
  }
  function modelLabel(c) { return backendLabel(c.backend) + ' · ' + topology(c); }
  function metricFormat(metric, v) {
    if (metric === 'rate') return grouped(v, 0);
    return latency(v);
  }

  /* ---------- the view, kept in the address ---------- */

  var FILTERS = ['ds', 'host', 'p', 'pl', 'c', 'w', 'io', 'b'];
  var DEFAULTS = { m: 'rate', sort: 'median', dir: 'desc', hide: '1' };

  function readState() {
    var params = new URLSearchParams(location.hash.replace(/^#/, ''));
    var state = {};
    params.forEach(function (v, k) { state[k] = v; });
    Object.keys(DEFAULTS).forEach(function (k) { if (!(k in state)) state[k] = DEFAULTS[k]; });
    if (METRICS.indexOf(state.m) < 0) state.m = 'rate';
    return state;
  }

  function addressOf(state) {
    var params = new URLSearchParams();
    Object.keys(state).sort().forEach(function (k) {
      if (state[k] !== '' && state[k] !== undefined && state[k] !== DEFAULTS[k]) params.set(k, state[k]);
    });
    var text = params.toString();
    return text ? '#' + text : '';
  }

  function keepLanguageLink(hash) {
    var link = document.querySelector('a.lang-switch');
    if (link) link.href = link.href.split('#')[0] + hash;
  }

  var state = readState();
  function setState(change) {
    Object.keys(change).forEach(function (k) { state[k] = change[k]; });
    limit = SHOWN;
    var hash = addressOf(state);
    history.replaceState(null, '', location.pathname + location.search + hash);
    keepLanguageLink(hash);
    render();
  }
  window.addEventListener('hashchange', function () { state = readState(); sync(); render(); });

  /* ---------- building blocks (text only) ---------- */

  function el(tag, props, children) {
    var node = document.createElement(tag);
    if (props) Object.keys(props).forEach(function (k) {
      if (k === 'text') node.textContent = props[k];
      else if (k === 'class') node.className = props[k];
      else if (k.indexOf('on') === 0) node.addEventListener(k.slice(2), props[k]);
      else node.setAttribute(k, props[k]);
    });
    (children || []).forEach(function (ch) { if (ch) node.appendChild(ch); });
    return node;
  }

  var uid = 0;
  function labelled(label, control) {
    var id = 'x-' + (++uid);
    control.id = id;
    return el('div', { class: 'x-field' }, [el('label', { for: id, text: label }), control]);
  }

  function select(name, options, current, onchange) {
    var s = el('select', { name: name, onchange: function () { onchange(s.value); } });
    options.forEach(function (o) {
      var opt = el('option', { value: o[0], text: o[1] });
      if (o[0] === current) opt.selected = true;
      s.appendChild(opt);
    });
    return s;
  }

  function distinct(list, f, numeric) {
    var seen = {}, out = [];
    list.forEach(function (x) { var v = f(x); if (!(v in seen)) { seen[v] = true; out.push(v); } });
    out.sort(numeric ? function (a, b) { return a - b; } : undefined);
    return out;
  }

  /* ---------- the page ---------- */

  var controls = {};
  var parts = {};

  function build() {
    var any = [['', X.any]];
    var filters = el('fieldset', { class: 'x-filters' }, [el('legend', { text: X.filters })]);
    var defs = [
      ['ds', X.dataset, datasets.map(function (d) { return [d.name, d.name]; })],
      ['host', X.host, distinct(datasets, function (d) { return d.host; }).map(function (h) { return [h, h]; })],
      ['p', X.protocol, distinct(configs, function (c) { return c.protocol; }).map(function (p) { return [p, protocolLabel(p)]; })],
      ['pl', X.payload, distinct(configs, function (c) { return c.payload; }, true).map(function (v) { return [String(v), grouped(v, 0)]; })],
      ['c', X.clients, distinct(configs, function (c) { return c.clients; }, true).map(function (v) { return [String(v), grouped(v, 0)]; })],
      ['w', X.window, distinct(configs, function (c) { return c.window; }, true).map(function (v) { return [String(v), grouped(v, 0)]; })],
      ['io', X.model, distinct(configs, function (c) { return c.model + ' ' + c.threads; }).map(function (v) {
        var p = v.split(' '); return [v, topology({ backend: 'tokio', model: p[0], threads: +p[1] })];
      })],
      ['b', X.backend, distinct(configs, function (c) { return c.backend; }).map(function (b) { return [b, backendLabel(b)]; })]
    ];
    defs.forEach(function (def) {
      var key = def[0];
      controls[key] = select(key, any.concat(def[2]), state[key] || '', function (v) {
        var change = {}; change[key] = v; setState(change);
      });
      filters.appendChild(labelled(def[1], controls[key]));
    });
    controls.m = select('m', METRICS.map(function (m) { return [m, X.metrics[m]]; }), state.m, function (v) { setState({ m: v }); });
    filters.appendChild(labelled(X.metric, controls.m));

    var compare = el('fieldset', { class: 'x-compare' }, [el('legend', { text: X.compare }),
      el('p', { class: 'x-hint', text: X.datasets_hint })]);
    var sides = [['' , X.none]].concat(datasets.map(function (d) { return [d.name, d.name]; }));
    controls.da = select('da', sides, state.da || '', function (v) { setState({ da: v, ca: '', cb: '' }); });
    controls.db = select('db', sides, state.db || '', function (v) { setState({ db: v, ca: '', cb: '' }); });
    controls.margin = el('input', { type: 'number', min: '0.5', max: '50', step: '0.5', name: 'margin',
      value: state.margin || String(DATA.rule[1] * 100),
      onchange: function () { setState({ margin: controls.margin.value }); } });
    controls.hide = el('input', { type: 'checkbox', name: 'hide',
      onchange: function () { setState({ hide: controls.hide.checked ? '1' : '0' }); } });
    controls.hide.checked = state.hide !== '0';
    var hideId = 'x-hide';
    controls.hide.id = hideId;
    compare.appendChild(labelled(X.side_a, controls.da));
    compare.appendChild(labelled(X.side_b, controls.db));
    compare.appendChild(labelled(X.margin, controls.margin));
    compare.appendChild(el('div', { class: 'x-field x-check' }, [controls.hide, el('label', { for: hideId, text: X.hide })]));
    compare.appendChild(el('button', { type: 'button', text: X.clear,
      onclick: function () { setState({ da: '', db: '', ca: '', cb: '' }); } }));

    parts.result = el('section', { class: 'x-result', 'aria-live': 'polite' });
    parts.status = el('p', { class: 'x-status', role: 'status' });
    parts.chart = el('figure', { class: 'x-chart' });
    parts.table = el('div', { class: 'table-wrap x-rows' });
    root.appendChild(filters);
    root.appendChild(compare);
    root.appendChild(parts.result);
    root.appendChild(parts.status);
    root.appendChild(parts.chart);
    root.appendChild(parts.table);
    root.hidden = false;
  }

  // The controls follow the state (after the address changed by itself).
  function sync() {
    FILTERS.concat(['m', 'da', 'db']).forEach(function (k) { if (controls[k]) controls[k].value = state[k] || (k === 'm' ? 'rate' : ''); });
    controls.margin.value = state.margin || String(DATA.rule[1] * 100);
    controls.hide.checked = state.hide !== '0';
  }

  function matches(c) {
    var d = datasets[c.d];
    return (!state.ds || d.name === state.ds) && (!state.host || d.host === state.host) &&
      (!state.p || c.protocol === state.p) && (!state.pl || String(c.payload) === state.pl) &&
      (!state.c || String(c.clients) === state.c) && (!state.w || String(c.window) === state.w) &&
      (!state.io || c.model + ' ' + c.threads === state.io) && (!state.b || c.backend === state.b);
  }

  // Rows drawn at once; the rest a button away.
  var SHOWN = 50;
  var limit = SHOWN;

  function sortKey(c, column) {
    switch (column) {
      case 'dataset': return datasets[c.d].name;
      case 'protocol': return protocolLabel(c.protocol);
      case 'load': return c.payload * 1e9 + c.clients * 1e4 + c.window;
      case 'model': return modelLabel(c);
      case 'runs': return c.runs;
      default: {
        var m = stat(c, state.m).med;
        return c.ok && isFinite(m) ? m : -Infinity;
      }
    }
  }

  var COLUMNS = ['dataset', 'protocol', 'load', 'model', 'median', 'runs'];

  function overviewHref(d) {
    return '../' + LANG + '/' + encodeURIComponent(d.slug) + '/overview.html';
  }

  function renderRows(rows) {
    var dir = state.dir === 'asc' ? 1 : -1, column = state.sort;
    var keyed = rows.map(function (c) { return [sortKey(c, column), c]; });
    keyed.sort(function (a, b) {
      var x = a[0], y = b[0];
      return (x < y ? -1 : x > y ? 1 : 0) * dir || a[1].i - b[1].i;
    });
    rows = keyed.map(function (k) { return k[1]; });
    var table = el('table');
    var head = el('tr');
    X.columns.forEach(function (label, k) {
      var th = el('th', { scope: 'col' });
      if (k < COLUMNS.length) {
        var col = COLUMNS[k];
        if (col === state.sort) th.setAttribute('aria-sort', state.dir === 'asc' ? 'ascending' : 'descending');
        th.appendChild(el('button', { type: 'button', class: 'x-sort', text: label,
          'aria-label': fill(X.sort_by, { column: label }), 'data-focus': 'sort ' + col,
          onclick: function () {
            setState({ sort: col, dir: state.sort === col && state.dir === 'desc' ? 'asc' : 'desc' });
          } }));
      } else th.textContent = label;
      head.appendChild(th);
    });
    table.appendChild(el('thead', null, [head]));
    var body = el('tbody');
    rows.slice(0, limit).forEach(function (c) {
      var d = datasets[c.d], st = stat(c, state.m);
      var figure = !c.ok ? X.failed : isFinite(st.med)
        ? metricFormat(state.m, st.med) + ' [' + metricFormat(state.m, st.lo) + ', ' + metricFormat(state.m, st.hi) + ']'
        : X.none;
      var link = el('a', { text: d.name });
      link.href = overviewHref(d);
      var picks = el('td', { 'data-label': X.columns[6] }, [
        el('button', { type: 'button', text: X.pick_a, 'aria-label': X.pick_a_label + ': ' + c.id, 'data-focus': 'a ' + c.id,
          'aria-pressed': String(state.ca === c.id), onclick: function () { setState({ ca: c.id, da: '', db: '' }); } }),
        el('button', { type: 'button', text: X.pick_b, 'aria-label': X.pick_b_label + ': ' + c.id, 'data-focus': 'b ' + c.id,
          'aria-pressed': String(state.cb === c.id), onclick: function () { setState({ cb: c.id, da: '', db: '' }); } })
      ]);
      var row = el('tr', { 'data-id': c.id, class: c.ok ? '' : 'x-failed' }, [
        el('td', { 'data-label': X.columns[0] }, [link]),
        el('td', { 'data-label': X.columns[1], text: protocolLabel(c.protocol) }),
        el('td', { 'data-label': X.columns[2], text: loadLabel(c) }),
        el('td', { 'data-label': X.columns[3], text: modelLabel(c) }),
        el('td', { 'data-label': X.columns[4], class: 'x-num', text: figure }),
        el('td', { 'data-label': X.columns[5], class: 'x-num', text: grouped(c.runs, 0) }),
        picks
      ]);
      body.appendChild(row);
    });
    table.appendChild(body);
    var more = rows.length > limit ? el('button', { type: 'button', class: 'x-more', 'data-focus': 'more',
      text: fill(X.more, { n: grouped(Math.min(SHOWN, rows.length - limit), 0) }),
      onclick: function () { limit += SHOWN; render(); } }) : null;
    parts.table.replaceChildren(table);
    if (more) parts.table.appendChild(more);
    parts.status.textContent = fill(X.showing, { shown: grouped(Math.min(limit, rows.length), 0), total: grouped(rows.length, 0) });
    renderChart(rows);
  }

  var SVG = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // `text` cut to about `px` pixels at 12 px (a wide character counts twice).
  function fitted(text, px) {
    var used = 0, out = '';
    for (var i = 0; i < text.length; i++) {
      used += text.charCodeAt(i) > 0x2e7f ? 12 : 6.8;
      if (used > px - 8) return out + '…';
      out += text.charAt(i);
    }
    return out;
  }

  // Horizontal bars of the first rows' medians, drawn at the figure's own width so its text
  // is 12 px on any screen.
  function renderChart(rows) {
    var shown = rows.filter(function (c) { return c.ok && values(c, state.m).length; }).slice(0, 30);
    if (!shown.length) { parts.chart.replaceChildren(); return; }
    var width = Math.max(280, Math.min(parts.table.clientWidth || 600, 900));
    var line = 16, bar = 12, gap = 10;
    var height = 24 + shown.length * (line + bar + gap);
    var max = 0;
    shown.forEach(function (c) { max = Math.max(max, stat(c, state.m).hi); });
    var room = 90, scale = max > 0 ? (width - 20 - room) / max : 0;
    var pic = svg('svg', { width: width, height: height, viewBox: '0 0 ' + width + ' ' + height,
      role: 'img', 'font-size': '12', 'aria-label': fill(X.chart, { n: shown.length }) });
    pic.appendChild(svg('text', { x: 10, y: 16 }, fill(X.chart, { n: shown.length }) + ' · ' + X.metrics[state.m]));
    var y = 24;
    shown.forEach(function (c) {
      var st = stat(c, state.m), med = st.med, lo = st.lo, hi = st.hi;
      var label = datasets[c.d].name + ' · ' + protocolLabel(c.protocol) + ' · ' + loadLabel(c) + ' · ' + modelLabel(c);
      pic.appendChild(svg('text', { x: 10, y: y + 12 }, fitted(label, width - 20)));
      y += line;
      pic.appendChild(svg('rect', { x: 10, y: y, width: Math.max(1, med * scale), height: bar, fill: '#3B6EA8' }));
      pic.appendChild(svg('path', { d: 'M' + (10 + lo * scale) + ' ' + (y + bar / 2) + 'H' + (10 + hi * scale),
        stroke: '#000', fill: 'none' }));
      pic.appendChild(svg('text', { x: 14 + hi * scale, y: y + 10 }, metricFormat(state.m, med)));
      y += bar + gap;
    });
    parts.chart.replaceChildren(pic);
  }

  function compareRow(a, b, metric) {
    if (!a.ok || !b.ok) return { verdict: 'failed' };
    return compare(values(a, metric), values(b, metric), ruleFor(metric, state));
  }

  // Every configuration the datasets `a` and `b` share, within the filters, B against A.
  function sharedRows(a, b, metric) {
    var ofA = {};
    configs.forEach(function (c) { if (c.d === a) ofA[c.key] = c; });
    var out = [];
    configs.forEach(function (c) {
      if (c.d !== b || !(c.key in ofA)) return;
      var base = ofA[c.key];
      out.push({ a: base, b: c, decision: compareRow(base, c, metric) });
    });
    return out;
  }

  function renderCompare(visible) {
    var metric = state.m, pairs = [], heading;
    if (state.ca && state.cb && byId[state.ca] && byId[state.cb]) {
      var a = byId[state.ca], b = byId[state.cb];
      heading = fill(X.pair, { a: datasets[a.d].name + ' · ' + loadLabel(a), b: datasets[b.d].name + ' · ' + loadLabel(b) });
      pairs = METRICS.map(function (m) { return { a: a, b: b, metric: m, decision: compareRow(a, b, m) }; });
    } else if (state.da && state.db) {
      var ia = datasets.findIndex(function (d) { return d.name === state.da; });
      var ib = datasets.findIndex(function (d) { return d.name === state.db; });
      if (ia < 0 || ib < 0) { parts.result.replaceChildren(); return; }
      heading = fill(X.pair, { a: state.da, b: state.db });
      pairs = sharedRows(ia, ib, metric).filter(function (p) { return visible(p.b); });
    } else { parts.result.replaceChildren(); return; }
    var counts = { better: 0, worse: 0, equivalent: 0, undecided: 0 };
    pairs.forEach(function (p) { if (p.decision.verdict !== 'failed') counts[judgement(p.decision, p.metric || metric)]++; });
    var children = [el('h2', { text: heading })];
    if (!pairs.length) children.push(el('p', { text: X.nothing_shared }));
    else children.push(el('p', { class: 'x-counts', text: fill(X.counts, {
      metric: X.metrics[metric], better: counts.better, worse: counts.worse, equivalent: counts.equivalent,
      undecided: counts.undecided, total: pairs.length }) }));
    var table = el('table');
    var head = el('tr');
    X.compare_columns.forEach(function (label) { head.appendChild(el('th', { scope: 'col', text: label })); });
    table.appendChild(el('thead', null, [head]));
    var body = el('tbody');
    var hide = state.hide !== '0' && !(state.ca && state.cb);
    pairs.forEach(function (p) {
      var m = p.metric || metric, d = p.decision;
      if (hide && (d.verdict === 'undecided' || d.verdict === 'failed' || d.verdict === 'not_comparable')) return;
      var va = values(p.a, m), vb = values(p.b, m);
      var what = p.metric ? X.metrics[p.metric] : protocolLabel(p.b.protocol) + ' · ' + loadLabel(p.b) + ' · ' + modelLabel(p.b);
      body.appendChild(el('tr', { class: 'x-' + d.verdict, 'data-verdict': d.verdict }, [
        el('td', { 'data-label': X.compare_columns[0], text: what }),
        el('td', { 'data-label': X.compare_columns[1], class: 'x-num', text: p.a.ok && va.length ? metricFormat(m, median(va)) : X.failed }),
        el('td', { 'data-label': X.compare_columns[2], class: 'x-num', text: p.b.ok && vb.length ? metricFormat(m, median(vb)) : X.failed }),
        el('td', { 'data-label': X.compare_columns[3], class: 'x-num', text: d.verdict === 'failed' ? X.none : grouped(d.ratio, 2) + '×' }),
        el('td', { 'data-label': X.compare_columns[4], text: d.verdict === 'failed' ? X.failed : decisionText(d, m) })
      ]));
    });
    table.appendChild(body);
    children.push(el('div', { class: 'table-wrap' }, [table]));
    parts.result.replaceChildren.apply(parts.result, children);
  }

  // A redraw replaces the table's buttons: the one that had the keyboard's focus (a sort
  // button, a row's A or B, "show more") gets it back, so a keyboard user stays in place.
  function render() {
    var active = document.activeElement;
    var focus = active && active.getAttribute && active.getAttribute('data-focus');
    var rows = configs.filter(matches);
    renderCompare(matches);
    renderRows(rows);
    if (focus) {
      var again = Array.prototype.find.call(document.querySelectorAll('#explorer [data-focus]'),
        function (node) { return node.getAttribute('data-focus') === focus; });
      // "show more" is gone once every row is shown: the last row's A button takes over.
      if (!again && focus === 'more') {
        var picks = document.querySelectorAll('#explorer tbody [data-focus^="a "]');
        again = picks[picks.length - 1];
      }
      if (again) again.focus();
    }
  }

  /* ---------- what the tests read ---------- */

  // Every verdict the explorer shows for two datasets, for every pair of datasets that
  // share a configuration: [a, b, key, metric, verdict, ratio] (a < b, B against A).
  function allPairs() {
    var byDataset = datasets.map(function () { return {}; });
    configs.forEach(function (c) { byDataset[c.d][c.key] = c; });
    var out = [];
    for (var a = 0; a < datasets.length; a++) {
      for (var b = a + 1; b < datasets.length; b++) {
        Object.keys(byDataset[b]).forEach(function (key) {
          var x = byDataset[a][key], y = byDataset[b][key];
          if (!x || !x.ok || !y.ok) return;
          METRICS.forEach(function (m) {
            var d = compare(values(x, m), values(y, m), { level: DATA.rule[0],
              margin: m === 'p50' || m === 'p99' ? DATA.rule[2] : DATA.rule[1], looks: 1 });
            out.push([a, b, key, m, d.verdict, d.ratio, d.runs === undefined ? null : d.runs]);
          });
        });
      }
    }
    return out;
  }

  build();
  keepLanguageLink(addressOf(state));
  render();
  // When the first table was drawn, in ms since the page's navigation began (what the
  // benchmark script reads).
  var firstTable = performance.now();
  var resized;
  window.addEventListener('resize', function () {
    clearTimeout(resized);
    resized = setTimeout(render, 150);
  });
  window.EchomarkExplore = { compare: compare, allPairs: allPairs, configs: configs,
    datasets: datasets, state: function () { return state; }, firstTable: firstTable,
    // Sets the filters of `change` and returns how long the redraw took, in ms.
    timeChange: function (change) { var t = performance.now(); setState(change); return performance.now() - t; },
    ready: true };
})();
