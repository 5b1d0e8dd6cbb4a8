//! `echomark-runner soak`: the sustained test passes for UDP and TCP, and fails loudly when
//! the server misbehaves.

use std::process::Command;

fn soak(args: &[&str]) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_echomark-runner"))
        .arg("soak")
        .args(args)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), report)
}

#[test]
fn a_short_soak_passes_for_udp_and_tcp() {
    for protocol in ["udp", "tcp"] {
        let (code, r) = soak(&["--seconds", "1.2", "--protocol", protocol]);
        assert_eq!(code, 0, "{protocol}: {r}");
        assert_eq!(r["passed"], true);
        let rounds = r["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 6, "3 topologies × 2 rounds, each a restart");
        for round in rounds {
            assert_eq!(
                round["messages_sent"], round["server_messages_received"],
                "{round}"
            );
            assert_eq!(
                round["messages_sent"], round["messages_received"],
                "{round}"
            );
            assert_eq!(round["errors"], 0);
            assert!(
                round["threads_left"].as_i64().unwrap() <= 0
                    && round["fds_left"].as_i64().unwrap() <= 0,
                "{round}"
            );
        }
        assert!(r["verified_echoes"].as_u64().unwrap() > 1000);
    }
}

/// The server drops every 97th message, so a round that completes fewer (a round a busy
/// machine starves fails for that, and says so) cannot show a loss: the test asks that every
/// failed round says why, and that the rounds that got that far name the loss.
#[test]
fn a_soak_with_a_dropping_server_fails_and_says_why() {
    let (code, r) = soak(&[
        "--seconds",
        "1.2",
        "--rounds",
        "1",
        "--protocol",
        "udp",
        "--inject-fault",
        "drop",
    ]);
    assert_eq!(code, 1);
    assert_eq!(r["passed"], false);
    let rounds = r["rounds"].as_array().unwrap();
    let mut named = 0;
    for round in rounds {
        let failures = round["failures"].to_string();
        assert!(
            round["passed"] == true || failures != "[]",
            "a failed round says why: {round}"
        );
        if round["messages_sent"].as_u64().unwrap() >= 97 {
            assert!(
                failures.contains("udp_lost_messages") && failures.contains("came back"),
                "{round}"
            );
            named += 1;
        }
    }
    assert!(named > 0, "no round got to its first drop: {r}");
}
