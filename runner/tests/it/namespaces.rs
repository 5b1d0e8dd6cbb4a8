//! Client and server in two network namespaces joined by a veth pair, which each test
//! creates and removes: `serve` and `once --target` across them, and a matrix in one
//! measuring a server in the other.
use crate::common::*;
use echomark_archive::Metrics;
use serde_json::Value;

#[test]
fn serve_and_once_target_across_two_network_namespaces() {
    let Some(ns) = Namespaces::or_skip('a') else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (protocol, listen) in [
        ("tcp", "10.213.0.1:0"),
        ("udp", "10.213.0.1:0"),
        ("tcp", "[fd00:e3a::1]:0"),
    ] {
        let mut serve = ns.exec(&ns.server);
        serve.args(["serve", "--protocol", protocol, "--listen", listen]);
        // The listening line, saved, describes the server's machine for the client.
        let machine = dir.path().join("server-machine.json");
        let server = Server::start(serve, |line| {
            std::fs::write(&machine, line).unwrap();
            listening_address(line)
        });
        let machine = machine.display().to_string();
        let out = ns
            .exec(&ns.client)
            .args([
                "once",
                "--protocol",
                protocol,
                "--target",
                &server.address,
                "--seconds",
                "0.3",
                "--warmup",
                "0.1",
                "--clients",
                "2",
                "--window",
                "2",
                "--server-machine",
                &machine,
            ])
            .output()
            .expect("once starts");
        let m: Metrics = serde_json::from_slice(&out.stdout).expect("metrics");
        assert!(m.ok, "{protocol} {listen}: {:?}", m.error);
        let target = m.target.as_ref().unwrap();
        assert_eq!(target.address, server.address);
        // The path is the client's end of the veth pair, not loopback.
        let path = target.path.as_ref().expect("the path is described");
        assert_eq!(path.kind, echomark_archive::PathKind::Veth, "{path:?}");
        assert_eq!(path.interface, ns.client_veth);
        assert_eq!(path.mtu, Some(1500));
        let client_ip = if listen.starts_with('[') {
            "fd00:e3a::2"
        } else {
            "10.213.0.2"
        };
        assert_eq!(path.client_address, client_ip);
        let described = target
            .server_machine
            .as_ref()
            .expect("the server's machine");
        assert!(described.logical_cpus > 0 && !described.cpu.is_empty());
        // The client's own namespace cannot reach the server through loopback: the echo
        // crossed the veth pair.
        let sent = m.messages_sent;
        let report = server.stop();
        assert_eq!(report["measured_messages_received"].as_u64(), Some(sent));
    }
}

#[test]
fn a_matrix_in_one_namespace_measures_a_server_in_another() {
    let Some(ns) = Namespaces::or_skip('b') else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("veth.json");
    let command = format!(
        "ip netns exec {} {RUNNER} serve --protocol {{protocol}} --listen 10.213.0.1:{{port}}",
        ns.server
    );
    let args = matrix_args(
        &out,
        &command,
        &[
            "--protocols",
            "tcp,udp",
            "--windows",
            "2",
            "--repetitions",
            "1",
            "--server-name",
            "echomark-serve",
            "--server-host",
            "10.213.0.1",
        ],
    );
    let o = ns
        .exec(&ns.client)
        .args(&args)
        .output()
        .expect("matrix starts");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let a: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(a["settings"]["external_server"]["machine"]["cpu"].is_string());
    let results = a["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["metrics"]["ok"], true, "{r}");
        assert_eq!(r["server"]["separate_network_namespace"], true, "{r}");
        let path = &r["metrics"]["target"]["path"];
        assert_eq!(path["kind"], "veth", "{path}");
        assert_eq!(path["interface"], ns.client_veth.as_str());
    }
}
