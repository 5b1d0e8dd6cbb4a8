//! What the site tests share: the demo dataset, the committed fixtures they build, the real
//! `echomark build`, and reading the site it wrote.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::echomark;

pub const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/site/demo");

pub fn build(raw: &[&Path], out: &Path) -> std::process::Output {
    let mut args: Vec<String> = vec!["build".into()];
    for r in raw {
        args.push("--raw".into());
        args.push(r.display().to_string());
    }
    args.push("--out".into());
    args.push(out.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    echomark(&args)
}

pub fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

pub fn text(files: &BTreeMap<String, Vec<u8>>, path: &str) -> String {
    String::from_utf8(
        files
            .get(path)
            .unwrap_or_else(|| panic!("{path} not generated"))
            .clone(),
    )
    .unwrap()
}

/// The part of a Markdown page from `## {heading}` to the next second-level heading.
pub fn section<'a>(page: &'a str, heading: &str) -> &'a str {
    let start = page
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?} in:\n{page}"));
    let rest = &page[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |e| e + 3);
    &rest[..end]
}

/// The lines of the section `## heading` of a Markdown page (up to the next `## `).
pub fn md_section<'a>(page: &'a str, heading: &str) -> Vec<&'a str> {
    let start = format!("## {heading}");
    page.lines()
        .skip_while(|l| *l != start)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect()
}

pub const LATENCY_CURVE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/raw-results/epyc2-20261201-latency-curve"
);

pub const BACKENDS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/raw-results/xeon2-20261202-backends"
);

/// An archive whose runs crossed a veth pair into another network namespace: the veth
/// path in `interface`, on every run of the committed socat archive.
pub fn across_veth(interface: &str) -> serde_json::Value {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/epyc2-20261202-external/socat.json");
    let mut a: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed).unwrap()).unwrap();
    a["settings"]["external_server"]["machine"] = a["host"].clone();
    for r in a["results"].as_array_mut().unwrap() {
        r["server"]["separate_network_namespace"] = json!(true);
        r["metrics"]["target"]["path"] = json!({
            "kind": "veth",
            "interface": interface,
            "mtu": 1500,
            "client_address": "10.213.0.2"
        });
    }
    a
}

/// The headless browser the site tests drive: Debian's Chromium, or Google Chrome where a
/// runner has it.
pub fn chromium() -> Option<PathBuf> {
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}
