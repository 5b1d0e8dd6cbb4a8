//! The committed site's QUIC report: every QUIC protocol of the committed archives is set
//! against its baselines, the handshake table appears with the connection-per-message runs,
//! both languages have it, and the UDP report points to it.

use std::collections::BTreeSet;
use std::path::Path;

fn committed(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The QUIC protocols the committed archives measured.
fn measured_quic_protocols() -> BTreeSet<echomark_archive::Protocol> {
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results");
    let datasets = echomark::read::load(&[raw]).expect("the committed archives read");
    datasets
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
