//! The receive-buffer isolation experiment on Linux: loss is a server receive-queue
//! overflow, and every lost datagram is one kernel RcvbufErrors drop. The kernel's counters
//! are the whole machine's: the test runs alone, so no other test's UDP traffic counts in
//! them while it runs.

use std::process::Command;

use echomark_archive::Metrics;

use crate::alone;

fn once(args: &[&str]) -> Metrics {
    let out = Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
        .args([
            "once",
            "--protocol",
            "udp",
            "--clients",
            "16",
            "--io-model",
            "shared",
            "--io-threads",
            "1",
            "--warmup",
            "0",
            "--seconds",
            "0.3",
        ])
        .args(args)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn loss_equals_the_kernel_drop_count_and_a_clean_case_is_zero_everywhere() {
    let _alone = alone();
    let lossy = once(&[
        "--payload",
        "16384",
        "--window",
        "64",
        "--udp-server-recv-buffer",
        "262144",
        "--udp-timeout-ms",
        "100",
    ]);
    assert!(
        lossy.udp_lost_messages > 0,
        "the burst overflows the server queue: {lossy:?}"
    );
    assert_eq!(
        lossy.messages_sent - lossy.server_messages_received.unwrap(),
        lossy.udp_lost_messages,
        "lost at the server"
    );
    assert_eq!(
        lossy.server_messages_received,
        Some(lossy.messages_received),
        "every datagram the server got came back"
    );
    assert_eq!(lossy.content_errors + lossy.order_errors, 0);
    match lossy.kernel_udp_rcvbuf_errors_delta {
        Some(kernel) => {
            assert_eq!(
                kernel, lossy.udp_lost_messages,
                "one kernel drop per lost datagram"
            );
            // The counter's own before/after readings give the same delta.
            let (before, after) = (
                lossy.kernel_udp_rcvbuf_errors_before.unwrap(),
                lossy.kernel_udp_rcvbuf_errors_after.unwrap(),
            );
            assert_eq!(after - before, kernel, "{before} → {after}");
            assert!(lossy.kernel_ip_reasm_reqds_delta.is_some());
        }
        None => echomark::skip::because("no /proc/net/snmp here"),
    }
    let clean = once(&["--payload", "1472", "--window", "1"]);
    assert!(clean.ok, "{clean:?}");
    assert_eq!(
        (clean.udp_lost_messages, clean.messages_sent),
        (0, clean.messages_received)
    );
    assert_eq!(clean.server_messages_received, Some(clean.messages_sent));
    if let Some(kernel) = clean.kernel_udp_rcvbuf_errors_delta {
        assert_eq!(kernel, 0);
    }
}
