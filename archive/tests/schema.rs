//! The JSON Schema in `schema/archive.schema.json` and the Rust types are checked against
//! each other in both directions, so neither can change without the other:
//!
//! * types → schema: a maximal archive (every optional field present, every list non-empty)
//!   serialised from the types is valid under the schema;
//! * schema → types: every object in the schema lists exactly the properties that the types
//!   write at that place, and every field the types cannot do without is `required` there.

use echomark_archive::*;
use serde_json::{json, Value};

fn sample_metrics() -> Metrics {
    Metrics {
        fleet: Some(Box::new(sample_fleet())),
        ..one_generator_metrics()
    }
}

/// A fleet record with every field present (its generator's metrics are one process's).
fn sample_fleet() -> FleetRecord {
    FleetRecord {
        generator_count: 1,
        coordinator_host: "gen-0".into(),
        start_unix_ns: 1_800_000_000_000_000_000,
        end_unix_ns: 1_800_000_001_000_000_000,
        release_lead_ms: 250.0,
        start_skew_median_us: 12.5,
        start_skew_worst_us: 30.0,
        start_skew_uncertainty_us: 40.0,
        generators: vec![GeneratorRecord {
            index: 0,
            host: "gen-0".into(),
            logical_cpus: 2,
            clock: ClockRecord {
                offset_us: -3.5,
                uncertainty_us: 40.0,
                delay_us: 80.0,
                exchanges: 16,
                offset_end_us: -3.0,
                uncertainty_end_us: 35.0,
                drift_ppm: 0.5,
                drift_uncertainty_ppm: 75.0,
            },
            start_skew_us: 12.5,
            start_skew_uncertainty_us: 40.0,
            metrics: one_generator_metrics(),
        }],
    }
}

fn one_generator_metrics() -> Metrics {
    Metrics {
        schema_version: 1,
        backend: "tokio".into(),
        protocol: Protocol::Udp,
        address_family: AddressFamily::Ipv4,
        payload_bytes: 1024,
        clients: 16,
        window: 1,
        io_model: IoModel::Shared,
        handler_work: 0,
        io_contexts: 1,
        io_threads: 1,
        server_io_lanes: 1,
        requested_seconds: 1.0,
        warmup_seconds: 0.25,
        elapsed_seconds: 1.0,
        messages_sent: 10,
        messages: 10,
        payload_roundtrip_bytes: 20_480,
        roundtrips_per_second: 10.0,
        payload_mib_per_second: 0.02,
        rtt_samples: 10,
        rtt_observations: 10,
        rtt_p50_us: 10.0,
        rtt_p95_us: 11.0,
        rtt_p99_us: 12.0,
        warmup_ok: true,
        udp_send_buffer_requested_bytes: Some(65_536),
        udp_receive_buffer_requested_bytes: Some(4 << 20),
        udp_server_send_buffer_bytes: Some(131_072),
        udp_server_receive_buffer_bytes: Some(8 << 20),
        udp_client_send_buffer_min_bytes: Some(131_072),
        udp_client_send_buffer_max_bytes: Some(131_072),
        udp_client_receive_buffer_min_bytes: Some(8 << 20),
        udp_client_receive_buffer_max_bytes: Some(8 << 20),
        cpu_seconds: Some(0.9),
        cpu_elapsed_seconds: Some(1.0),
        cpu_percent: Some(90.0),
        peak_rss_bytes: Some(1 << 20),
        ok: true,
        error: Some("x".into()),
        messages_received: 10,
        server_messages_received: Some(10),
        server_send_rejections: Some(0),
        server_send_completion_errors: Some(0),
        rtt_method: "hdrhistogram".into(),
        latency_recording: true,
        rtt_histogram: Some("HISTFAAA".into()),
        rss_start_bytes: Some(1),
        rss_end_bytes: Some(2),
        udp_timeout_ms: Some(250),
        udp_server_receive_buffer_requested_bytes: Some(4 << 20),
        net_core_rmem_max: Some(1),
        net_core_wmem_max: Some(1),
        net_core_rmem_default: Some(1),
        kernel_udp_in_errors_delta: Some(0),
        kernel_udp_rcvbuf_errors_delta: Some(0),
        kernel_udp_sndbuf_errors_delta: Some(0),
        kernel_udp_mem_errors_delta: Some(0),
        kernel_udp_in_datagrams_delta: Some(10),
        kernel_udp_rcvbuf_errors_before: Some(152_304),
        kernel_udp_rcvbuf_errors_after: Some(153_071),
        kernel_ip_frag_creates_delta: Some(0),
        kernel_ip_reasm_reqds_delta: Some(0),
        kernel_ip_reasm_oks_delta: Some(0),
        kernel_ip_reasm_fails_delta: Some(0),
        tls_version: Some("TLSv1_3".into()),
        tls_cipher_suite: Some("TLS13_AES_256_GCM_SHA384".into()),
        io_driver: Some("io_uring".into()),
        ring: Some(echomark_archive::RingCounters {
            enters: 100,
            submissions: 200,
            completions: 400,
            multishot_receives: 199,
            ring_buffers_used: 199,
            ring_buffers_exhausted: 0,
            receives_armed: 2,
            registered_files: 2,
            other_syscalls: 0,
            busy_polls: 1,
            zero_copy_sends: 99,
        }),
        kernel_io_uring_disabled: Some(0),
        open_loop: Some(OpenLoopMetrics {
            offered_rate: 10,
            arrival: Arrival::Poisson,
            seed: 1,
            scheduled_messages: 10,
            achieved_rate: 10.0,
            saturated: false,
            late_sends: 0,
            unsent_messages: 0,
            schedule_lag_p50_us: 1.0,
            schedule_lag_p99_us: 2.0,
            schedule_lag_p999_us: 3.0,
            schedule_lag_max_us: 4.0,
            schedule_lag_histogram: Some("HISTFAAA".into()),
            service_p50_us: 9.0,
            service_p99_us: 11.0,
            service_p999_us: 12.0,
            service_max_us: 13.0,
            service_mean_us: 9.5,
            service_histogram: Some("HISTFAAA".into()),
            mean_in_system: 0.001,
            little_window_seconds: 1.0,
            clock: "CLOCK_MONOTONIC".into(),
            timer: "timerfd".into(),
            spin_us: 1000,
        }),
        target: Some(TargetInfo {
            address: "127.0.0.1:9".into(),
            framing: Some(StreamFraming::Raw),
            tls_verification: Some(TlsVerification::Insecure),
            http_pipelined: Some(false),
            connections: Some(64),
            path: Some(NetworkPath {
                kind: PathKind::Veth,
                interface: "veth-cli".into(),
                mtu: Some(1500),
                client_address: "10.213.0.2".into(),
            }),
            server_machine: Some(sample_host()),
            alpn: Some("echomark".into()),
        }),
        placement: Some(Placement {
            client_cpus: "0,2-3".into(),
            client_pinned: true,
            server_in_process: false,
            server_cpus: Some("1".into()),
        }),
        udp_batch: Some(16),
        udp_gso: true,
        syscalls: Some(123_456),
        udp_late_messages: Some(3),
        quic: Some(echomark_archive::QuicCounters {
            connections: 2,
            sent_packets: 100,
            lost_packets: 1,
            lost_bytes: 1200,
            congestion_events: 1,
            udp_tx_datagrams: 100,
            udp_tx_ios: 40,
            udp_rx_datagrams: 98,
            smoothed_rtt_us: 120.5,
            cwnd_bytes: 14720.0,
            current_mtu: 1452,
            datagram_size_limit: Some(1162),
            datagrams_handed: Some(50),
            datagram_frames_sent: Some(49),
            handshakes: Some(900),
            zero_rtt_accepted: Some(880),
            server_connections: Some(900),
            transport: Some(sample_transport()),
        }),
        ..Metrics::default()
    }
}

/// A QUIC transport unlike quinn's defaults in every setting.
fn sample_transport() -> QuicTransport {
    QuicTransport {
        congestion: Congestion::Bbr,
        gso: false,
        initial_mtu: 1452,
        stream_window: 65_536,
        connection_window: 1 << 20,
    }
}

/// A host with every field present.
fn sample_host() -> Host {
    Host {
        system: "Linux".into(),
        release: "6.18".into(),
        machine: "x86_64".into(),
        cpu: "AMD EPYC".into(),
        logical_cpus: 2,
        physical_cpus: Some(1),
        memory_bytes: Some(1 << 30),
        os_name: Some("Debian GNU/Linux".into()),
        os_version: Some("12".into()),
        cpu_signature: Some("family 25, model 1, stepping 1".into()),
        smt_active: Some(false),
        name: Some("lab-epyc".into()),
        cpu_governor: Some("performance".into()),
    }
}

fn sample() -> Archive {
    let hash = "0".repeat(64);
    let case = ExplicitCase {
        protocol: Protocol::Udp,
        payload_bytes: 1024,
        clients: 16,
        window: 1,
        io_model: IoModel::Shared,
        io_threads: 1,
        handler_work: 0,
        udp_server_recv_buffer: Some(1 << 20),
    };
    let entry = Entry {
        run: RunId {
            case: CaseKey {
                load: Some(OfferedLoad {
                    rate: 10,
                    arrival: Arrival::Poisson,
                }),
                quic_transport: Some(sample_transport()),
                generators: Some(4),
                ..case.case_key("tokio".into())
            },
            repetition: 1,
        },
        address_family: AddressFamily::Ipv4,
        command: vec!["echomark-runner".into(), "once".into()],
        returncode: Some(0),
        stderr: String::new(),
        metrics: Some(sample_metrics()),
        stdout: Some("{".into()),
        error: Some("benchmark failed with exit code 1".into()),
        order: 0,
        started_at_utc: "2026-12-01T00:00:00.000000+00:00".into(),
        wall_seconds: 1.5,
        server: Some(ServerProcess {
            left_behind: 1,
            cpus: Some("1".into()),
            pinned: true,
            command: "nginx-echo 9".into(),
            ready_seconds: Some(0.1),
            exit_code: Some(0),
            signal: Some(15),
            exited_early: false,
            killed: false,
            cpu_seconds: Some(0.5),
            peak_rss_bytes: Some(1 << 20),
            stderr_tail: String::new(),
            syscalls: Some(98_765),
            separate_network_namespace: Some(true),
            ring: Some(echomark_archive::RingCounters {
                enters: 10,
                submissions: 12,
                completions: 20,
                multishot_receives: 9,
                ring_buffers_used: 9,
                ring_buffers_exhausted: 1,
                receives_armed: 2,
                registered_files: 1,
                other_syscalls: 4,
                busy_polls: 30,
                zero_copy_sends: 5,
            }),
        }),
    };
    let round = SoakRound {
        io_model: IoModel::Sharded,
        io_threads: 4,
        round: 1,
        seconds: 1.0,
        messages_sent: 1,
        server_messages_received: 1,
        messages_received: 1,
        verified_echoes: 1,
        errors: 0,
        threads_left: 0,
        fds_left: 0,
        passed: true,
        failures: vec!["none".into()],
    };
    Archive {
        schema_version: ARCHIVE_SCHEMA_VERSION,
        echomark: EchomarkInfo {
            tool: TOOL_NAME.into(),
            tool_version: "0.1.0".into(),
            format_version: FORMAT_VERSION,
            source_hash_rule: "rule".into(),
        },
        recorded_at_utc: "2026-12-01T00:00:00.000000+00:00".into(),
        backend: "tokio".into(),
        git_head: Some("abc".into()),
        git_status: Some(String::new()),
        source_sha256: hash.clone(),
        executable_sha256: hash.clone(),
        runner_sha256: hash,
        host: sample_host(),
        settings: Settings {
            seconds: 1.0,
            warmup: 0.25,
            repetitions: 3,
            payloads: vec![1024],
            profiles: vec![TrafficProfile {
                clients: 16,
                window: 1,
            }],
            udp_throughput_window: Some(1),
            io_profiles: vec![IoProfile {
                io_model: IoModel::Shared,
                io_threads: 1,
                handler_work: 0,
            }],
            protocols: vec![Protocol::Udp],
            execution_modes: None,
            address_family: AddressFamily::Ipv4,
            preset: Some(Preset::UdpBuffers),
            shuffle_seed: Some(7),
            case_timeout_seconds: 31.25,
            udp_timeout_ms: 250,
            udp_send_buffer: Some(65_536),
            udp_recv_buffer: Some(4 << 20),
            udp_server_recv_buffer: Some(4 << 20),
            keep_going: true,
            shard: Some(echomark_archive::Shard { index: 2, count: 3 }),
            cases: Some(vec![case]),
            soak_seconds: Some(60.0),
            open_loop: Some(OpenLoopPlan {
                rates: vec![1000],
                sweep_percent: vec![50, 100],
                arrival: Arrival::Poisson,
                seed: 3,
            }),
            unsupported_io_profiles: vec![UnsupportedProfile {
                io_model: IoModel::Shared,
                io_threads: 4,
                reason: "thread-per-core".into(),
            }],
            external_server: Some(ExternalServer {
                name: "nginx".into(),
                command: "nginx-echo {port}".into(),
                host: "127.0.0.1".into(),
                framing: StreamFraming::Raw,
                tls_verification: Some(TlsVerification::Ca),
                tls_ca: Some("ca.pem".into()),
                machine: Some(sample_host()),
                version_command: Some("nginx -v".into()),
                ready_timeout_ms: Some(30_000),
                verify_idle_ms: Some(500),
                identity: Some(echomark_archive::ServerIdentity {
                    version_command: Some("nginx -v".into()),
                    version: Some("nginx version: nginx/1.22.1".into()),
                    executable: Some("/usr/sbin/nginx".into()),
                    executable_sha256: Some("ab".repeat(32)),
                    package: Some("nginx-core 1.22.1-9".into()),
                }),
                address: Some("echomark-server:7000".into()),
            }),
            client_cpus: Some("0".into()),
            server_cpus: Some("1".into()),
            udp_batch: Some(16),
            udp_gso: true,
            count_syscalls: true,
            quic_axes: QuicAxes {
                congestion: vec![Congestion::Cubic, Congestion::Bbr],
                gso: vec![true, false],
                initial_mtu: vec![1200, 1452],
                stream_window: vec![65_536],
                connection_window: vec![1 << 20],
            },
            until_decided: Some(echomark_archive::until_decided::UntilDecided {
                level: 0.95,
                margin: 0.05,
                looks: vec![3, 5, 8],
                budget_seconds: Some(600.0),
            }),
            fleet: Some(FleetPlan {
                size: 4,
                generators: vec![1, 2, 4],
                listen: "0.0.0.0:7700".into(),
                launcher: Some("scripts/fleet-in-namespaces 4".into()),
            }),
        },
        results: vec![entry],
        complete: true,
        failed_measurements: 1,
        soak: vec![SoakRecord {
            protocol: Protocol::Udp,
            seconds: 60.0,
            command: vec!["echomark-runner".into(), "soak".into()],
            returncode: Some(0),
            passed: true,
            report: Some(SoakReport {
                protocol: Protocol::Udp,
                seconds: 60.0,
                clients: 16,
                window: 4,
                payload_bytes: 1024,
                rounds_per_topology: 2,
                verified_echoes: 1,
                elapsed_seconds: 60.5,
                passed: true,
                rounds: vec![round],
            }),
            stderr: String::new(),
        }],
        toolchain: Some(Toolchain {
            rustc: "rustc 1.95.0".into(),
            target: "x86_64-unknown-linux-gnu".into(),
            profile: "release".into(),
            opt_level: "3".into(),
            debug_info: "line-tables-only".into(),
            dependencies: [("tokio".to_string(), "1.48.0".to_string())].into(),
        }),
        verification: vec![VerificationRecord {
            protocol: Protocol::Udp,
            passed: true,
            checks: vec![VerificationCheck {
                name: "connect".into(),
                outcome: "passed".into(),
                detail: "127.0.0.1:9".into(),
            }],
        }],
        until_decided: Some(echomark_archive::until_decided::UntilDecidedRecord {
            spent_seconds: 12.5,
            budget_spent: false,
            comparisons: vec![echomark_archive::until_decided::Stopped {
                configuration: "tcp 1024 B 1×1".into(),
                sides: vec!["tokio".into(), "monoio".into()],
                repetitions: 5,
                stop: echomark_archive::until_decided::Stop::Decided,
            }],
        }),
    }
}

fn schema() -> Value {
    serde_json::from_str(ARCHIVE_JSON_SCHEMA).expect("the schema is JSON")
}

/// Follows a local `$ref`.
fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let path = r.trim_start_matches("#/");
            path.split('/').fold(root, |v, part| &v[part])
        }
        None => node,
    }
}

/// Walks the schema beside a serialised value and lists where they disagree.
fn compare(root: &Value, node: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let node = resolve(root, node);
    if let (Some(props), Some(object)) = (
        node.get("properties").and_then(Value::as_object),
        value.as_object(),
    ) {
        for key in props.keys().filter(|k| !object.contains_key(*k)) {
            out.push(format!(
                "{at}.{key}: in the schema, not written by the types"
            ));
        }
        for key in object.keys().filter(|k| !props.contains_key(*k)) {
            out.push(format!(
                "{at}.{key}: written by the types, not in the schema"
            ));
        }
        for (key, child) in object {
            if let Some(schema) = props.get(key) {
                compare(root, schema, child, &format!("{at}.{key}"), out);
            }
        }
    }
    if let (Some(items), Some(array)) = (node.get("items"), value.as_array()) {
        for (i, child) in array.iter().enumerate() {
            compare(root, items, child, &format!("{at}[{i}]"), out);
        }
    }
    for alternative in ["anyOf", "oneOf"] {
        if let Some(options) = node.get(alternative).and_then(Value::as_array) {
            for option in options
                .iter()
                .filter(|o| o.get("type") != Some(&json!("null")))
            {
                compare(root, option, value, at, out);
            }
        }
    }
}

/// The schema node that describes the value at `path` (object keys and array indices).
fn node_at<'a>(root: &'a Value, path: &[String]) -> &'a Value {
    let mut node = resolve(root, root);
    for part in path {
        node = resolve(root, node);
        if let Some(options) = node
            .get("anyOf")
            .or(node.get("oneOf"))
            .and_then(Value::as_array)
        {
            node = options
                .iter()
                .map(|o| resolve(root, o))
                .find(|o| o.get("type") != Some(&json!("null")))
                .unwrap_or(node);
        }
        node = if part.parse::<usize>().is_ok() {
            &node["items"]
        } else {
            &node["properties"][part]
        };
    }
    let node = resolve(root, node);
    node.get("anyOf")
        .or(node.get("oneOf"))
        .and_then(Value::as_array)
        .and_then(|o| {
            o.iter()
                .map(|o| resolve(root, o))
                .find(|o| o.get("type") != Some(&json!("null")))
        })
        .unwrap_or(node)
}

/// Every (object path, key) in `value`.
fn keys(value: &Value, at: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push((at.clone(), k.clone()));
                let mut next = at.clone();
                next.push(k.clone());
                keys(v, next, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let mut next = at.clone();
                next.push(i.to_string());
                keys(v, next, out);
            }
        }
        _ => {}
    }
}

fn without(value: &Value, path: &[String], key: &str) -> Value {
    let mut copy = value.clone();
    let mut node = &mut copy;
    for part in path {
        node = match part.parse::<usize>() {
            Ok(i) => &mut node[i],
            Err(_) => &mut node[part.as_str()],
        };
    }
    node.as_object_mut().expect("an object").remove(key);
    copy
}

/// Where a maximal document from the types breaks `schema`.
fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// The fields the types cannot read without (`reads` fails without them) that `schema`
/// does not require.
fn unrequired(schema: &Value, value: &Value, reads: fn(Value) -> bool) -> Vec<String> {
    let mut all = Vec::new();
    keys(value, Vec::new(), &mut all);
    let mut problems = Vec::new();
    for (path, key) in all {
        let needed = !reads(without(value, &path, &key));
        let node = node_at(schema, &path);
        let required = node
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.contains(&json!(key)));
        if needed && !required {
            problems.push(format!(
                "{}.{key}: the types need it, the schema does not require it",
                path.join(".")
            ));
        }
    }
    problems
}

/// Every check of the types against `schema`, for the maximal document `value`.
fn schema_and_types_agree(schema: &Value, value: &Value, reads: fn(Value) -> bool) {
    let errors = violations(schema, value);
    assert!(errors.is_empty(), "types → schema: {errors:#?}");
    let mut problems = Vec::new();
    compare(schema, schema, value, "", &mut problems);
    assert!(problems.is_empty(), "schema → types: {problems:#?}");
    let problems = unrequired(schema, value, reads);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn a_maximal_archive_from_the_types_is_valid_under_the_schema() {
    let errors = violations(&schema(), &serde_json::to_value(sample()).unwrap());
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn the_schema_lists_exactly_the_fields_the_types_write() {
    let schema = schema();
    let value = serde_json::to_value(sample()).unwrap();
    let mut problems = Vec::new();
    compare(&schema, &schema, &value, "", &mut problems);
    // A fleet generator's metrics are one process's: the one field they never carry is a
    // fleet of their own.
    problems.retain(|p| {
        !p.ends_with("generators[0].metrics.fleet: in the schema, not written by the types")
    });
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn every_field_the_types_require_is_required_by_the_schema() {
    let value = serde_json::to_value(sample()).unwrap();
    let problems = unrequired(&schema(), &value, |v| {
        serde_json::from_value::<Archive>(v).is_ok()
    });
    assert!(problems.is_empty(), "{problems:#?}");
}

/// An imported archive with every optional field present and every list non-empty.
fn imported_sample() -> ImportedArchive {
    ImportedArchive {
        echomark_import: ImportInfo {
            format_version: IMPORT_FORMAT_VERSION,
            importer: "echomark 0.1.0".into(),
        },
        tool: Tool::Oha,
        tool_version: Some("1.16.0".into()),
        host: Some(sample().host),
        runs: vec![ImportedRun {
            source_file: "closed-16.json".into(),
            source_sha256: "0".repeat(64),
            command: Some("oha -c 16 http://127.0.0.1:8080/echo".into()),
            started_at_utc: Some("2026-12-05T04:37:56Z".into()),
            protocol: Protocol::Http,
            target: Some("http://127.0.0.1:8080/echo".into()),
            load: ImportedLoad {
                connections: 16,
                threads: Some(1),
                pipelining: 1,
                duration_seconds: 2.0,
                payload_bytes: Some(1024),
                loop_kind: Loop::Open,
                rate: Some(5000.0),
                latency_correction: true,
            },
            responses: Some(10_000),
            responses_per_second: Some(5000.0),
            reported_rate: Some(5001.0),
            bytes_per_second: Some(5e6),
            latency: Some(ImportedLatency {
                fidelity: LatencyFidelity::SummaryOnly,
                resolution_us: 0.001,
                measures: "from sending the request to the end of the response".into(),
                min_us: Some(20.0),
                mean_us: Some(50.0),
                max_us: Some(900.0),
                stddev_us: Some(10.0),
                percentiles: vec![Percentile {
                    at: 99.0,
                    us: 120.0,
                }],
                histogram: vec![Bucket {
                    upper_us: 900.0,
                    count: 10_000,
                }],
            }),
            unfinished: Some(3),
            errors: [("timeout".to_string(), 1)].into(),
            status_codes: [("200".to_string(), 10_000)].into(),
            stream: Some(StreamFigures {
                streams: 1,
                sent_bits_per_second: 1e9,
                received_bits_per_second: 0.99e9,
                sent_bytes: 250_000_000,
                received_bytes: 247_000_000,
                retransmits: Some(2),
                datagrams: Some(244_064),
                lost_datagrams: Some(6_459),
                lost_percent: Some(2.6),
                jitter_ms: Some(0.002),
                datagram_bytes: Some(1024),
                sender_cpu_percent: Some(24.2),
                receiver_cpu_percent: Some(17.9),
            }),
            failed: true,
            failure: vec!["1 requests ended in an error: timeout".into()],
        }],
    }
}

#[test]
fn the_imported_archive_schema_and_types_agree_in_both_directions() {
    let schema: Value = serde_json::from_str(IMPORTED_JSON_SCHEMA).expect("the schema is JSON");
    let value = serde_json::to_value(imported_sample()).unwrap();
    schema_and_types_agree(&schema, &value, |v| {
        serde_json::from_value::<ImportedArchive>(v).is_ok()
    });
}

/// The committed archives: each reads into the types and writes back the same JSON, so an
/// entry's flat fields and its embedded case key are one layout. Archives older than a field
/// write it as null; nothing else may differ.
#[test]
fn every_committed_archive_writes_back_what_it_read() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../raw-results");
    let mut paths = Vec::new();
    for dataset in std::fs::read_dir(&root).expect("raw-results/") {
        let dataset = dataset.expect("a dataset folder").path();
        if !dataset.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&dataset).expect("a dataset's files") {
            let path = file.expect("an archive").path();
            if path.extension().and_then(|e| e.to_str()) == Some("json") {
                paths.push(path);
            }
        }
    }
    assert!(
        paths.len() >= 18,
        "only {} archives under raw-results/",
        paths.len()
    );
    // Tens of megabytes of JSON read twice: the files are shared among threads (this binary's
    // other tests are quick).
    let workers = std::thread::available_parallelism().map_or(2, usize::from);
    std::thread::scope(|scope| {
        for share in paths.chunks(paths.len().div_ceil(workers)) {
            scope.spawn(move || share.iter().for_each(|p| writes_back_what_it_read(p)));
        }
    });
}

/// The archive at `path` reads into the types and writes back the same JSON.
fn writes_back_what_it_read(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).expect("an archive's text");
    let read: Value = serde_json::from_str(&text).expect("JSON");
    let fail = |e: serde_json::Error| -> Value { panic!("{}: {e}", path.display()) };
    // Other tools' results, imported (`echomark import`), are their own document.
    let written = if read.get("echomark_import").is_some() {
        serde_json::from_str::<ImportedArchive>(&text)
            .map_or_else(fail, |a| serde_json::to_value(a).expect("serialises"))
    } else {
        serde_json::from_str::<Archive>(&text)
            .map_or_else(fail, |a| serde_json::to_value(a).expect("serialises"))
    };
    let mut differences = Vec::new();
    differ(&read, &written, "", &mut differences);
    assert!(
        differences.is_empty(),
        "{} writes back differently ({} places), first at {:?}",
        path.display(),
        differences.len(),
        &differences[..differences.len().min(2)]
    );
}

/// The paths where `written` is not `read`, except keys `read` lacks that `written` has as
/// null. Key order counts: the runner writes fields in the types' order.
fn differ(read: &Value, written: &Value, at: &str, out: &mut Vec<String>) {
    match (read, written) {
        (Value::Object(r), Value::Object(w)) => {
            let kept: Vec<&String> = w
                .iter()
                .filter(|(k, v)| r.contains_key(*k) || !v.is_null())
                .map(|(k, _)| k)
                .collect();
            if !r.keys().eq(kept.iter().copied()) {
                out.push(format!(
                    "{at}: keys {:?} became {kept:?}",
                    r.keys().collect::<Vec<_>>()
                ));
                return;
            }
            for (k, v) in r {
                differ(v, &w[k], &format!("{at}.{k}"), out);
            }
        }
        (Value::Array(r), Value::Array(w)) if r.len() == w.len() => {
            for (i, (r, w)) in r.iter().zip(w).enumerate() {
                differ(r, w, &format!("{at}[{i}]"), out);
            }
        }
        (r, w) if r == w => {}
        _ => out.push(at.to_string()),
    }
}
