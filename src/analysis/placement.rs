//! Where a dataset's threads ran: the placement its runs recorded, summarised, and the
//! CPUs its IO threads had (which is what oversubscription is measured against).

use echomark_archive::cpus::CpuList;

use crate::model::{Dataset, RunPlacement};

/// What a dataset's runs say about where they ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// No run recorded it (arknet's archives, echomark's before it did).
    NotRecorded,
    /// Every run recorded the same placement.
    Same(RunPlacement),
    /// Runs recorded different placements (or only some recorded one).
    Varied {
        /// How many distinct placements were recorded.
        placements: usize,
    },
}

impl Placement {
    /// The CPUs the client and server both ran on, when the runs agree, they ran on threads
    /// of their own and share any.
    pub fn shared_cpus(&self) -> Option<CpuList> {
        match self {
            Placement::Same(p) if !p.server_in_process || p.server_own_runtimes => {
                p.client.common(p.server.as_ref()?)
            }
            _ => None,
        }
    }
}

/// The placement of `d`'s runs.
pub fn of(d: &Dataset) -> Placement {
    let mut seen: Vec<&RunPlacement> = Vec::new();
    let mut unrecorded = false;
    for run in &d.runs {
        match &run.instruments.placement {
            Some(p) if !seen.contains(&p) => seen.push(p),
            Some(_) => {}
            None => unrecorded = true,
        }
    }
    match (seen.as_slice(), unrecorded) {
        ([], _) => Placement::NotRecorded,
        ([one], false) => Placement::Same((*one).clone()),
        (many, _) => Placement::Varied {
            placements: many.len(),
        },
    }
}

/// How many CPUs the IO threads of `d`'s client (in process: of client and server) could
/// run on: the placement's, where every run recorded the same, else the host's logical CPUs.
/// Where an in-process server had runtimes of its own, as many as the client's, each side's
/// threads had their own list: the smaller one.
pub fn io_cpus(d: &Dataset) -> Option<u64> {
    match of(d) {
        Placement::Same(p) if p.server_own_runtimes => {
            let server = p.server.as_ref().map_or(usize::MAX, CpuList::len);
            Some(p.client.len().min(server) as u64)
        }
        Placement::Same(p) => Some(p.client.len() as u64),
        _ => d.host().and_then(|h| h.logical_cpus),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::run;

    fn placed(client: &str, server: Option<&str>, in_process: bool) -> RunPlacement {
        RunPlacement {
            client: client.parse().unwrap(),
            client_pinned: true,
            server_in_process: in_process,
            server_own_runtimes: false,
            server: server.map(|s| s.parse().unwrap()),
            server_pinned: true,
        }
    }

    fn dataset(placements: Vec<Option<RunPlacement>>) -> Dataset {
        Dataset {
            runs: placements
                .into_iter()
                .enumerate()
                .map(|(i, p)| {
                    let mut r = run(echomark_archive::Protocol::Tcp, i as u64 + 1);
                    r.instruments.placement = p;
                    r
                })
                .collect(),
            name: "d".into(),
            files: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn runs_that_agree_give_one_placement_and_its_cpus() {
        let apart = placed("0", Some("1"), false);
        let d = dataset(vec![Some(apart.clone()), Some(apart.clone())]);
        assert_eq!(of(&d), Placement::Same(apart));
        assert_eq!(io_cpus(&d), Some(1));
        assert_eq!(of(&d).shared_cpus(), None);
        let sharing = placed("0-1", Some("1"), false);
        assert_eq!(
            of(&dataset(vec![Some(sharing)])).shared_cpus(),
            Some("1".parse().unwrap())
        );
    }

    #[test]
    fn an_in_process_server_on_runtimes_of_its_own_is_placed_apart() {
        let apart = RunPlacement {
            server_own_runtimes: true,
            ..placed("0-1", Some("1-2"), true)
        };
        let d = dataset(vec![Some(apart.clone())]);
        assert_eq!(of(&d).shared_cpus(), Some("1".parse().unwrap()));
        assert_eq!(io_cpus(&d), Some(2));
        let narrow = RunPlacement {
            client: "0".parse().unwrap(),
            ..apart
        };
        assert_eq!(io_cpus(&dataset(vec![Some(narrow)])), Some(1));
        // Together, the server's CPUs are the client's: nothing is shared between sides.
        assert_eq!(
            of(&dataset(vec![Some(placed("0-1", Some("0-1"), true))])).shared_cpus(),
            None
        );
    }

    #[test]
    fn runs_that_differ_or_lack_a_record_are_not_summarised_as_one() {
        let a = placed("0", Some("1"), false);
        let b = placed("1", Some("0"), false);
        assert_eq!(
            of(&dataset(vec![Some(a.clone()), Some(b)])),
            Placement::Varied { placements: 2 }
        );
        assert_eq!(
            of(&dataset(vec![Some(a), None])),
            Placement::Varied { placements: 1 }
        );
        assert_eq!(of(&dataset(vec![None])), Placement::NotRecorded);
    }
}
