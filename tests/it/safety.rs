//! Nothing the user has is lost, no archive string reaches a page live, the validator is as
//! strict as it promises, and messages say what happened: the real binary, real folders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;
use pulldown_cmark::{Event, Parser, Tag};
use serde_json::{json, Value};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/site/demo");

fn build(raw: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "build",
        "--raw",
        raw.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    echomark(&args)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

/// Names in `dir` that a build leaves only while it runs or after a kill.
fn staging_leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".new-") || n.contains(".old-"))
        .collect()
}

#[test]
fn an_unrelated_folder_and_a_users_file_are_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("thesis.txt"), "years of work").unwrap();
    let o = build(Path::new(DEMO), &mine, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not written by `echomark build`"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(mine.join("thesis.txt")).unwrap(),
        b"years of work"
    );

    // A site echomark wrote is replaced; a file a user added inside it is not lost.
    let site = dir.path().join("site");
    assert!(build(Path::new(DEMO), &site, &[]).status.success());
    assert!(
        build(Path::new(DEMO), &site, &[]).status.success(),
        "a rebuild replaces its own site"
    );
    std::fs::write(site.join("CNAME"), "bench.example.org").unwrap();
    let o = build(Path::new(DEMO), &site, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("CNAME"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(site.join("CNAME")).unwrap(),
        b"bench.example.org"
    );
    // --force is the user's explicit choice.
    assert!(build(Path::new(DEMO), &site, &["--force"]).status.success());
    assert!(!site.join("CNAME").exists());
}

#[test]
fn out_may_not_be_a_file_or_overlap_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let ds = raw.join("demo");
    std::fs::create_dir_all(&ds).unwrap();
    std::fs::copy(
        Path::new(DEMO).join("archive.json"),
        ds.join("archive.json"),
    )
    .unwrap();
    let before = tree(&raw);
    for out in [
        ds.clone(),
        ds.join("site"),
        raw.clone(),
        dir.path().to_path_buf(),
    ] {
        let o = build(&ds, &out, &["--force"]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}: {}",
            out.display(),
            stderr(&o)
        );
        assert!(stderr(&o).contains("overlaps the input"), "{}", stderr(&o));
    }
    assert_eq!(tree(&raw), before, "the input is untouched");
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "keep").unwrap();
    let o = build(&ds, &file, &["--force"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is a file"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&file).unwrap(), b"keep");
    assert!(staging_leftovers(dir.path()).is_empty());
}

fn crash(raw: &Path, out: &Path, point: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_echomark"))
        .args([
            "build",
            "--raw",
            raw.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .env("ECHOMARK_TEST_CRASH", point)
        .output()
        .unwrap()
}

#[test]
fn a_kill_at_either_point_of_the_swap_leaves_a_whole_site_and_the_next_build_cleans_up() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    assert!(build(Path::new(DEMO), &site, &[]).status.success());
    let old = tree(&site);
    // Killed with the new tree staged: the old site is untouched.
    let o = crash(Path::new(DEMO), &site, "staged");
    assert_eq!(o.status.signal(), Some(9), "{}", stderr(&o));
    assert_eq!(tree(&site), old);
    assert!(
        !staging_leftovers(dir.path()).is_empty(),
        "the kill left its staging tree"
    );
    // Killed right after the exchange: the new site is in place, complete.
    let o = crash(Path::new(DEMO), &site, "exchanged");
    assert_eq!(o.status.signal(), Some(9));
    let check = echomark(&["check", "--raw", DEMO, "--out", site.to_str().unwrap()]);
    assert!(check.status.success(), "{}", stderr(&check));
    // The next build removes what the killed ones left.
    assert!(build(Path::new(DEMO), &site, &[]).status.success());
    assert!(
        staging_leftovers(dir.path()).is_empty(),
        "{:?}",
        staging_leftovers(dir.path())
    );
}

#[test]
fn two_builds_into_one_folder_take_turns() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_echomark"))
            .args(["build", "--raw", DEMO, "--out", site.to_str().unwrap()])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(
        a.status.success() && b.status.success(),
        "{} {}",
        stderr(&a),
        stderr(&b)
    );
    let check = echomark(&["check", "--raw", DEMO, "--out", site.to_str().unwrap()]);
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(staging_leftovers(dir.path()).is_empty());
}

/// Markdown that, unescaped, would open a remote link and image, close a code fence, and
/// run a script.
const PAYLOAD: &str = "x] ``` [a](https://evil.example/a) ![i](https://evil.example/i.png)\n```\n<script>alert(1)</script> [j](javascript:alert(2)) | =cmd";

/// Checks that `md` and `html` hold no live link, image or script from the payload.
fn assert_inert(path: &str, text: &str) {
    if path.ends_with(".md") {
        for event in Parser::new_ext(text, pulldown_cmark::Options::ENABLE_TABLES) {
            match event {
                Event::Start(Tag::Link { dest_url, .. })
                | Event::Start(Tag::Image { dest_url, .. }) => {
                    assert!(
                        !dest_url.contains("evil.example") && !dest_url.starts_with("javascript:"),
                        "{path}: live link to {dest_url}"
                    );
                }
                Event::Html(h) | Event::InlineHtml(h) => {
                    assert!(!h.contains("<script"), "{path}: raw HTML {h}")
                }
                _ => {}
            }
        }
    } else {
        // The payload's script, not the explorer's own `<script src>`.
        for bad in [
            "<script>alert",
            "href=\"https://evil",
            "src=\"https://evil",
            "href=\"javascript:",
        ] {
            assert!(!text.contains(bad), "{path} contains {bad}");
        }
    }
}

#[test]
fn injection_in_every_archive_string_stays_inert() {
    let mut a: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(DEMO).join("archive.json")).unwrap(),
    )
    .unwrap();
    let p = json!(PAYLOAD);
    for field in [
        "recorded_at_utc",
        "git_head",
        "git_status",
        "source_sha256",
        "executable_sha256",
        "runner_sha256",
    ] {
        a[field] = p.clone();
    }
    for field in [
        "system",
        "release",
        "machine",
        "cpu",
        "os_name",
        "os_version",
    ] {
        a["host"][field] = p.clone();
    }
    for r in a["results"].as_array_mut().unwrap() {
        r["command"] = json!(["/x/echomark-runner", "once", PAYLOAD]);
        r["stderr"] = p.clone();
        r["started_at_utc"] = p.clone();
        if r["metrics"]["ok"] == json!(false) {
            r["metrics"]["error"] = p.clone();
            r["error"] = p.clone();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let raw = write(dir.path(), "=cmd <b>", "a [x](y).json", &a.to_string());
    let out = dir.path().join("site");
    let o = build(raw.parent().unwrap(), &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let files = tree(&out);
    let mut pages = 0;
    for (path, bytes) in &files {
        let path = path.to_string_lossy();
        if path.ends_with(".md") || path.ends_with(".html") || path.ends_with(".svg") {
            assert_inert(&path, &String::from_utf8_lossy(bytes));
            pages += 1;
        }
    }
    assert!(pages > 20, "{pages}");
    let overview = files
        .iter()
        .find(|(p, _)| p.ends_with("overview.md") && p.starts_with("en"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .unwrap();
    assert!(overview.contains("&lt;script&gt;"), "shown as text");
    // A spreadsheet would run "=cmd …" as a formula; the CSV neutralises it.
    let csv = files
        .iter()
        .find(|(p, _)| p.ends_with("summary.csv"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .unwrap();
    let row = csv.lines().nth(1).unwrap();
    assert!(row.starts_with("'=cmd"), "{row}");
}

#[test]
fn different_dataset_names_get_different_pages_and_equal_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let demo = std::fs::read_to_string(Path::new(DEMO).join("archive.json")).unwrap();
    for name in ["a b", "a_b", "数据", "测试"] {
        write(&raw, name, "archive.json", &demo);
    }
    let out = dir.path().join("site");
    let o = build(&raw, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let overviews: Vec<PathBuf> = tree(&out)
        .into_keys()
        .filter(|p| p.starts_with("en") && p.ends_with("overview.md"))
        .collect();
    assert_eq!(overviews.len(), 4, "{overviews:?}");
    assert_eq!(
        std::fs::read_dir(out.join("data"))
            .unwrap()
            .filter(|e| e.as_ref().is_ok_and(|e| e.path().is_dir()))
            .count(),
        4,
        "every dataset keeps its raw archive"
    );
    // The same folder name from two places would merge two datasets: refused.
    let (x, y) = (dir.path().join("x"), dir.path().join("y"));
    write(&x, "ds", "archive.json", &demo);
    write(&y, "ds", "archive.json", &demo);
    let o = echomark(&[
        "validate",
        x.join("ds").to_str().unwrap(),
        y.join("ds").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("x/ds") && e.contains("y/ds") && e.contains("rename one"),
        "{e}"
    );
}

#[test]
fn the_validator_refuses_what_it_promised_to() {
    let demo: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(DEMO).join("archive.json")).unwrap(),
    )
    .unwrap();
    let text = demo.to_string();
    let mut cases: Vec<(&str, String, &str)> = vec![
        (
            "top-level array",
            serde_json::to_string(&demo.as_object().unwrap().values().collect::<Vec<_>>()).unwrap(),
            "must hold one JSON object",
        ),
        (
            "duplicate host key",
            text.replacen("\"cpu\":", "\"cpu\": \"x\", \"cpu\":", 1),
            "duplicate field `cpu`",
        ),
        (
            "unknown protocol",
            text.replacen("\"protocol\":\"tcp\"", "\"protocol\":\"quic\"", 1),
            "quic",
        ),
        (
            "unknown IO model",
            text.replacen("\"io_model\":\"shared\"", "\"io_model\":\"owned\"", 1),
            "owned",
        ),
    ];
    let mut partial = demo.clone();
    partial["results"].as_array_mut().unwrap().truncate(1);
    partial["failed_measurements"] = json!(0);
    cases.push((
        "complete with one run",
        partial.to_string(),
        "complete: is true, but 31 of the 32 planned runs are missing",
    ));
    let mut outside = demo.clone();
    outside["results"][0]["payload_bytes"] = json!(99);
    cases.push((
        "a run outside the plan",
        outside.to_string(),
        "results[0]: tcp 99 B",
    ));
    for (what, text, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "ds", "bad.json", &text);
        let o = echomark(&["validate", path.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(expected),
            "{what}: expected {expected:?} in {}",
            stderr(&o)
        );
    }
}

#[test]
fn messages_name_the_real_problem_and_cannot_split_lines() {
    let dir = tempfile::tempdir().unwrap();
    // A symlink loop is not a missing file.
    let looped = dir.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let o = echomark(&["validate", looped.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("symbolic links"), "{}", stderr(&o));
    // A newline in a file name is shown escaped, on one line.
    let path = write(
        dir.path(),
        "ds",
        "bad\nname.json",
        "{\"schema_version\": 2,",
    );
    let o = echomark(&["validate", path.to_str().unwrap()]);
    let e = stderr(&o);
    assert!(e.contains("bad\\nname.json"), "{e}");
    assert!(!e.contains("bad\nname"), "{e}");
    // A name too long for the file system names the path it concerns.
    let long = dir.path().join("x".repeat(300));
    let o = build(Path::new(DEMO), &long, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains(&"x".repeat(300)), "{}", stderr(&o));
}

#[test]
fn dataset_names_never_stand_where_a_site_page_does_nor_smuggle_control_characters() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let archive = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("raw-results/epyc2-20261202-udp-buffers/archive.json");
    for name in [
        "index.html",
        "methodology.md",
        "udp-report.html",
        "datasets",
        "bad\u{1b}[31m\u{7}name",
    ] {
        std::fs::create_dir_all(raw.join(name)).unwrap();
        std::fs::copy(&archive, raw.join(name).join("archive.json")).unwrap();
    }
    let out = dir.path().join("site");
    let o = build(&raw, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The site's own pages are still files; each dataset got a folder of its own.
    assert!(out.join("en/index.html").is_file() && out.join("en/methodology.md").is_file());
    let folders: Vec<String> = std::fs::read_dir(out.join("en"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir() && e.file_name() != "charts")
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "datasets")
        .collect();
    assert_eq!(folders.len(), 5, "{folders:?}");
    assert!(
        out.join("en/datasets/index.html").is_file(),
        "the site's own dataset lists"
    );
    for page in ["en/index.html", "zh/index.html"] {
        let html = std::fs::read_to_string(out.join(page)).unwrap();
        assert!(
            !html.contains(['\u{1b}', '\u{7}']),
            "{page} carries a control character"
        );
    }
    // An archive that is a symlink to a file outside its folder is refused, not copied.
    let linked = dir.path().join("linked");
    std::fs::create_dir_all(linked.join("d")).unwrap();
    std::os::unix::fs::symlink(&archive, linked.join("d").join("archive.json")).unwrap();
    let o = build(&linked, &dir.path().join("site2"), &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
}
