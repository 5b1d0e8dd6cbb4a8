//! Unit tests of the module above.
use super::*;
use crate::analysis::aggregate::{test_configuration, Stat};
use crate::analysis::loads::main_load_configs;
use crate::analysis::measured::{measured, single_choice};

struct Spec<'a> {
    protocol: &'a str,
    model: &'a str,
    threads: u64,
    payload: u64,
    clients: u64,
    work: u64,
    rates: [f64; 3],
    p99: [f64; 3],
    cpu: [f64; 3],
}

fn spec<'a>(protocol: &'a str, model: &'a str, threads: u64, rates: [f64; 3]) -> Spec<'a> {
    Spec {
        protocol,
        model,
        threads,
        payload: 1024,
        clients: 16,
        work: 0,
        rates,
        p99: [100.0, 101.0, 99.0],
        cpu: [100.0, 100.5, 99.5],
    }
}

fn build(s: &Spec) -> Configuration {
    let stat = |v: [f64; 3]| Stat {
        median: v[0],
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(0.0, f64::max),
    };
    let stats = BTreeMap::from([
        (Metric::RoundtripsPerSecond, stat(s.rates)),
        (Metric::RttP99Us, stat(s.p99)),
        (Metric::CpuPercent, stat(s.cpu)),
    ]);
    let mut c = test_configuration(s.protocol, s.model, s.threads, stats, Status::Valid);
    c.key.payload_bytes = s.payload;
    c.key.clients = s.clients;
    c.key.handler_work = s.work;
    c.values = BTreeMap::from([
        (Metric::RoundtripsPerSecond, s.rates.to_vec()),
        (Metric::RttP99Us, s.p99.to_vec()),
        (Metric::CpuPercent, s.cpu.to_vec()),
    ]);
    c
}

fn rows(specs: &[Spec]) -> Vec<Recommendation> {
    let configs: Vec<Configuration> = specs.iter().map(build).collect();
    let refs: Vec<&Configuration> = configs.iter().collect();
    recommendations(&refs, &Rules::default())
}

const TIGHT_100: [f64; 3] = [100_000.0, 100_500.0, 99_500.0];
const TIGHT_130: [f64; 3] = [130_000.0, 130_600.0, 129_400.0];

#[test]
fn the_classes_are_the_corners_the_dataset_measured() {
    let mut specs = Vec::new();
    for (payload, clients, work) in [
        (64, 1, 0),
        (1024, 1, 0),
        (64, 16, 0),
        (1024, 16, 0),
        (1024, 16, 10_000),
    ] {
        let mut s = spec("tcp", "shared", 1, TIGHT_100);
        (s.payload, s.clients, s.work) = (payload, clients, work);
        specs.push(s);
    }
    let configs: Vec<Configuration> = specs.iter().map(build).collect();
    let refs: Vec<&Configuration> = configs.iter().collect();
    let got: Vec<(LoadClass, u64, u64, u64)> = classes(&refs)
        .iter()
        .map(|c| (c.class, c.payload_bytes, c.clients, c.handler_work))
        .collect();
    assert_eq!(
        got,
        [
            (LoadClass::Light, 64, 1, 0),
            (LoadClass::LargeMessages, 1024, 1, 0),
            (LoadClass::ManyClients, 1024, 16, 0),
            (LoadClass::Work, 1024, 16, 10_000),
        ]
    );
    // One load only: one class.
    let one = [build(&spec("tcp", "shared", 1, TIGHT_100))];
    let refs: Vec<&Configuration> = one.iter().collect();
    assert_eq!(classes(&refs).len(), 1);
}

#[test]
fn a_choice_faster_under_every_protocol_is_recommended_with_its_trade_off() {
    let mut fast_tcp = spec("tcp", "sharded", 2, TIGHT_130);
    fast_tcp.p99 = [150.0, 151.0, 149.0];
    fast_tcp.cpu = [190.0, 191.0, 189.0];
    let mut fast_udp = spec("udp", "sharded", 2, TIGHT_130);
    fast_udp.p99 = [150.0, 151.0, 149.0];
    fast_udp.cpu = [190.0, 191.0, 189.0];
    let got = rows(&[
        spec("tcp", "shared", 1, TIGHT_100),
        spec("udp", "shared", 1, TIGHT_100),
        fast_tcp,
        fast_udp,
    ]);
    assert_eq!(got.len(), 1);
    let Advice::Use {
        choice,
        runner_up,
        trade,
    } = &got[0].advice
    else {
        panic!("{got:?}")
    };
    assert_eq!((choice.io_model, choice.io_threads), (IoModel::Sharded, 2));
    assert_eq!(
        (runner_up.io_model, runner_up.io_threads),
        (IoModel::Shared, 1)
    );
    assert_eq!(trade.throughput.verdict, Verdict::Higher);
    assert!((trade.throughput.ratio - 1.3).abs() < 0.01, "{trade:?}");
    let p99 = trade.p99.expect("both have p99");
    assert_eq!(p99.verdict, Verdict::Higher, "a p99 cost: {p99:?}");
    assert!((p99.ratio - 1.5).abs() < 0.02, "{p99:?}");
    // CPU per echo: 1.9 CPUs at 1.3× the rate against 1 CPU: 1.9 / 1.3 ≈ 1.46×.
    let cpu = trade.cpu_per_echo.expect("both have CPU");
    assert_eq!(cpu.verdict, Verdict::Higher);
    assert!((cpu.ratio - 1.9 / 1.3).abs() < 0.02, "{cpu:?}");
    assert_eq!(got[0].strata.len(), 2);
}

#[test]
fn a_choice_slower_under_one_protocol_is_no_single_choice() {
    // 30 % faster under TCP, HTTP and WebSocket, 10 % slower under UDP: the pool alone
    // would crown it; the reversal does not let it.
    let mut specs = Vec::new();
    for p in ["tcp", "http", "websocket"] {
        specs.push(spec(p, "shared", 1, TIGHT_100));
        specs.push(spec(p, "shared", 2, TIGHT_130));
    }
    specs.push(spec("udp", "shared", 1, TIGHT_100));
    specs.push(spec("udp", "shared", 2, [90_000.0, 90_400.0, 89_600.0]));
    let got = rows(&specs);
    let Advice::NoSingleChoice {
        best,
        others,
        reversed_in,
        behind,
    } = &got[0].advice
    else {
        panic!("{got:?}")
    };
    assert!(behind.is_empty(), "{behind:?}");
    assert_eq!(best.io_threads, 2);
    assert_eq!(others.len(), 1);
    assert_eq!(
        others[0].1.verdict,
        Verdict::Higher,
        "the pool decides higher"
    );
    assert_eq!(
        reversed_in.iter().map(|s| s.protocol).collect::<Vec<_>>(),
        [Protocol::Udp]
    );
}

#[test]
fn clients_of_one_server_are_choices_whoever_wrote_them_and_a_slower_one_is_behind() {
    // echomark's client and wrk too noisy to tell apart, oha decided 30 % slower.
    let client = |backend: &str, rates: [f64; 3]| {
        let mut c = build(&spec("http", "shared", 1, rates));
        c.key.backend = echomark_archive::Backend::named(backend);
        if backend != "tokio" {
            c.key.implementation = backend.to_string();
        }
        c
    };
    let configs = [
        client("tokio", [100_000.0, 120_000.0, 85_000.0]),
        client("wrk", [104_000.0, 90_000.0, 118_000.0]),
        client("oha", [70_000.0, 70_300.0, 69_700.0]),
    ];
    let refs: Vec<&Configuration> = configs.iter().collect();
    // As servers, each program is a stratum of its own, and no stratum has two choices.
    assert!(recommendations(&refs, &Rules::default()).is_empty());
    let got = clients(&refs, &Rules::default());
    let Advice::NoSingleChoice {
        best,
        others,
        behind,
        ..
    } = &got[0].advice
    else {
        panic!("{got:?}")
    };
    assert_ne!(best.backend, "oha");
    assert_eq!(others.len(), 1, "the other of echomark and wrk: {others:?}");
    assert_eq!(behind.len(), 1);
    assert_eq!(behind[0].0.backend, "oha");
    assert_eq!(behind[0].1.verdict, Verdict::Higher, "the best against oha");
    assert_eq!(
        got[0].strata.len(),
        1,
        "HTTP, whoever implemented the client"
    );
}

#[test]
fn overlapping_choices_are_no_single_choice_and_a_failed_one_is_left_out() {
    let noisy_a = [100_000.0, 120_000.0, 85_000.0];
    let noisy_b = [104_000.0, 90_000.0, 118_000.0];
    let mut failed = build(&spec("tcp", "sharded", 4, TIGHT_130));
    failed.status = Status::Failed;
    let configs = [
        build(&spec("tcp", "shared", 1, noisy_a)),
        build(&spec("tcp", "shared", 2, noisy_b)),
        failed,
    ];
    let refs: Vec<&Configuration> = configs.iter().collect();
    let got = recommendations(&refs, &Rules::default());
    let Advice::NoSingleChoice { others, .. } = &got[0].advice else {
        panic!("{got:?}")
    };
    assert!(
        matches!(others[0].1.verdict, Verdict::Undecided { .. }),
        "{others:?}"
    );
    assert_eq!(got[0].left_out.len(), 1);
    assert_eq!(got[0].left_out[0].io_threads, 4);
}

#[test]
fn one_choice_has_no_recommendation_but_states_its_figures() {
    let mut small = spec("tcp", "shared", 1, [10_000.0, 10_100.0, 9_900.0]);
    small.payload = 64;
    let configs = [build(&small), build(&spec("udp", "shared", 1, TIGHT_100))];
    let refs: Vec<&Configuration> = configs.iter().collect();
    assert!(recommendations(&refs, &Rules::default()).is_empty());
    assert!(single_choice(&refs).is_some());
    let m = measured(&refs);
    assert_eq!(m.len(), 2);
    let tcp = m
        .iter()
        .find(|m| m.stratum.protocol == Protocol::Tcp)
        .unwrap();
    assert_eq!(tcp.roundtrips_per_second, 10_000.0);
    // 100 % of one CPU at 10,000 echoes/s: 100 µs of CPU per echo.
    let cpu = tcp.cpu_per_echo_us.expect("CPU recorded");
    assert!((cpu - 100.0).abs() < 0.6, "{cpu}");
    assert_eq!(tcp.rtt_p99_us, Some(100.0));
}

#[test]
fn the_main_load_shows_each_protocol_once_at_its_largest_window_in_page_order() {
    let at = |protocol: &str, window: u64, work: u64, payload: u64| {
        let mut c = build(&spec(protocol, "shared", 1, [100.0, 101.0, 99.0]));
        c.key.window = window;
        c.key.handler_work = work;
        c.key.payload_bytes = payload;
        c
    };
    let all = [
        at("udp", 1, 0, 1024),
        at("tcp", 1, 0, 1024),
        at("tcp", 16, 0, 1024),
        at("tcp", 16, 10_000, 1024),
        at("http", 16, 0, 64),
    ];
    let refs: Vec<&Configuration> = all.iter().collect();
    let chosen = main_load_configs(&refs, "tokio", 1024, 16);
    let shown: Vec<(String, u64, u64)> = chosen
        .iter()
        .map(|c| {
            (
                c.key.protocol.as_str().to_string(),
                c.key.window,
                c.key.handler_work,
            )
        })
        .collect();
    // TCP before UDP (arknet's order), TCP at window 16 only, no added work, no other
    // payload, no other backend.
    assert_eq!(
        shown,
        vec![("tcp".to_string(), 16, 0), ("udp".to_string(), 1, 0)]
    );
    assert!(main_load_configs(&refs, "monoio", 1024, 16).is_empty());
}

#[test]
fn the_failed_share_is_the_runs_that_did_not_pass() {
    let mut c = build(&spec("tcp", "shared", 1, [100.0, 101.0, 99.0]));
    assert_eq!(c.failed_share(), 0.0);
    c.runs_passed = 2;
    assert!((c.failed_share() - 1.0 / 3.0).abs() < 1e-12);
    c.runs = 0;
    c.runs_passed = 0;
    assert_eq!(c.failed_share(), 1.0, "no run is no run passed");
}
