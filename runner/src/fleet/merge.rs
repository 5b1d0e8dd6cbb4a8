//! The exact merge: a fleet run's metrics from its generators'. Counters add, histograms
//! add bucket by bucket (HdrHistograms of the same bounds merge without loss), and every
//! percentile is read from the merged histogram, never averaged. Rates divide the summed
//! round trips by the longest generator's interval, so they are never overstated.

use echomark_archive::{ErrorCounters, Metrics};
use hdrhistogram::Histogram;

/// Why generators' metrics cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("no generator measured")]
    Empty,
    #[error("generator {index} measured {field} {theirs}, generator 0 {ours}: not one case")]
    NotOneCase {
        index: usize,
        field: &'static str,
        theirs: String,
        ours: String,
    },
    #[error("generator {index}'s latency histogram cannot be read: {reason}")]
    Histogram { index: usize, reason: String },
}

/// The fields that make the case: every generator must have measured the same.
fn identity(m: &Metrics) -> [(&'static str, String); 10] {
    [
        ("protocol", m.protocol.to_string()),
        ("address_family", format!("{:?}", m.address_family)),
        ("payload_bytes", m.payload_bytes.to_string()),
        ("clients", m.clients.to_string()),
        ("window", m.window.to_string()),
        ("io_model", m.io_model.to_string()),
        ("io_threads", m.io_threads.to_string()),
        ("backend", m.backend.to_string()),
        ("requested_seconds", m.requested_seconds.to_string()),
        ("latency_recording", m.latency_recording.to_string()),
    ]
}

/// The fleet's metrics: `parts` summed. `clients` stays the case's (per generator); the
/// fleet record says how many generators ran it.
pub fn merge(parts: &[Metrics]) -> Result<Metrics, MergeError> {
    let first = parts.first().ok_or(MergeError::Empty)?;
    let ours = identity(first);
    for (index, part) in parts.iter().enumerate().skip(1) {
        for ((field, theirs), (_, mine)) in identity(part).into_iter().zip(&ours) {
            if &theirs != mine {
                return Err(MergeError::NotOneCase {
                    index,
                    field,
                    theirs,
                    ours: mine.clone(),
                });
            }
        }
    }
    let mut m = first.clone();
    sum_counts(&mut m, parts);
    sum_resources(&mut m, parts);
    latency_of(&mut m, parts)?;
    m.error = parts
        .iter()
        .enumerate()
        .find_map(|(i, p)| p.error.as_ref().map(|e| format!("generator {i}: {e}")));
    m.ok = false;
    crate::measure::report::finish_verdict(&mut m);
    Ok(m)
}

fn sum<T: std::iter::Sum<T>>(parts: &[Metrics], f: impl Fn(&Metrics) -> T) -> T {
    parts.iter().map(f).sum()
}

/// Sums where some generators may not know: `None` when none knew.
fn sum_known(parts: &[Metrics], f: impl Fn(&Metrics) -> Option<u64>) -> Option<u64> {
    parts.iter().filter_map(f).reduce(|a, b| a + b)
}

fn sum_counts(m: &mut Metrics, parts: &[Metrics]) {
    m.messages_sent = sum(parts, |p| p.messages_sent);
    m.messages = sum(parts, |p| p.messages);
    m.messages_received = sum(parts, |p| p.messages_received);
    m.drain_messages = sum(parts, |p| p.drain_messages);
    m.warmup_messages = sum(parts, |p| p.warmup_messages);
    m.warmup_errors = sum(parts, |p| p.warmup_errors);
    m.warmup_ok = parts.iter().all(|p| p.warmup_ok);
    m.payload_roundtrip_bytes = sum(parts, |p| p.payload_roundtrip_bytes);
    m.rtt_observations = sum(parts, |p| p.rtt_observations);
    m.server_io_lanes = sum(parts, |p| p.server_io_lanes);
    m.server_messages_received = sum_known(parts, |p| p.server_messages_received);
    m.udp_late_messages = sum_known(parts, |p| p.udp_late_messages);
    m.syscalls = sum_known(parts, |p| p.syscalls);
    let mut errors = ErrorCounters::default();
    for p in parts {
        errors += p.error_counters();
    }
    let server_known = m.server_send_rejections.is_some();
    m.set_error_counters(&errors);
    if !server_known {
        m.clear_server_counters();
        m.server_messages_received = sum_known(parts, |p| p.server_messages_received);
    }
    m.elapsed_seconds = parts.iter().map(|p| p.elapsed_seconds).fold(0.0, f64::max);
    m.drain_seconds = parts.iter().map(|p| p.drain_seconds).fold(0.0, f64::max);
    if m.elapsed_seconds > 0.0 {
        m.roundtrips_per_second = m.messages as f64 / m.elapsed_seconds;
        m.payload_mib_per_second =
            m.payload_roundtrip_bytes as f64 / m.elapsed_seconds / 1_048_576.0;
    }
}

/// CPU adds up (100 % is one CPU of any generator); memory is the largest generator's;
/// socket buffers span every generator's.
fn sum_resources(m: &mut Metrics, parts: &[Metrics]) {
    let all = |f: &dyn Fn(&Metrics) -> Option<f64>| parts.iter().map(f).collect::<Option<Vec<_>>>();
    m.cpu_seconds = all(&|p| p.cpu_seconds).map(|v| v.iter().sum());
    m.cpu_elapsed_seconds =
        all(&|p| p.cpu_elapsed_seconds).map(|v| v.iter().fold(0.0, |a: f64, b| a.max(*b)));
    m.cpu_percent = match (m.cpu_seconds, m.cpu_elapsed_seconds) {
        (Some(c), Some(e)) if e > 0.0 => Some(c / e * 100.0),
        _ => None,
    };
    let max = |f: &dyn Fn(&Metrics) -> Option<u64>| parts.iter().filter_map(f).max();
    let min = |f: &dyn Fn(&Metrics) -> Option<u64>| parts.iter().filter_map(f).min();
    m.peak_rss_bytes = max(&|p| p.peak_rss_bytes);
    m.rss_start_bytes = max(&|p| p.rss_start_bytes);
    m.rss_end_bytes = max(&|p| p.rss_end_bytes);
    m.udp_client_send_buffer_min_bytes = min(&|p| p.udp_client_send_buffer_min_bytes);
    m.udp_client_send_buffer_max_bytes = max(&|p| p.udp_client_send_buffer_max_bytes);
    m.udp_client_receive_buffer_min_bytes = min(&|p| p.udp_client_receive_buffer_min_bytes);
    m.udp_client_receive_buffer_max_bytes = max(&|p| p.udp_client_receive_buffer_max_bytes);
    // Each generator's kernel counters are its own host's: they add up.
    m.kernel_udp_in_errors_delta = sum_known(parts, |p| p.kernel_udp_in_errors_delta);
    m.kernel_udp_rcvbuf_errors_delta = sum_known(parts, |p| p.kernel_udp_rcvbuf_errors_delta);
    m.kernel_udp_sndbuf_errors_delta = sum_known(parts, |p| p.kernel_udp_sndbuf_errors_delta);
    m.kernel_udp_mem_errors_delta = sum_known(parts, |p| p.kernel_udp_mem_errors_delta);
    m.kernel_udp_in_datagrams_delta = sum_known(parts, |p| p.kernel_udp_in_datagrams_delta);
    m.kernel_ip_frag_creates_delta = sum_known(parts, |p| p.kernel_ip_frag_creates_delta);
    m.kernel_ip_reasm_reqds_delta = sum_known(parts, |p| p.kernel_ip_reasm_reqds_delta);
    m.kernel_ip_reasm_oks_delta = sum_known(parts, |p| p.kernel_ip_reasm_oks_delta);
    m.kernel_ip_reasm_fails_delta = sum_known(parts, |p| p.kernel_ip_reasm_fails_delta);
    // Before/after readings of one host's counter do not add across hosts.
    m.kernel_udp_rcvbuf_errors_before = None;
    m.kernel_udp_rcvbuf_errors_after = None;
    // Where each generator's threads ran is in its own record.
    m.placement = None;
}

/// The merged histogram and every percentile read from it.
fn latency_of(m: &mut Metrics, parts: &[Metrics]) -> Result<(), MergeError> {
    let mut total: Option<Histogram<u64>> = None;
    for (index, p) in parts.iter().enumerate() {
        if let Some(text) = &p.rtt_histogram {
            let h =
                echomark_archive::histogram::decode(text).map_err(|e| MergeError::Histogram {
                    index,
                    reason: e.to_string(),
                })?;
            if let Some(t) = total.as_mut() {
                t.add(&h).map_err(|e| MergeError::Histogram {
                    index,
                    reason: format!("{e:?}"),
                })?;
            } else {
                total = Some(h);
            }
        }
    }
    let Some(h) = total else {
        m.rtt_samples = 0;
        return Ok(());
    };
    crate::measure::report::set_latency(m, &h);
    Ok(())
}

#[cfg(test)]
mod tests;
