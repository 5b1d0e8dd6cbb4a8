//! Records how the runner is built, for the archives' `toolchain`: the compiler, the target,
//! the profile and the versions of the crates that do the measured work on either backend
//! (from the workspace's `Cargo.lock`). A crate locked at several versions (mio 0.8 for
//! monoio beside mio 1 for tokio) keeps every version, joined with " + " in version order.

use std::process::Command;

/// The crates whose versions an archive records.
const MEASURED: [&str; 11] = [
    "tokio",
    "mio",
    "monoio",
    "io-uring",
    "monoio-rustls",
    "socket2",
    "rustls",
    "tokio-rustls",
    "ring",
    "hdrhistogram",
    "libc",
];

fn main() {
    println!("cargo:rerun-if-changed=../Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|v| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=ECHOMARK_RUSTC={version}");
    println!("cargo:rustc-env=ECHOMARK_TARGET={}", env("TARGET"));
    println!("cargo:rustc-env=ECHOMARK_PROFILE={}", env("PROFILE"));
    println!("cargo:rustc-env=ECHOMARK_OPT_LEVEL={}", env("OPT_LEVEL"));
    println!("cargo:rustc-env=ECHOMARK_DEBUG={}", env("DEBUG"));
    let lock = std::fs::read_to_string("../Cargo.lock").unwrap_or_default();
    let mut versions: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for block in lock.split("[[package]]") {
        let field = |name: &str| {
            block.lines().find_map(|l| {
                l.strip_prefix(&format!("{name} = \""))
                    .and_then(|v| v.strip_suffix('"'))
            })
        };
        if let (Some(name), Some(version)) = (field("name"), field("version")) {
            if MEASURED.contains(&name) {
                versions.entry(name).or_default().push(version);
            }
        }
    }
    let deps: Vec<String> = versions
        .into_iter()
        .map(|(name, mut of_name)| {
            of_name.sort_by_key(|v| {
                v.split('.')
                    .map(|p| p.parse::<u64>().unwrap_or(0))
                    .collect::<Vec<_>>()
            });
            of_name.dedup();
            format!("{name}={}", of_name.join(" + "))
        })
        .collect();
    println!("cargo:rustc-env=ECHOMARK_DEPENDENCIES={}", deps.join(","));
}
