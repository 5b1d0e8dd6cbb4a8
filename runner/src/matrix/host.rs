//! The machine description recorded in every archive (not the system's host name; the
//! user may give it a name of their own, `--host-name`).

use std::collections::BTreeSet;
use std::fs;

use echomark_archive::Host;

/// Reads the host facts from uname, `/proc/cpuinfo`, `/proc/meminfo` and `/etc/os-release`.
pub fn describe() -> Host {
    let (system, release, machine) = uname();
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let os_release = fs::read_to_string("/etc/os-release").unwrap_or_default();
    Host {
        system,
        release,
        machine,
        cpu: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".to_string()),
        logical_cpus: crate::placement::online_cpus(),
        physical_cpus: physical_cores(&cpuinfo),
        memory_bytes: fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| mem_total(&m)),
        os_name: os_field(&os_release, "NAME"),
        os_version: os_field(&os_release, "VERSION_ID")
            .or_else(|| os_field(&os_release, "VERSION")),
        cpu_signature: cpu_signature(&cpuinfo),
        smt_active: fs::read_to_string("/sys/devices/system/cpu/smt/active")
            .ok()
            .map(|v| v.trim() == "1"),
        cpu_governor: fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
            .ok()
            .map(|v| v.trim().to_string()),
        name: None,
    }
}

/// "family 25, model 1, stepping 1" of the first processor, where the kernel lists them.
pub fn cpu_signature(cpuinfo: &str) -> Option<String> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    Some(format!(
        "family {}, model {}, stepping {}",
        field("cpu family")?,
        field("model")?,
        field("stepping")?
    ))
}

/// How this binary was built (recorded by `build.rs`).
pub fn toolchain() -> echomark_archive::Toolchain {
    echomark_archive::Toolchain {
        rustc: env!("ECHOMARK_RUSTC").to_string(),
        target: env!("ECHOMARK_TARGET").to_string(),
        profile: env!("ECHOMARK_PROFILE").to_string(),
        opt_level: env!("ECHOMARK_OPT_LEVEL").to_string(),
        debug_info: env!("ECHOMARK_DEBUG").to_string(),
        dependencies: env!("ECHOMARK_DEPENDENCIES")
            .split(',')
            .filter_map(|d| d.split_once('='))
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
    }
}

fn uname() -> (String, String, String) {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated C strings.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return ("unknown".into(), "unknown".into(), "unknown".into());
        }
        let s = |f: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(f.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        (s(&u.sysname), s(&u.release), s(&u.machine))
    }
}

/// `model name` of the first processor.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_string())
    })
}

/// Distinct (physical id, core id) pairs; `None` when the kernel does not list them.
pub fn physical_cores(cpuinfo: &str) -> Option<u64> {
    let mut cores = BTreeSet::new();
    for block in cpuinfo.split("\n\n") {
        let field = |name: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
        };
        if let (Some(p), Some(c)) = (field("physical id"), field("core id")) {
            cores.insert((p, c));
        }
    }
    (!cores.is_empty()).then_some(cores.len() as u64)
}

/// `MemTotal` in bytes.
pub fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A `KEY=value` field of os-release, unquoted.
pub fn os_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k == key).then(|| v.trim().trim_matches('"').to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpuinfo_meminfo_and_os_release() {
        let cpuinfo = "processor\t: 0\nmodel name\t: Test CPU @ 3GHz\nphysical id\t: 0\ncore id\t: 0\n\n\
                       processor\t: 1\nmodel name\t: Test CPU @ 3GHz\nphysical id\t: 0\ncore id\t: 0\n\n\
                       processor\t: 2\nphysical id\t: 0\ncore id\t: 1\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("Test CPU @ 3GHz"));
        assert_eq!(physical_cores(cpuinfo), Some(2));
        assert_eq!(
            mem_total("MemTotal:       24576000 kB\nMemFree: 1 kB"),
            Some(24_576_000 * 1024)
        );
        let os = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\n";
        assert_eq!(os_field(os, "NAME").as_deref(), Some("Debian GNU/Linux"));
        assert_eq!(os_field(os, "VERSION_ID").as_deref(), Some("12"));
        let sig = "cpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 0\n";
        assert_eq!(
            cpu_signature(sig).as_deref(),
            Some("family 25, model 17, stepping 0")
        );
        assert_eq!(cpu_signature("model name : x\n"), None);
    }

    #[test]
    fn this_host_and_build_are_described() {
        let h = describe();
        assert!(h.logical_cpus >= 1 && !h.system.is_empty());
        let t = toolchain();
        assert!(t.rustc.starts_with("rustc "), "{t:?}");
        assert!(t.dependencies.contains_key("tokio"), "{t:?}");
        // Both backends' stacks, so a monoio archive names what measured it.
        for name in ["monoio", "io-uring", "monoio-rustls", "rustls"] {
            assert!(t.dependencies.contains_key(name), "{name} missing: {t:?}");
        }
        // mio is locked twice (0.8 under monoio, 1.x under tokio): both versions are kept.
        let mio = &t.dependencies["mio"];
        assert!(mio.contains(" + ") && mio.starts_with("0."), "{mio}");
    }
}
