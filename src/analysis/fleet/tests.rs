//! Unit tests of the module above.
use super::*;
use crate::analysis::aggregate::configurations;
use crate::model::tests::{fleet_run, run};
use crate::model::{Format, Run};

/// A complete archive of `runs`, as one dataset.
fn dataset(runs: Vec<Run>) -> Dataset {
    let mut file = crate::read::file_record(std::path::Path::new("a.json"), Format::Echomark, None);
    file.complete = true;
    file.runs = runs.len();
    Dataset {
        name: "fleet".into(),
        files: vec![file],
        runs: runs
            .into_iter()
            .enumerate()
            .map(|(i, r)| Run { index: i, ..r })
            .collect(),
        warnings: Vec::new(),
    }
}

/// Three repetitions at 1, 2 and 4 generators, each count's merged rates from `rates`.
fn fleet(rates: [[f64; 3]; 3]) -> Dataset {
    let mut runs = Vec::new();
    for (generators, rates) in [1, 2, 4].into_iter().zip(rates) {
        for (i, rate) in rates.into_iter().enumerate() {
            runs.push(fleet_run(generators, i as u64 + 1, rate));
        }
    }
    dataset(runs)
}

fn analysed(d: &Dataset) -> Option<FleetAnalysis> {
    let configs = configurations(std::slice::from_ref(d)).expect("the runs aggregate");
    let mine: Vec<&Configuration> = configs.iter().collect();
    analyse(d, &mine, &Rules::default())
}

const FLAT: [[f64; 3]; 3] = [
    [97_000.0, 97_100.0, 96_900.0],
    [97_050.0, 96_950.0, 97_000.0],
    [96_980.0, 97_020.0, 97_000.0],
];

#[test]
fn a_dataset_without_fleet_runs_has_no_fleet() {
    let d = dataset(vec![run(echomark_archive::Protocol::Tcp, 1)]);
    assert_eq!(analysed(&d), None);
}

#[test]
fn each_generator_is_named_once_with_its_host_cpus_and_runs() {
    let f = analysed(&fleet(FLAT)).expect("fleet runs");
    assert_eq!(f.counts, [1, 2, 4]);
    assert_eq!(f.coordinator_hosts, BTreeSet::from(["gen-0".to_string()]));
    let summary: Vec<(u64, Vec<&str>, usize)> = f
        .generators
        .iter()
        .map(|g| {
            (
                g.index,
                g.hosts.iter().map(String::as_str).collect(),
                g.runs,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (0, vec!["gen-0"], 9),
            (1, vec!["gen-1"], 6),
            (2, vec!["gen-2"], 3),
            (3, vec!["gen-3"], 3)
        ]
    );
    assert!(f
        .generators
        .iter()
        .all(|g| !g.pinned && g.client_cpus.len() == 1));
}

#[test]
fn start_skew_and_clocks_summarise_every_generator_of_every_run() {
    let f = analysed(&fleet(FLAT)).expect("fleet runs");
    // 21 skews (1 + 2 + 4 generators, 3 repetitions): 100 + 10 i + repetition; the
    // farthest is gen-3's in the third repetition.
    assert_eq!(f.skew.samples, 21);
    assert_eq!(f.skew.worst_us, 133.0);
    assert_eq!(f.skew.uncertainty_us, 10.0);
    assert_eq!(f.skew.median_us, 111.0);
    // Offsets ±i µs at start and end (±10 µs), drift i ppm (±5 ppm): gen-3 is farthest,
    // and its drift is outside its uncertainty.
    assert_eq!(
        (f.clocks.offset_us, f.clocks.offset_uncertainty_us),
        (3.0, 10.0)
    );
    assert_eq!(
        (f.clocks.drift_ppm, f.clocks.drift_uncertainty_ppm),
        (3.0, 5.0)
    );
    assert_eq!(f.clocks.largest_uncertainty_us, 10.0);
    assert!(
        f.clocks.within_uncertainty,
        "3 ppm ± 5 ppm cannot be told from 0"
    );
    let mut d = fleet(FLAT);
    if let Some(fleet) = d.runs[8].instruments.fleet.as_mut() {
        fleet.generators[3].clock.drift_ppm = -7.5;
    }
    let f = analysed(&d).expect("fleet runs");
    assert_eq!(
        f.clocks.drift_ppm, -7.5,
        "farthest from zero, its sign kept"
    );
    assert!(!f.clocks.within_uncertainty);
}

#[test]
fn generators_on_one_cpu_of_one_machine_are_said_to_share_it() {
    let f = analysed(&fleet(FLAT)).expect("fleet runs");
    assert_eq!(
        f.cpus,
        GeneratorCpus::Shared {
            cpus: "0".parse().unwrap()
        }
    );
    let edit = |change: &dyn Fn(&mut RunGenerator)| {
        let mut d = fleet(FLAT);
        if let Some(fleet) = d.runs[7].instruments.fleet.as_mut() {
            change(&mut fleet.generators[2]);
        }
        analysed(&d).expect("fleet runs").cpus
    };
    assert_eq!(
        edit(&|g| g.path = Some(PathKind::Network)),
        GeneratorCpus::SameNumbers {
            cpus: "0".parse().unwrap()
        },
        "CPU 0 of another host is another CPU"
    );
    assert_eq!(
        edit(&|g| g.client_cpus = Some("1".parse().unwrap())),
        GeneratorCpus::Different
    );
    assert_eq!(edit(&|g| g.client_cpus = None), GeneratorCpus::NotRecorded);
}

#[test]
fn the_merged_rate_per_generator_count_and_the_rules_word_on_most_against_fewest() {
    let f = analysed(&fleet(FLAT)).expect("fleet runs");
    assert_eq!(f.scaling.len(), 1, "one load");
    let s = &f.scaling[0];
    assert_eq!(s.load.generators, None);
    let counts: Vec<u64> = s.points.iter().map(|p| p.generators).collect();
    assert_eq!(counts, [1, 2, 4]);
    let four = s.points[2];
    let merged = four.merged.expect("a rate");
    assert_eq!(
        (merged.median, merged.min, merged.max),
        (97_000.0, 96_980.0, 97_020.0)
    );
    let each = four.per_generator.expect("a rate");
    assert_eq!(
        (each.median, each.min, each.max),
        (24_250.0, 24_245.0, 24_255.0)
    );
    assert!(four.valid && four.runs == 3 && four.p99_us.is_some());
    let d = s.decision.expect("three counts: a decision");
    assert_eq!((d.base, d.subject), (1, 4));
    assert_eq!(
        d.decision.verdict,
        echomark_decide::Verdict::Equivalent,
        "flat within 0.1 %: {:?}",
        d.decision
    );
    // Twice the generators, twice the rate: decided higher, never merely by medians.
    let rising = analysed(&fleet([
        [50_000.0, 50_500.0, 49_500.0],
        [97_000.0, 98_000.0, 96_000.0],
        [190_000.0, 192_000.0, 188_000.0],
    ]))
    .expect("fleet runs");
    let d = rising.scaling[0].decision.expect("a decision");
    assert_eq!(d.decision.verdict, echomark_decide::Verdict::Higher);
    assert!(d.decision.low > 3.0, "{:?}", d.decision);
}

#[test]
fn one_generator_count_has_points_but_nothing_to_decide() {
    let d = dataset((1..=3).map(|i| fleet_run(2, i, 90_000.0)).collect());
    let f = analysed(&d).expect("fleet runs");
    assert_eq!(f.counts, [2]);
    assert_eq!(f.scaling[0].points.len(), 1);
    assert_eq!(f.scaling[0].decision, None);
}
