//! Histories: the datasets measured on one host with one matrix form a series, oldest first,
//! and each dataset is compared with the one before it by the rule of `echomark compare`
//! ([`crate::analysis::compare`]), so the site can show what changed and when.

use std::collections::BTreeMap;

use crate::analysis::compare::side::Side;
use crate::analysis::compare::{Comparison, Options};
use crate::analysis::hosts::host_key;
use crate::analysis::method;
use crate::analysis::placement::{self, Placement};
use crate::error::Error;
use crate::model::Dataset;

/// Datasets of one host and one matrix, in recording order.
#[derive(Debug, Clone)]
pub struct Series {
    /// Indices into the datasets, oldest first.
    pub datasets: Vec<usize>,
    /// `steps[i]` compares `datasets[i + 1]` with `datasets[i]`.
    pub steps: Vec<Comparison>,
}

impl Series {
    /// The comparison of dataset `index` with the one before it, if it has one here.
    pub fn step_into(&self, index: usize) -> Option<(usize, &Comparison)> {
        let position = self.datasets.iter().position(|&d| d == index)?;
        let previous = *self.datasets.get(position.checked_sub(1)?)?;
        Some((previous, &self.steps[position - 1]))
    }
}

/// What makes two datasets one series: one host ([`host_key`]), one path between client
/// and server (a veth dataset is not a later loopback one), the shape of the matrix, and
/// how it was measured where that changes the figures: an in-process server on runtimes of
/// its own (and where), and how UDP datagrams moved (`--udp-batch`, `--udp-gso`).
fn identity(d: &Dataset) -> Option<String> {
    let f = d.files.first()?;
    if d.has_imported() {
        // Other tools' runs have no requested timing (each run lasts what it lasted): the
        // tools that measured and what they measured make the series.
        let tools: Vec<String> = d
            .files
            .iter()
            .map(|f| {
                f.imported
                    .as_ref()
                    .map_or("echomark".into(), |s| s.tool.to_string())
            })
            .collect();
        return serde_json::to_string(&(
            host_key(d)?,
            d.path_kind(),
            ("imported", tools, &f.protocols, f.address_family),
        ))
        .ok();
    }
    // Apart, on the same host, also where: each side's CPUs.
    let apart_on = match placement::of(d) {
        Placement::Same(p) if p.server_own_runtimes => {
            Some((p.client.to_string(), p.server.map(|s| s.to_string())))
        }
        _ => None,
    };
    serde_json::to_string(&(
        host_key(d)?,
        d.path_kind(),
        (
            &f.preset,
            &f.protocols,
            f.seconds,
            f.warmup,
            f.repetitions,
            f.address_family,
        ),
        (method::of(d), apart_on),
    ))
    .ok()
}

/// Every series of two or more datasets, each step compared with the default options.
pub fn series(datasets: &[Dataset]) -> Result<Vec<Series>, Error> {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, d) in datasets.iter().enumerate() {
        if let Some(id) = identity(d) {
            groups.entry(id).or_default().push(i);
        }
    }
    let mut out = Vec::new();
    for mut members in groups.into_values().filter(|m| m.len() > 1) {
        members.sort_by(|&a, &b| {
            datasets[a]
                .recorded_at()
                .cmp(&datasets[b].recorded_at())
                .then_with(|| datasets[a].name.cmp(&datasets[b].name))
        });
        let sides = members
            .iter()
            .map(|&i| Side::of(&datasets[i]))
            .collect::<Result<Vec<_>, _>>()?;
        let steps = sides
            .windows(2)
            .map(|pair| Comparison::of(&pair[0], &pair[1], &Options::default()))
            .collect();
        out.push(Series {
            datasets: members,
            steps,
        });
    }
    out.sort_by_key(|s| s.datasets[0]);
    Ok(out)
}
