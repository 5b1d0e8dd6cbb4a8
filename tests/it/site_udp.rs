//! The site's UDP pages end to end: the report's scope, its loss explained by the kernel's
//! counters, and the receive buffer that fixes it.

use std::path::Path;

use serde_json::json;

use crate::common::site::*;
use crate::common::*;

#[test]
fn the_udp_scope_names_exactly_the_families_measured() {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("site");
    let page = std::fs::read_to_string(site.join("en/udp-report.md")).unwrap();
    let scope = section(&page, "Scope");
    // The families and paths of the committed archives that measured UDP (a path is
    // loopback unless the runs recorded another).
    let raw = Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results");
    let mut families = std::collections::BTreeSet::new();
    let mut paths = std::collections::BTreeSet::new();
    for dataset in std::fs::read_dir(&raw).unwrap().flatten() {
        let Ok(files) = std::fs::read_dir(dataset.path()) else {
            continue;
        };
        for file in files.flatten() {
            let Ok(text) = std::fs::read_to_string(file.path()) else {
                continue;
            };
            let Ok(archive) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            let Some(protocols) = archive["settings"]["protocols"].as_array() else {
                continue;
            };
            if !protocols.contains(&json!("udp")) {
                continue;
            }
            families.insert(
                archive["settings"]["address_family"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
            let kind = archive["results"][0]["metrics"]["target"]["path"]["kind"]
                .as_str()
                .unwrap_or("loopback");
            // In the order the pages list them.
            paths.insert(match kind {
                "loopback" => (0, "loopback"),
                "veth" => (1, "cross-namespace veth"),
                _ => (2, "network"),
            });
        }
    }
    let families_text = match (families.contains("ipv4"), families.contains("ipv6")) {
        (true, true) => "IPv4 and IPv6",
        (true, false) => "IPv4",
        (false, true) => "IPv6",
        (false, false) => panic!("no committed UDP archive"),
    };
    let expected = if paths.len() == 1 && paths.contains(&(0, "loopback")) {
        format!("short {families_text} loopback runs")
    } else {
        let names: Vec<&str> = paths.iter().map(|(_, n)| *n).collect();
        format!(
            "short {families_text} runs on the hosts named above, over {}",
            names.join(" and ")
        )
    };
    assert!(scope.contains(&expected), "{families:?} {paths:?}: {scope}");
    if !families.contains("ipv6") {
        assert!(!scope.contains("IPv6"), "{scope}");
    }
}

#[test]
fn the_udp_report_explains_a_loss_and_shows_the_buffer_that_fixes_it() {
    // The committed site, which `site::the_committed_site_is_up_to_date` proves is what the
    // committed archives build (building it again here cost a whole debug build).
    let files = tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("site"));
    let en = text(&files, "en/udp-report.md");
    let repro = section(&en, "Reproduction and raw evidence");
    // The lossy run comes from the isolation dataset, with its buffer flag, and is followed
    // by the run of the same load that passes with a larger buffer.
    let commands: Vec<&str> = repro
        .lines()
        .filter(|l| l.starts_with("echomark-runner once"))
        .collect();
    assert_eq!(commands.len(), 2, "{repro}");
    let flag = |c: &str| {
        c.split_once("--udp-server-recv-buffer ")
            .map(|(_, b)| b.split_whitespace().next().unwrap().parse::<u64>().unwrap())
    };
    let (lossy, passing) = (flag(commands[0]).unwrap(), flag(commands[1]).unwrap());
    assert!(passing > lossy, "{repro}");
    let without_buffer = |c: &str| {
        c.split(" --udp-server-recv-buffer")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(without_buffer(commands[0]), without_buffer(commands[1]));
    assert!(
        repro
            .contains("The same load passes when only the requested server receive buffer changes"),
        "{repro}"
    );
    // The callout's two numbers are the run's loss and the kernel's counter, which agree.
    let callout = repro
        .lines()
        .find(|l| l.starts_with("> **What the loss means.**"))
        .unwrap();
    assert!(callout.contains("rose by exactly"), "{callout}");
    assert!(
        repro.contains("(epyc2-20261201-dimensions/dimensions-udp.md)"),
        "{repro}"
    );
    // One row per dataset with UDP echoes in the conditions, with its date and hashes
    // (a dataset with imported runs, iperf3's datagrams, has its own page instead).
    let conditions = section(&en, "Test conditions");
    let has_udp = |dir: &Path| {
        let texts: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|f| std::fs::read_to_string(f.unwrap().path()).ok())
            .collect();
        texts.iter().any(|t| t.contains("\"protocol\": \"udp\""))
            && !texts.iter().any(|t| t.contains("\"echomark_import\""))
    };
    let datasets = std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("raw-results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && has_udp(p))
        .count();
    assert_eq!(
        conditions
            .lines()
            .filter(|l| l.starts_with("| [") && l.contains(" | 2026-12-0"))
            .count(),
        datasets,
        "{conditions}"
    );
    // The read-back sentences became one table.
    let linux = section(&en, "Socket buffers on Linux");
    assert!(
        linux.contains("| Dataset | Server receive buffer requested | Read back |"),
        "{linux}"
    );
    let zh = text(&files, "zh/udp-report.md");
    assert!(zh.contains("> **丢包说明**："), "{zh}");
}

#[test]
fn the_udp_callout_shows_the_kernel_counter_before_after_and_fragmentation() {
    let dir = tempfile::tempdir().unwrap();
    let demo = std::fs::read_to_string(Path::new(DEMO).join("archive.json")).unwrap();
    let mut a: serde_json::Value = serde_json::from_str(&demo).unwrap();
    for entry in a["results"].as_array_mut().unwrap() {
        let m = &mut entry["metrics"];
        let lost = m["udp_lost_messages"].as_u64().unwrap_or(0);
        if m.is_object() && m["protocol"] == "udp" {
            m["kernel_udp_rcvbuf_errors_delta"] = json!(lost);
            m["kernel_udp_rcvbuf_errors_before"] = json!(152_304);
            m["kernel_udp_rcvbuf_errors_after"] = json!(152_304 + lost);
            m["kernel_ip_frag_creates_delta"] = json!(0);
            m["kernel_ip_reasm_reqds_delta"] = json!(0);
            m["kernel_ip_reasm_oks_delta"] = json!(0);
            m["kernel_ip_reasm_fails_delta"] = json!(0);
        }
    }
    write(dir.path(), "counted", "a.json", &a.to_string());
    let out = dir.path().join("site");
    let o = build(&[&dir.path().join("counted")], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let files = tree(&out);
    let en = text(&files, "en/udp-report.md");
    let callout = en
        .lines()
        .find(|l| l.starts_with("> **What the loss means.**"))
        .unwrap_or_else(|| panic!("{en}"));
    let lost: String = callout
        .split("The client sent ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .to_string();
    let after = 152_304 + lost.replace(',', "").parse::<u64>().unwrap();
    let expected = format!(
        "read 152,304 before the run and {} after it, a delta of {lost}",
        echomark::format::count(after)
    );
    assert!(callout.contains(&expected), "{expected} in {callout}");
    assert!(callout.contains("created 0 IP fragments"), "{callout}");
    let zh = text(&files, "zh/udp-report.md");
    assert!(zh.contains("运行前为 152,304"), "{zh}");
}

/// The committed UDP report shows the seed's concrete counter line from a dataset that
/// recorded the counter, and its numbers agree: after − before = the delta = the loss.
#[test]
fn the_committed_udp_report_shows_the_counter_before_and_after_a_lossy_run() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("site/en/udp-report.md"),
    )
    .unwrap();
    let number = |after: &str| -> u64 {
        let at = page.find(after).unwrap_or_else(|| panic!("no {after:?}"));
        let digits: String = page[at + after.len()..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    };
    let lost = number("The client sent ");
    let before = number("`UdpRcvbufErrors` read ");
    let after = number("before the run and ");
    let delta = number("after it, a delta of ");
    assert_eq!((after - before, delta), (lost, lost), "{before} → {after}");
}
