//! How a comparison is described in plain text: configuration labels, changes, values and
//! histogram intervals (shared by the terminal, Markdown and site reports), and what each
//! side is (dataset, host, build).

use echomark_archive::{AddressFamily, CaseKey, Metric};

use super::{higher_is_better, MetricChange, SideSummary};
use crate::format;
use crate::model::{Dataset, HostInfo};

/// A configuration in one line of plain text: `tcp 1,024 B, 16 × 1, shared 1, tokio` (`tcp
/// 1,024 B, 4 generators × 16 × 1, …` for a fleet's).
pub fn label(k: &CaseKey, af: AddressFamily) -> String {
    let mut out = format!(
        "{} {} B, {}, {} {}, {}",
        k.protocol,
        format::count(k.payload_bytes),
        k.clients_by_window(),
        k.io_model,
        k.io_threads,
        k.backend
    );
    if k.implementation != echomark_archive::IMPLEMENTATION {
        out.push_str(&format!(" ({})", k.implementation));
    }
    if k.handler_work > 0 {
        out.push_str(&format!(", work {}", k.handler_work));
    }
    if let Some(buffer) = k.udp_server_recv_buffer {
        out.push_str(&format!(", server buffer {}", format::buffer_size(buffer)));
    }
    if let Some(load) = k.load {
        out.push_str(&format!(
            ", open loop {} msg/s {}",
            format::count(load.rate),
            load.arrival
        ));
    }
    if af == AddressFamily::Ipv6 {
        out.push_str(", IPv6");
    }
    out
}

/// A histogram interval in µs: `12.30–12.45`.
pub fn tail_text((low, high): (f64, f64)) -> String {
    format!(
        "{}–{}",
        format::two_decimals(low),
        format::two_decimals(high)
    )
}

/// A signed relative change with one decimal: `+3.2%`, `-11.0%`.
pub fn signed_percent(change: f64) -> String {
    let text = format::grouped(change * 100.0, 1);
    if change > 0.0 {
        format!("+{text}%")
    } else {
        format!("{text}%")
    }
}

/// A metric's value as the site shows it: round trips/s grouped, latency in µs.
pub fn value_text(metric: Metric, value: f64) -> String {
    if higher_is_better(metric) {
        format::throughput(value)
    } else {
        format!("{} µs", format::latency(value))
    }
}

/// `-11.0% [-13.1%, -9.2%]`: the change and its interval.
pub fn change_text(m: &MetricChange) -> String {
    match m.interval {
        Some((low, high)) => format!(
            "{} [{}, {}]",
            signed_percent(m.change),
            signed_percent(low),
            signed_percent(high)
        ),
        None => signed_percent(m.change),
    }
}

pub(super) fn summary(d: &Dataset) -> SideSummary {
    let mut builds: Vec<String> = d
        .files
        .iter()
        .filter_map(|f| {
            f.runner_sha256
                .as_deref()
                .or(f.executable_sha256.as_deref())
        })
        .map(|h| format::short_hash(h).to_string())
        .collect();
    builds.sort();
    builds.dedup();
    let mut revisions: Vec<String> = d
        .files
        .iter()
        .filter_map(|f| {
            let head = format::short_hash(f.git_head.as_deref()?).to_string();
            Some(if f.dirty {
                format!("{head}+dirty")
            } else {
                head
            })
        })
        .collect();
    revisions.sort();
    revisions.dedup();
    let last = d
        .files
        .iter()
        .filter_map(|f| f.recorded_at_utc.as_deref())
        .max();
    SideSummary {
        dataset: d.name.clone(),
        files: d.files.len(),
        runs: d.runs.len(),
        host: d.host().cloned().unwrap_or_default(),
        builds,
        revisions,
        first_recorded_utc: d.recorded_at().map(str::to_string),
        last_recorded_utc: last.map(str::to_string),
    }
}

/// `field: base → new` for every host field recorded on both sides that differs.
pub(super) fn host_differences(base: &HostInfo, new: &HostInfo) -> Vec<String> {
    let as_map = |h: &HostInfo| match serde_json::to_value(h) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (b, n) = (as_map(base), as_map(new));
    let mut fields: Vec<&String> = b.keys().chain(n.keys()).collect();
    fields.sort();
    fields.dedup();
    let shown = |v: Option<&serde_json::Value>| match v {
        None => "not recorded".to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    fields
        .into_iter()
        // A field recorded on one side only (an older archive) says nothing about the host.
        .filter(|f| matches!((b.get(*f), n.get(*f)), (Some(x), Some(y)) if x != y))
        .map(|f| format!("{f}: {} → {}", shown(b.get(f)), shown(n.get(f))))
        .collect()
}
