//! The same configurations measured on different hosts. Datasets are grouped by the host
//! their archives describe; every other host is set against the base host (the host of the
//! first dataset) through one pair of datasets, one from each host: datasets built from a
//! clean tree and complete are preferred, then the pair that measured the most
//! configurations in common, then the newest. A pair compares only datasets of one address
//! family and one path.

use std::collections::{BTreeMap, HashSet};

use crate::analysis::aggregate::Configuration;
use crate::analysis::method;
use crate::model::Dataset;
use echomark_archive::CaseKey;

/// What makes two datasets come from one host: the host fields every archive format
/// records. Fields newer archives add (governor, SMT, CPU signature) are left out, so an
/// older dataset of the same machine still counts as that machine.
pub fn host_key(d: &Dataset) -> Option<String> {
    let h = d.host()?;
    serde_json::to_string(&(
        &h.cpu,
        h.logical_cpus,
        &h.machine,
        &h.system,
        &h.release,
        h.memory_bytes,
        &h.model,
    ))
    .ok()
}

/// The name pages give `d`'s host: the one the user recorded (`matrix --host-name`), else
/// one derived from what the archive recorded, stable across datasets of one machine: the
/// CPU's family word and logical CPU count, and four hex digits of [`host_key`]
/// (`epyc2-3fa1`, `xeon2-9c04`, `m414-07be`). `None` when the dataset records no host.
pub fn host_name(d: &Dataset) -> Option<String> {
    let h = d.host()?;
    if let Some(name) = &h.name {
        return Some(name.clone());
    }
    let key = host_key(d)?;
    const NOISE: [&str; 12] = [
        "amd",
        "intel",
        "r",
        "tm",
        "processor",
        "cpu",
        "apple",
        "genuine",
        "core",
        "with",
        "virtual",
        "qemu",
    ];
    let cpu = h.cpu.as_deref().unwrap_or_default().to_ascii_lowercase();
    let family = cpu
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| !w.is_empty() && !NOISE.contains(w) && !w.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or("host");
    let family: String = family.chars().take(12).collect();
    let cpus = h.logical_cpus.map(|n| n.to_string()).unwrap_or_default();
    Some(format!(
        "{family}{cpus}-{:04x}",
        crate::output::fingerprint(&key) >> 16
    ))
}

/// One host against the base host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPair {
    /// The base host's dataset (an index into the datasets).
    pub base: usize,
    /// The other host's dataset.
    pub subject: usize,
    /// Closed-loop configurations both datasets measured.
    pub common: usize,
    /// Whether both datasets were built from a clean tree and every archive of both is
    /// complete: what the choice prefers.
    pub sound: bool,
}

/// Every host a dataset names, in the order of their first dataset, with their datasets.
pub fn hosts<'a>(datasets: impl IntoIterator<Item = &'a Dataset>) -> Vec<Vec<usize>> {
    let mut order: Vec<String> = Vec::new();
    let mut members: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, d) in datasets.into_iter().enumerate() {
        let Some(key) = host_key(d) else { continue };
        if !members.contains_key(&key) {
            order.push(key.clone());
        }
        members.entry(key).or_default().push(i);
    }
    order
        .into_iter()
        .filter_map(|k| members.remove(&k))
        .collect()
}

/// Each host after the first against the first, through its best pair of datasets (of one
/// address family, one path and one [`method`]); hosts with no configuration in common with the base host
/// are left out.
pub fn pairs(datasets: &[Dataset], configurations: &[Configuration]) -> Vec<HostPair> {
    let hosts = hosts(datasets);
    let Some((base_host, others)) = hosts.split_first() else {
        return Vec::new();
    };
    let keys: Vec<HashSet<&CaseKey>> = datasets
        .iter()
        .map(|d| {
            configurations
                .iter()
                .filter(|c| c.dataset == d.name)
                .map(|c| &c.key)
                .collect()
        })
        .collect();
    let family = |i: usize| datasets[i].files.first().map(|f| f.address_family);
    let methods: Vec<method::Method> = datasets.iter().map(method::of).collect();
    let recorded = |i: usize| datasets[i].recorded_at().unwrap_or("");
    // A dirty build or an unfinished archive is a weaker witness than a clean, whole one.
    let sound = |i: usize| datasets[i].is_sound();
    others
        .iter()
        .filter_map(|host| {
            base_host
                .iter()
                .flat_map(|&b| host.iter().map(move |&s| (b, s)))
                // One address family, one path and one method: a veth dataset of one host
                // is not set against a loopback one of another, nor a server apart against
                // one sharing its clients' threads.
                .filter(|&(b, s)| {
                    family(b) == family(s)
                        && datasets[b].path_kind() == datasets[s].path_kind()
                        && methods[b] == methods[s]
                })
                .map(|(b, s)| HostPair {
                    base: b,
                    subject: s,
                    common: keys[b].intersection(&keys[s]).count(),
                    sound: sound(b) && sound(s),
                })
                .filter(|p| p.common > 0)
                .max_by(|x, y| {
                    x.sound
                        .cmp(&y.sound)
                        .then_with(|| x.common.cmp(&y.common))
                        .then_with(|| recorded(x.subject).cmp(recorded(y.subject)))
                        .then_with(|| recorded(x.base).cmp(recorded(y.base)))
                        // The earlier name on a full tie, so the choice never depends on order.
                        .then_with(|| datasets[y.base].name.cmp(&datasets[x.base].name))
                        .then_with(|| datasets[y.subject].name.cmp(&datasets[x.subject].name))
                })
        })
        .collect()
}
