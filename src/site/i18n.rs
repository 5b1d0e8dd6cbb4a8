//! The English and Chinese string catalogs (`templates/i18n/*.json`), embedded in the binary
//! so a build does not depend on the working directory. Catalog text is trusted Markdown;
//! what fills its `{placeholders}` goes through [`Fill`], which escapes plain text.

use serde_json::Value;

use super::markup::{Fill, Markup};

/// One language's catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// `en` or `zh`: the folder name of this language's pages.
    pub code: &'static str,
    strings: Value,
}

/// The site's languages, English first.
pub fn catalogs() -> Vec<Catalog> {
    [
        ("en", include_str!("../../templates/i18n/en.json")),
        ("zh", include_str!("../../templates/i18n/zh.json")),
    ]
    .into_iter()
    .map(|(code, text)| Catalog {
        code,
        strings: serde_json::from_str(text).expect("the embedded catalogs are valid JSON (tested)"),
    })
    .collect()
}

impl Catalog {
    /// The catalog as plain JSON.
    pub fn json(&self) -> &Value {
        &self.strings
    }

    /// The catalog node at a dotted `key` (a group of labels, say).
    pub fn tree_value(&self, key: &str) -> Option<&Value> {
        self.node(key)
    }

    /// The whole tree, for templates (`t.overview.title`): every string is trusted Markdown.
    pub fn tree(&self) -> minijinja::Value {
        fn safe(v: &Value) -> minijinja::Value {
            match v {
                Value::String(s) => minijinja::Value::from_safe_string(s.clone()),
                Value::Array(items) => items.iter().map(safe).collect(),
                Value::Object(map) => map
                    .iter()
                    .map(|(k, v)| (k.clone(), safe(v)))
                    .collect::<std::collections::BTreeMap<_, _>>()
                    .into(),
                other => minijinja::Value::from_serialize(other),
            }
        }
        safe(&self.strings)
    }

    fn node(&self, key: &str) -> Option<&Value> {
        key.split('.')
            .try_fold(&self.strings, |v, part| v.get(part))
    }

    /// The raw string at a dotted `key`; a missing key is a bug caught by the catalog
    /// tests, so it shows up loudly rather than as an empty string.
    pub fn raw(&self, key: &str) -> &str {
        self.node(key)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("catalog {} has no key {key}", self.code))
    }

    /// The text at `key`.
    pub fn text(&self, key: &str) -> Markup {
        Markup::trusted(self.raw(key))
    }

    /// The text at `key` with `{name}` placeholders filled (plain text is escaped).
    pub fn fill(&self, key: &str, args: &[(&str, &dyn Fill)]) -> Markup {
        fill(self.raw(key), args)
    }

    /// The list at `key` (table columns), each entry filled like [`Self::fill`].
    pub fn list(&self, key: &str, args: &[(&str, &dyn Fill)]) -> Vec<Markup> {
        self.node(key)
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("catalog {} has no list {key}", self.code))
            .iter()
            .map(|v| fill(v.as_str().unwrap_or_default(), args))
            .collect()
    }
}

/// Replaces `{name}` placeholders in the trusted `template`, and chooses the word form of
/// `{name:one|other}` by the count `name` was filled with: `one` when it is 1, `other`
/// otherwise ("{n} {n:configuration fails|configurations fail}"). Chinese needs no forms.
pub fn fill(template: &str, args: &[(&str, &dyn Fill)]) -> Markup {
    let mut out = template.to_string();
    for (name, value) in args {
        let value = value.markup();
        out = plural_forms(&out, name, value.as_str() == "1");
        out = out.replace(&format!("{{{name}}}"), value.as_str());
    }
    Markup::trusted(out)
}

/// `text` with every `{name:one|other}` replaced by the form `singular` selects.
fn plural_forms(text: &str, name: &str, singular: bool) -> String {
    let open = format!("{{{name}:");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find('}') else { break };
        let (one, other) = body[..end].split_once('|').unwrap_or((&body[..end], ""));
        out.push_str(&rest[..start]);
        out.push_str(if singular { one } else { other });
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Every leaf key of a catalog tree, dotted.
pub fn keys(v: &Value) -> Vec<String> {
    fn walk(v: &Value, prefix: &str, out: &mut Vec<String>) {
        if let Value::Object(map) = v {
            for (k, child) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                walk(child, &key, out);
            }
        } else {
            out.push(prefix.to_string());
        }
    }
    let mut out = Vec::new();
    walk(v, "", &mut out);
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_of_one_takes_the_singular_form() {
        let template = "{n} {n:configuration fails|configurations fail}; {m} {m:run|runs}";
        let one = fill(
            template,
            &[("n", &Markup::trusted("1")), ("m", &Markup::trusted("0"))],
        );
        assert_eq!(one.as_str(), "1 configuration fails; 0 runs");
        let many = fill(
            template,
            &[
                ("n", &Markup::trusted("1,024")),
                ("m", &Markup::trusted("1")),
            ],
        );
        assert_eq!(many.as_str(), "1,024 configurations fail; 1 run");
    }

    /// Every string of a catalog value: a string itself, or a list's entries.
    fn strings(v: &Value) -> Vec<&str> {
        match v {
            Value::Array(items) => items.iter().filter_map(Value::as_str).collect(),
            other => other.as_str().into_iter().collect(),
        }
    }

    #[test]
    fn both_languages_have_exactly_the_same_keys() {
        let c = catalogs();
        let (en, zh) = (keys(&c[0].strings), keys(&c[1].strings));
        let missing_in_zh: Vec<_> = en.iter().filter(|k| !zh.contains(k)).collect();
        let missing_in_en: Vec<_> = zh.iter().filter(|k| !en.contains(k)).collect();
        assert!(
            missing_in_zh.is_empty() && missing_in_en.is_empty(),
            "zh lacks {missing_in_zh:?}; en lacks {missing_in_en:?}"
        );
    }

    #[test]
    fn placeholders_agree_between_languages() {
        let c = catalogs();
        // Placeholders, without the word forms `{n:one|other}` English adds to them; every
        // form must belong to a placeholder of its string.
        let holes = |s: &str| {
            let all: Vec<String> = s
                .split('{')
                .skip(1)
                .filter_map(|p| p.split_once('}').map(|(n, _)| n.to_string()))
                .collect();
            let mut v: Vec<String> = all.iter().filter(|n| !n.contains(':')).cloned().collect();
            for form in all.iter().filter_map(|n| n.split_once(':')) {
                assert!(
                    v.contains(&form.0.to_string()),
                    "{s}: {{{}:…}} has no {{{0}}}",
                    form.0
                );
            }
            v.sort();
            v
        };
        for key in keys(&c[0].strings) {
            let (en, zh) = (c[0].node(&key).unwrap(), c[1].node(&key).unwrap());
            assert_eq!(strings(en).len(), strings(zh).len(), "{key}");
            for (a, b) in strings(en).into_iter().zip(strings(zh)) {
                assert_eq!(holes(a), holes(b), "{key}");
            }
        }
    }

    #[test]
    fn every_preset_names_its_datasets_kind_in_both_languages() {
        for cat in catalogs() {
            for preset in echomark_archive::Preset::ALL {
                let key = format!("nav_kind.{}", preset.as_str());
                assert!(
                    cat.node(&key).is_some(),
                    "catalog {} has no {key}",
                    cat.code
                );
            }
        }
    }

    #[test]
    fn every_key_a_template_or_the_code_uses_exists() {
        // Every page's template (as the site registers them), the rest of the templates,
        // and the code that fills the pages.
        let pages = crate::site::pages::registry::templates().map(|(_, source)| source);
        let sources = pages.chain([
            include_str!("../../templates/pages/partials.md"),
            include_str!("../../templates/layout.html"),
            include_str!("labels.rs"),
            include_str!("pages/index.rs"),
            include_str!("pages/methodology.rs"),
            include_str!("pages/overview.rs"),
            include_str!("pages/answers.rs"),
            include_str!("pages/key_results.rs"),
            include_str!("pages/failures.rs"),
            include_str!("pages/protocol.rs"),
            include_str!("pages/dimensions.rs"),
            include_str!("pages/udp_report.rs"),
            include_str!("pages/quic_report.rs"),
            include_str!("pages/charts.rs"),
            include_str!("pages/registry.rs"),
            include_str!("render.rs"),
        ]);
        let c = catalogs();
        let all = keys(&c[0].strings);
        for src in sources {
            for (i, _) in src.match_indices("t.") {
                let rest = &src[i + 2..];
                let key: String = rest
                    .chars()
                    .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_' || *ch == '.')
                    .collect();
                let key = key.trim_end_matches('.');
                let preceded = src[..i]
                    .chars()
                    .last()
                    .is_some_and(|ch| ch.is_ascii_alphanumeric() || ch == '_');
                if key.is_empty() || preceded || !key.contains('.') {
                    continue;
                }
                assert!(
                    all.iter()
                        .any(|k| k == key || k.starts_with(&format!("{key}."))),
                    "unknown catalog key t.{key}"
                );
            }
            for (i, _) in src
                .match_indices("text(\"")
                .chain(src.match_indices("fill(\""))
                .chain(src.match_indices("list(\""))
            {
                let rest = &src[i + 6..];
                let key = &rest[..rest.find('"').unwrap_or(0)];
                assert!(all.iter().any(|k| k == key), "unknown catalog key {key}");
            }
        }
    }
}
