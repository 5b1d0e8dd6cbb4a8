//! Unit tests of the module above.
use echomark_archive::IoModel;

use super::*;
use crate::model::Run;
use crate::site::pages::fixtures::{dataset, english, runs, Analysed};

/// Three runs of 16 KiB echoes with the server's receive buffer at `buffer`, each losing
/// `lost` datagrams (counted by the kernel too).
fn isolation(buffer: u64, lost: u64) -> Vec<Run> {
    runs(Protocol::Udp, IoModel::Shared, 1, 10_000.0)
        .into_iter()
        .map(|mut r| {
            r.key.payload_bytes = 16384;
            r.key.udp_server_recv_buffer = Some(buffer);
            r.udp_server_receive_buffer_bytes = Some(2 * buffer);
            r.udp_lost_messages = lost;
            r.kernel_udp_rcvbuf_errors_delta = Some(lost);
            r.server_messages_received = Some(1000 - lost);
            r.messages_received = Some(1000 - lost);
            r.passed = lost == 0;
            r.command = format!("/x/echomark-runner once --buffer {buffer}");
            r
        })
        .collect()
}

#[test]
fn the_report_carries_the_loss_of_every_isolation_case() {
    let mut measured = runs(Protocol::Udp, IoModel::Shared, 1, 100_000.0);
    measured.extend(isolation(1 << 21, 292));
    measured.extend(isolation(1 << 22, 0));
    let site = Analysed::of(vec![dataset("udp-buffers", "epyc", measured)]);
    let cat = english();
    let page = model(&cat, &site.views()).expect("a dataset measured UDP");
    let rows: Vec<Vec<&str>> = page
        .isolation
        .rows
        .iter()
        .map(|r| r.iter().map(Markup::as_str).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    // Dataset, payload, clients, window, buffer, budget, loss per run, same, invariants.
    assert_eq!(rows[0][0], "udp-buffers");
    assert_eq!(rows[0][1], "16,384");
    assert_eq!(rows[0][6], "292 / 292 / 292");
    assert_eq!(rows[0][7], "yes");
    assert_eq!(rows[0][8], "all hold");
    assert_eq!(rows[1][6], "0 / 0 / 0");
    assert!(!page.isolation_intro.is_empty());
    // The lossy case is the reproduction, the larger buffer its fix.
    let failed = page.failed_command.expect("the lossy run's command");
    assert!(failed.as_str().contains("--buffer 2097152"), "{failed:?}");
    let passed = page.passed_command.expect("the passing partner's command");
    assert!(passed.as_str().contains("--buffer 4194304"), "{passed:?}");
    assert!(page.fix.is_some() && page.overflow_callout.is_some());
    // The throughput table: the one configuration at the report's load.
    assert_eq!(page.throughput.rows.len(), 1);
    assert_eq!(page.conditions.rows.len(), 1);
}

#[test]
fn a_broken_invariant_names_its_run_and_no_udp_means_no_report() {
    let mut lossy = isolation(1 << 21, 292);
    lossy[1].kernel_udp_rcvbuf_errors_delta = Some(300);
    let site = Analysed::of(vec![dataset("udp-broken", "epyc", lossy)]);
    let cat = english();
    let page = model(&cat, &site.views()).expect("a dataset measured UDP");
    let invariants = page.isolation.rows[0][8].as_str();
    assert!(invariants.contains("300"), "{invariants}");
    assert!(invariants.starts_with("run 2:"), "{invariants}");

    let tcp = runs(Protocol::Tcp, IoModel::Shared, 1, 100_000.0);
    let site = Analysed::of(vec![dataset("tcp-only", "epyc", tcp)]);
    assert!(model(&cat, &site.views()).is_none());
}
