//! The committed site's QUIC report: every QUIC protocol of the committed archives is set
//! against its baselines, the handshake table appears with the connection-per-message runs,
//! both languages have it, and the UDP report points to it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::common::committed_datasets;

fn committed(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The QUIC protocols the committed archives measured.
fn measured_quic_protocols() -> BTreeSet<echomark_archive::Protocol> {
    committed_datasets()
        .iter()
        .flat_map(|d| d.runs.iter().map(|r| r.key.protocol))
        .filter(|p| p.is_quic())
        .collect()
}

#[test]
fn the_quic_report_sets_every_measured_quic_protocol_against_its_baselines() {
    let en = committed("site/en/quic-report.md");
    let zh = committed("site/zh/quic-report.md");
    let labels: serde_json::Value =
        serde_json::from_str(&committed("templates/i18n/en.json")).unwrap();
    let protocols = measured_quic_protocols();
    assert!(!protocols.is_empty());
    for p in &protocols {
        let label = labels["protocol"][p.as_str()].as_str().expect("a label");
        let linked = format!("/{}.md) | {label} |", p.as_str());
        assert!(en.contains(&linked), "{p}: no comparison row in\n{en}");
    }
    let per_connection = protocols.contains(&echomark_archive::Protocol::Quic0rtt);
    assert_eq!(en.contains("## A connection per message"), per_connection);
    assert_eq!(zh.contains("## 每条消息一个连接"), per_connection);
    assert!(zh.starts_with("# QUIC 报告"), "{zh}");
    assert!(committed("site/en/udp-report.md").contains("[QUIC report](quic-report.md)"));
    assert!(committed("site/zh/udp-report.md").contains("[QUIC 报告](quic-report.md)"));
}

/// The committed archives' transport axes and receive-buffer pressure cases, each with a
/// section of its own in both languages, and "not measured yet" only for what none measured.
#[test]
fn the_quic_report_shows_each_transport_setting_and_the_pressure_runs_the_archives_hold() {
    let datasets = committed_datasets();
    let quic_runs = || {
        datasets
            .iter()
            .flat_map(|d| &d.runs)
            .filter(|r| r.key.protocol.is_quic())
    };
    let varied = quic_runs().any(|r| r.key.quic_transport.is_some());
    let pressed = quic_runs().any(|r| r.key.udp_server_recv_buffer.is_some());
    assert!(varied && pressed, "the committed datasets measure both");
    let en = committed("site/en/quic-report.md");
    let zh = committed("site/zh/quic-report.md");
    assert!(en.contains("## Transport settings") && zh.contains("## 传输参数"));
    assert!(
        en.contains("## The receive buffer under pressure") && zh.contains("## 接收缓冲区吃紧时")
    );
    assert!(!en.contains("## Not measured yet") && !zh.contains("## 尚未测量"));
    // Every varied setting has its row, named as the pages name it.
    let catalog = |lang: &str| {
        echomark::site::i18n::catalogs()
            .into_iter()
            .find(|c| c.code == lang)
            .expect("a catalog")
    };
    let (en_cat, zh_cat) = (catalog("en"), catalog("zh"));
    for t in quic_runs().filter_map(|r| r.key.quic_transport) {
        let named = echomark::site::labels::quic_transport(&en_cat, &t);
        assert!(
            en.contains(&format!("| {} |", named.as_str())),
            "{t}: no row in\n{en}"
        );
        let named = echomark::site::labels::quic_transport(&zh_cat, &t);
        assert!(
            zh.contains(&format!("| {} |", named.as_str())),
            "{t}: no row"
        );
    }
    // The stream protocols pass under pressure, by retransmitting; UDP's runs that lost fail.
    let row = |protocol: &str, buffer: &str| {
        en.lines()
            .find(|l| {
                l.contains(&format!("| {protocol} |")) && l.contains(&format!("| {buffer} |"))
            })
            .unwrap_or_else(|| panic!("no {protocol} {buffer} row"))
            .to_string()
    };
    assert!(
        row("QUIC", "8 KiB").contains("| 5 / 5 |"),
        "the stream protocol passes"
    );
    assert!(row("UDP", "8 KiB").contains("| 0 / 5 |"));
}
