//! The generator over arknet's real archives (../shared/fixtures/arknet, when present):
//! it must reproduce arknet's published figures (arknet-reports.md §17).

use std::path::PathBuf;

use echomark::analysis::aggregate::{self, Configuration};
use echomark::analysis::rank;
use echomark::{format, read, validate};
use echomark_archive::Metric;

fn fixtures() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/arknet");
    if dir.is_dir() {
        Some(dir)
    } else {
        echomark::skip::because(&format!("{} is not here", dir.display()));
        None
    }
}

#[test]
fn baseline_counts_and_every_published_statistic_match() {
    let Some(dir) = fixtures() else { return };
    let datasets = read::load(std::slice::from_ref(&dir)).expect("arknet baseline validates");
    assert_eq!(datasets.len(), 1);
    let report = validate::report(&datasets[0]);
    assert_eq!(
        (report.files, report.runs, report.runs_passed),
        (16, 1620, 1620)
    );
    assert_eq!(
        (report.configurations, report.configurations_valid),
        (540, 540)
    );
    assert_eq!(format::count(report.runs as u64), "1,620");

    let configs = aggregate::configurations(&datasets).unwrap();
    let published: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("published/summary.json")).unwrap())
            .unwrap();
    let published = published.as_array().unwrap();
    assert_eq!(published.len(), configs.len());
    let mut compared = 0;
    for p in published {
        let c = configs
            .iter()
            .find(|c| {
                let k = &c.key;
                k.backend.as_str() == p["backend"]
                    && k.implementation == p["implementation"]
                    && k.protocol.as_str() == p["protocol"]
                    && k.payload_bytes == p["payload_bytes"]
                    && k.clients == p["clients"]
                    && k.window == p["window"]
                    && k.io_model.as_str() == p["io_model"]
                    && k.io_threads == p["io_threads"]
                    && k.handler_work == p["handler_work"]
            })
            .unwrap_or_else(|| panic!("no configuration for {p}"));
        for metric in [
            Metric::RoundtripsPerSecond,
            Metric::PayloadMibPerSecond,
            Metric::RttP50Us,
            Metric::RttP95Us,
            Metric::RttP99Us,
            Metric::PeakRssBytes,
            Metric::CpuPercent,
        ] {
            let ours = c
                .stat(metric)
                .unwrap_or_else(|| panic!("{metric:?} missing"));
            let metric = metric.name();
            for (part, value) in [
                ("median", ours.median),
                ("min", ours.min),
                ("max", ours.max),
            ] {
                let theirs = p[metric][part].as_f64().unwrap();
                assert!(
                    (value - theirs).abs() <= 1e-9 * theirs.abs().max(1.0),
                    "{metric}.{part}: {value} vs {theirs} in {p}"
                );
                compared += 1;
            }
        }
        let machine = c.cpu_machine_percent.unwrap();
        assert!(
            (machine.median - p["cpu_machine_percent"]["median"].as_f64().unwrap()).abs() < 1e-9
        );
        assert!((c.cpu_seconds.unwrap() - p["cpu_seconds"].as_f64().unwrap()).abs() < 1e-12);
        assert_eq!(c.cpu_percent_estimated, Some(true));
    }
    assert_eq!(compared, 540 * 21);
}

fn find<'a>(
    configs: &'a [Configuration],
    backend: &str,
    protocol: &str,
    payload: u64,
    window: u64,
    model: &str,
    threads: u64,
) -> &'a Configuration {
    configs
        .iter()
        .find(|c| {
            let k = &c.key;
            (
                k.backend.as_str(),
                k.protocol.as_str(),
                k.payload_bytes,
                k.clients,
                k.window,
                k.io_model.as_str(),
                k.io_threads,
                k.implementation.as_str(),
            ) == (
                backend,
                protocol,
                payload,
                16,
                window,
                model,
                threads,
                "arknet-callback",
            )
        })
        .expect("configuration present")
}

#[test]
fn the_udp_table_prints_arknets_digits() {
    let Some(dir) = fixtures() else { return };
    let configs = aggregate::configurations(&read::load(&[dir]).unwrap()).unwrap();
    let boost = find(&configs, "boost", "udp", 1024, 1, "shared", 1);
    let rt = boost.stat(Metric::RoundtripsPerSecond).unwrap();
    assert_eq!(
        format::with_range(rt.median, rt.min, rt.max, 0),
        "84,496 [81,589, 86,343]"
    );
    assert_eq!(
        format::two_decimals(boost.stat(Metric::PayloadMibPerSecond).unwrap().median),
        "165.03"
    );
    assert_eq!(
        format::two_decimals(boost.stat(Metric::RttP50Us).unwrap().median),
        "182.12"
    );
    assert_eq!(
        format::two_decimals(boost.stat(Metric::RttP95Us).unwrap().median),
        "218.33"
    );
    assert_eq!(
        format::two_decimals(boost.stat(Metric::RttP99Us).unwrap().median),
        "313.00"
    );
    assert_eq!(
        format::cpu_percent(boost.stat(Metric::CpuPercent).unwrap().median),
        "99.0"
    );
    assert_eq!(
        format::mib(boost.stat(Metric::PeakRssBytes).unwrap().median),
        "9.75"
    );
    assert_eq!(
        format!("{:.2}", boost.cpu_machine_percent.unwrap().median),
        "7.07"
    );
    let boost2 = find(&configs, "boost", "udp", 1024, 1, "shared", 2);
    assert_eq!(
        format::two_decimals(boost2.stat(Metric::RttP95Us).unwrap().median),
        "228.88"
    );
    assert_eq!(
        format::cpu_percent(boost2.stat(Metric::CpuPercent).unwrap().median),
        "157.0"
    );
    let standalone2 = find(&configs, "standalone", "udp", 1024, 1, "shared", 2);
    assert_eq!(
        format::cpu_percent(standalone2.stat(Metric::CpuPercent).unwrap().median),
        "171.8"
    );
    assert_eq!(
        format::two_decimals(
            find(&configs, "standalone", "udp", 1024, 1, "shared", 1)
                .stat(Metric::RttP95Us)
                .unwrap()
                .median
        ),
        "197.12"
    );
}

#[test]
fn key_results_rank_every_backend_like_arknet() {
    let Some(dir) = fixtures() else { return };
    let rankings = rank::rankings(
        &aggregate::configurations(&read::load(&[dir]).unwrap()).unwrap(),
        &|_| echomark::analysis::decision::Rules::default(),
    );
    let at = |backend: &str, implementation: &str, protocol: &str, window: u64, work: u64| {
        rankings
            .iter()
            .find(|r| {
                let g = &r.group;
                (
                    g.backend.as_str(),
                    g.implementation.as_str(),
                    g.protocol.as_str(),
                    g.payload_bytes,
                    g.clients,
                    g.window,
                    g.handler_work,
                ) == (backend, implementation, protocol, 1024, 16, window, work)
            })
            .expect("ranking present")
    };
    let cases = [
        // backend, implementation, protocol, window, work, best, speedup, best p99, baseline p99
        (
            "standalone",
            "arknet-callback",
            "tcp",
            16,
            0,
            ("sharded", 4),
            "1.98×",
            "1,346.00",
            "1,491.79",
        ),
        (
            "standalone",
            "arknet-callback",
            "udp",
            1,
            0,
            ("shared", 2),
            "1.06×",
            "210.92",
            "221.50",
        ),
        (
            "standalone",
            "asio-coroutine",
            "tcp",
            16,
            0,
            ("shared", 4),
            "1.84×",
            "870.46",
            "1,028.71",
        ),
        (
            "standalone",
            "asio-coroutine",
            "tcp",
            16,
            10_000,
            ("sharded", 4),
            "3.54×",
            "1,749.29",
            "5,687.25",
        ),
    ];
    for (backend, imp, protocol, window, work, best, speedup, p99, base_p99) in cases {
        let r = at(backend, imp, protocol, window, work);
        assert_eq!((r.best.io_model.as_str(), r.best.io_threads), best, "{r:?}");
        assert_eq!(format::ratio(r.speedup.unwrap()), speedup);
        assert_eq!(format::two_decimals(r.best.rtt_p99_us.unwrap().median), p99);
        assert_eq!(
            format::two_decimals(r.baseline.as_ref().unwrap().rtt_p99_us.unwrap().median),
            base_p99
        );
    }
    // Boost is ranked too (arknet never printed it).
    assert_eq!(
        format::ratio(
            at("boost", "arknet-callback", "tcp", 16, 0)
                .speedup
                .unwrap()
        ),
        "1.77×"
    );
    assert_eq!(
        format::ratio(at("boost", "arknet-callback", "udp", 1, 0).speedup.unwrap()),
        "1.20×"
    );
    assert_eq!(
        format::ratio(at("boost", "asio-coroutine", "tcp", 16, 0).speedup.unwrap()),
        "1.98×"
    );
    assert_eq!(
        format::ratio(
            at("boost", "asio-coroutine", "tcp", 16, 10_000)
                .speedup
                .unwrap()
        ),
        "3.57×"
    );
}

#[test]
fn udp_limits_pass_counts_per_backend() {
    let Some(dir) = fixtures() else { return };
    let datasets = read::load(&[dir.join("udp-limits")]).expect("failed runs are data");
    let d = &datasets[0];
    for backend in ["standalone", "boost"] {
        let runs: Vec<_> = d.runs.iter().filter(|r| r.key.backend == backend).collect();
        let passed = runs.iter().filter(|r| r.passed).count();
        assert_eq!(
            (passed, runs.len() - passed),
            (36, 18),
            "{backend}: 36 pass, 18 fail"
        );
        let lost: u64 = runs.iter().map(|r| r.udp_lost_messages).sum();
        assert_eq!(lost, 11_889, "{backend}: measured-phase losses");
        // arknet's own rule agrees on every run here.
        assert!(runs.iter().all(|r| r.passed == r.arknet_passed));
    }
    let report = validate::report(d);
    assert_eq!(
        (report.configurations, report.configurations_valid),
        (36, 24)
    );
}
