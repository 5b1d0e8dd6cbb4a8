//! `echomark import`: the committed golden outputs of each real tool (tests/fixtures/import,
//! made by scripts/make-import-fixtures against `echomark-runner serve`) imported and checked
//! field by field against the tool's own output; malformed, truncated and mismatched files
//! refused by name with nothing written; an imported dataset built, validated and compared.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::echomark;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(rel)
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Imports `files` of `tool` into `out` with `extra` flags; the archive, or the stderr of a
/// refused import with its exit code.
fn import(
    tool: &str,
    files: &[PathBuf],
    out: &Path,
    extra: &[&str],
) -> Result<Value, (i32, String)> {
    let mut args = vec!["import", "--from", tool, "--out", out.to_str().unwrap()];
    let files: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    args.extend(&files);
    args.extend(extra);
    let o = echomark(&args);
    if o.status.success() {
        Ok(json(&out.join(format!("{tool}.json"))))
    } else {
        Err((
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ))
    }
}

fn percentile(run: &Value, at: f64) -> f64 {
    run["latency"]["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| (p["at"].as_f64().unwrap() - at).abs() < 1e-9)
        .unwrap_or_else(|| panic!("p{at} in {run}"))["us"]
        .as_f64()
        .unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

const OHA_CLOSED: &str =
    "oha --no-tui --output-format json -z 2s -c 16 -m POST -D body http://127.0.0.1:PORT/echo";
const OHA_OPEN: &str = "oha --no-tui --output-format json -z 2s -c 16 -q 5000 --latency-correction -m POST -D body http://127.0.0.1:PORT/echo";
const OHA_REFUSED: &str =
    "oha --no-tui --output-format json -z 1s -c 4 -m POST -D body http://127.0.0.1:CLOSED/echo";

#[test]
fn oha_output_is_imported_field_by_field_with_its_open_loop_and_its_failed_run() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        "oha/closed-16.json",
        "oha/open-16-q5000.json",
        "oha/refused.json",
    ]
    .map(fixture);
    let a = import(
        "oha",
        &files,
        dir.path(),
        &[
            "--tool-version",
            "1.16.0",
            "--payload",
            "1024",
            "--command",
            OHA_CLOSED,
            "--command",
            OHA_OPEN,
            "--command",
            OHA_REFUSED,
        ],
    )
    .unwrap();
    assert_eq!(a["tool"], "oha");
    assert_eq!(a["tool_version"], "1.16.0");
    assert!(a["host"].is_null(), "no --host: not recorded");
    let runs = a["runs"].as_array().unwrap();
    for (run, file) in runs.iter().zip(&files) {
        let raw = json(file);
        let answered: u64 = raw["statusCodeDistribution"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(run["responses"], answered);
        assert!(close(
            run["load"]["duration_seconds"].as_f64().unwrap(),
            raw["summary"]["total"].as_f64().unwrap()
        ));
        assert!(close(
            run["reported_rate"].as_f64().unwrap(),
            raw["summary"]["requestsPerSec"].as_f64().unwrap()
        ));
        assert_eq!(run["status_codes"], raw["statusCodeDistribution"]);
        assert_eq!(
            run["unfinished"],
            raw["errorDistribution"]["aborted due to deadline"]
        );
        assert_eq!(run["source_sha256"].as_str().unwrap().len(), 64);
        if answered > 0 {
            for (name, at) in [("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9)] {
                let theirs = raw["latencyPercentiles"][name].as_f64().unwrap() * 1e6;
                assert!(close(percentile(run, at), theirs), "{name}");
            }
            assert_eq!(
                run["latency"]["fidelity"], "summary-only",
                "11 buckets are not every request"
            );
            let buckets: u64 = run["latency"]["histogram"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["count"].as_u64().unwrap())
                .sum();
            let theirs: u64 = raw["responseTimeHistogram"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(buckets, theirs, "the tool's histogram kept whole");
        }
    }
    assert_eq!(runs[0]["load"]["connections"], 16);
    assert_eq!(runs[0]["load"]["loop_kind"], "closed");
    assert_eq!(runs[0]["failed"], false);
    assert_eq!(runs[1]["load"]["loop_kind"], "open");
    assert_eq!(runs[1]["load"]["rate"], 5000.0);
    assert_eq!(runs[1]["load"]["latency_correction"], true);
    assert_eq!(
        runs[2]["failed"], true,
        "a run the tool saw fail is kept, marked failed"
    );
    assert!(runs[2]["failure"][0]
        .as_str()
        .unwrap()
        .contains("Connection refused"));
    assert!(runs[2]["latency"].is_null());
}

#[test]
fn wrk_autocannon_locust_and_iperf3_outputs_are_imported_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    // wrk: the JSON line's exact figures, and the text's own distribution without it.
    let wrk_files = [
        "wrk/closed-16-json-hook.txt",
        "wrk/closed-16.txt",
        "wrk/closed-by-server-json-hook.txt",
    ]
    .map(fixture);
    let a = import(
        "wrk",
        &wrk_files,
        &dir.path().join("wrk"),
        &["--tool-version", "4.1.0", "--payload", "1024"],
    )
    .unwrap();
    let runs = a["runs"].as_array().unwrap();
    let hook: Value = serde_json::from_str(
        std::fs::read_to_string(&wrk_files[0])
            .unwrap()
            .lines()
            .find(|l| l.starts_with('{'))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(runs[0]["responses"], hook["requests"]);
    assert_eq!(runs[0]["load"]["connections"], hook["connections"]);
    assert_eq!(runs[0]["load"]["payload_bytes"], hook["body_bytes"]);
    assert!(close(
        runs[0]["load"]["duration_seconds"].as_f64().unwrap(),
        hook["duration_us"].as_f64().unwrap() / 1e6
    ));
    assert_eq!(
        percentile(&runs[0], 99.0),
        hook["latency_us"]["percentiles"]["99"].as_f64().unwrap()
    );
    assert_eq!(
        runs[0]["reported_rate"], 209500.25,
        "Requests/sec as printed"
    );
    assert_eq!(runs[1]["responses"], 441149);
    assert_eq!(percentile(&runs[1], 99.0), 143.0, "'99%  143.00us'");
    assert_eq!(runs[1]["load"]["threads"], 1);
    assert_eq!(runs[2]["failed"], true);
    assert_eq!(runs[2]["errors"]["socket read"], 38227);
    assert!(
        runs[2]["latency"].is_null(),
        "min −2⁶³ of a run without requests is not a latency"
    );

    let ac = fixture("autocannon/closed-16.json");
    let a = import(
        "autocannon",
        std::slice::from_ref(&ac),
        &dir.path().join("autocannon"),
        &[
            "--tool-version",
            "9.0.0",
            "--command",
            "autocannon --json -c 16 -d 2 -m POST http://127.0.0.1:PORT/echo",
            "--payload",
            "1024",
        ],
    )
    .unwrap();
    let (run, raw) = (&a["runs"][0], json(&ac));
    assert_eq!(run["responses"], raw["2xx"]);
    assert_eq!(run["load"]["connections"], raw["connections"]);
    assert_eq!(run["load"]["pipelining"], raw["pipelining"]);
    assert_eq!(run["started_at_utc"], raw["start"]);
    assert_eq!(
        percentile(run, 99.99),
        raw["latency"]["p99_99"].as_f64().unwrap() * 1000.0
    );
    assert_eq!(
        run["latency"]["resolution_us"], 1000.0,
        "whole milliseconds"
    );

    let locust = fixture("locust/closed-16.json");
    let a = import(
        "locust",
        std::slice::from_ref(&locust),
        &dir.path().join("locust"),
        &["--tool-version", "2.47.0", "--command", "locust -f locustfile.py --headless -u 16 -r 16 -t 2s --host http://127.0.0.1:PORT --json"],
    )
    .unwrap();
    let (run, raw) = (&a["runs"][0], &json(&locust)[0]);
    assert_eq!(
        run["responses"],
        raw["num_requests"].as_u64().unwrap() - raw["num_failures"].as_u64().unwrap()
    );
    assert_eq!(run["load"]["connections"], 16);
    assert_eq!(
        run["latency"]["fidelity"], "lossless",
        "every request is in its histogram"
    );
    // Nearest rank over Locust's own counts: 141 at 0 ms, 19,898 at 1 ms of 20,952.
    assert_eq!(percentile(run, 50.0), 1000.0);
    assert_eq!(percentile(run, 99.0), 2000.0);

    let iperf = ["iperf3/tcp.json", "iperf3/udp.json", "iperf3/refused.json"].map(fixture);
    let a = import("iperf3", &iperf, &dir.path().join("iperf3"), &[]).unwrap();
    assert_eq!(a["tool_version"], "3.12", "iperf3 names its own version");
    let runs = a["runs"].as_array().unwrap();
    let (tcp, udp) = (json(&iperf[0]), json(&iperf[1]));
    assert_eq!(runs[0]["protocol"], "tcp");
    assert_eq!(
        runs[0]["stream"]["sent_bits_per_second"],
        tcp["end"]["sum_sent"]["bits_per_second"]
    );
    assert_eq!(
        runs[0]["stream"]["retransmits"],
        tcp["end"]["sum_sent"]["retransmits"]
    );
    assert_eq!(
        runs[0]["stream"]["sender_cpu_percent"],
        tcp["end"]["cpu_utilization_percent"]["host_total"]
    );
    assert_eq!(runs[1]["protocol"], "udp");
    assert_eq!(
        runs[1]["stream"]["lost_datagrams"],
        udp["end"]["sum"]["lost_packets"]
    );
    assert_eq!(
        runs[1]["stream"]["received_bytes"],
        udp["end"]["sum_received"]["bytes"]
    );
    assert_eq!(
        runs[1]["load"]["loop_kind"], "open",
        "-b 1G paces the datagrams"
    );
    assert_eq!(runs[2]["failed"], true);
    assert_eq!(
        runs[2]["failure"][0],
        "iperf3: unable to connect to server: Connection refused"
    );
}

/// The fixture `rel` as text.
fn fixture_text(rel: &str) -> String {
    std::fs::read_to_string(fixture(rel)).unwrap()
}

/// `text` written as `name` in `dir`.
fn written(dir: &Path, name: &str, text: String) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `text` with the first occurrence of `from` replaced, asserting there is one.
fn edited(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{from:?}");
    text.replacen(from, to, 1)
}

#[test]
fn malformed_truncated_and_mismatched_files_are_named_errors_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let bad = |name: &str, text: String| written(dir.path(), name, text);
    let oha = fixture_text("oha/closed-16.json");
    let ac = fixture_text("autocannon/closed-16.json");
    let wrk = fixture_text("wrk/closed-16-json-hook.txt");
    let locust = fixture_text("locust/closed-16.json");
    let iperf = fixture_text("iperf3/tcp.json");
    let oha_cmd = ["--command", "oha -c 16 http://x/"];
    let ac_cmd = ["--command", "autocannon -c 16 http://x/"];
    let locust_cmd = ["--command", "locust -u 16"];
    let cases: Vec<Refused> = vec![
        (
            "oha",
            bad("cut.json", oha[..oha.len() / 2].to_string()),
            &oha_cmd,
            &["cut.json", "truncated"],
        ),
        (
            "oha",
            bad(
                "p99.json",
                edited(&oha, "\"p99\": 0.000269826", "\"p99\": null"),
            ),
            &oha_cmd,
            &["latencyPercentiles.p99", "missing"],
        ),
        (
            "oha",
            bad(
                "neg.json",
                edited(&oha, "\"p50\": 0.00010798", "\"p50\": -0.00010798"),
            ),
            &oha_cmd,
            &["latencyPercentiles.p50", "not negative"],
        ),
        (
            "oha",
            bad(
                "newer.json",
                edited(&oha, "\"rps\":", "\"rpsV2\": {}, \"rps\":"),
            ),
            &oha_cmd,
            &["rpsV2", "not oha's JSON output"],
        ),
        (
            "oha",
            fixture("autocannon/closed-16.json"),
            &oha_cmd,
            &["closed-16.json", "not oha's JSON output", "url"],
        ),
        ("oha", fixture("oha/closed-16.json"), &[], &["--command"]),
        (
            "autocannon",
            bad("ac.json", edited(&ac, "\"p99\":0", "\"p99\":\"soon\"")),
            &ac_cmd,
            &["ac.json"],
        ),
        (
            "autocannon",
            bad("ac-cut.json", ac[..200].to_string()),
            &ac_cmd,
            &["truncated"],
        ),
        (
            "autocannon",
            fixture("oha/closed-16.json"),
            &ac_cmd,
            &["not autocannon's JSON output", "summary"],
        ),
        (
            "wrk",
            fixture("oha/closed-16.json"),
            &[],
            &["not wrk's report"],
        ),
        (
            "wrk",
            bad("wrk-neg.txt", edited(&wrk, "\"99\": 138", "\"99\": -138")),
            &[],
            &["latency_us.percentiles.99"],
        ),
        (
            "wrk",
            bad(
                "wrk-nan.txt",
                edited(&wrk, "\"mean\": 69.936", "\"mean\": NaN"),
            ),
            &[],
            &["wrk-nan.txt line 9"],
        ),
        (
            "wrk",
            bad(
                "wrk-lines.txt",
                wrk.lines().take(3).collect::<Vec<_>>().join("\n"),
            ),
            &[],
            &["not wrk's report"],
        ),
        (
            "locust",
            bad(
                "locust.json",
                edited(
                    &locust,
                    "\"num_requests\": 20952",
                    "\"num_requests\": 20953",
                ),
            ),
            &locust_cmd,
            &["[0].response_times", "20952"],
        ),
        (
            "locust",
            fixture("iperf3/tcp.json"),
            &locust_cmd,
            &["not locust's JSON output"],
        ),
        (
            "iperf3",
            bad(
                "iperf.json",
                edited(
                    &iperf,
                    "\"version\":\t\"iperf 3.12\"",
                    "\"version\":\t\"iperf 2.1\"",
                ),
            ),
            &[],
            &["start.version", "iperf 2.1"],
        ),
        (
            "iperf3",
            bad("iperf-neg.json", {
                let mut v: Value = serde_json::from_str(&iperf).unwrap();
                v["end"]["sum_sent"]["bits_per_second"] = (-1.0).into();
                v.to_string()
            }),
            &[],
            &["end.sum_sent.bits_per_second"],
        ),
        (
            "iperf3",
            fixture("locust/closed-16.json"),
            &[],
            &["not iperf3's JSON output"],
        ),
    ];
    assert_refused(dir.path(), cases);
}

/// A refused import: (tool, file, extra flags, what stderr must say).
type Refused<'a> = (&'a str, PathBuf, &'a [&'a str], &'a [&'a str]);

/// Imports each case into its own folder under `dir`: exit 1, every expected text on
/// stderr, nothing written.
fn assert_refused(dir: &Path, cases: Vec<Refused>) {
    for (i, (tool, file, extra, expected)) in cases.into_iter().enumerate() {
        let out = dir.join(format!("out-{i}"));
        let (code, stderr) = import(tool, std::slice::from_ref(&file), &out, extra)
            .err()
            .unwrap_or_else(|| panic!("{tool} {} was accepted", file.display()));
        assert_eq!(code, 1, "{tool} {}: {stderr}", file.display());
        for needle in expected {
            assert!(
                stderr.contains(needle),
                "{tool} {}: {needle:?} not in {stderr}",
                file.display()
            );
        }
        assert!(!out.exists(), "nothing written for {}", file.display());
    }
}

/// Numbers no real run can have are refused at the tool's JSON path (or the flag they came
/// from), with the bound they break: a duration of 1e-300 s (which made a 306-digit rate),
/// a rate of 1e308, 10^12 connections; and a rate the tool did not print is not the run's.
#[test]
fn impossible_numbers_are_refused_at_the_tools_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let bad = |name: &str, text: String| written(dir.path(), name, text);
    let oha = fixture_text("oha/closed-16.json");
    let ac = fixture_text("autocannon/closed-16.json");
    let iperf = fixture_text("iperf3/tcp.json");
    let oha_cmd = ["--command", "oha -c 16 http://x/"];
    let ac_cmd = ["--command", "autocannon -c 16 http://x/"];
    let cases: Vec<Refused> = vec![
        (
            "autocannon",
            bad("ac-short.json", edited(&ac, "\"duration\":2.01", "\"duration\":1e-300")),
            &ac_cmd,
            &[
                "ac-short.json: duration: 1e-300 is not a real run's figure: a run lasts from 1 ms to 7 days",
            ],
        ),
        (
            "autocannon",
            bad(
                "ac-conns.json",
                edited(&ac, "\"connections\":16", "\"connections\":1000000000000"),
            ),
            &ac_cmd,
            &["ac-conns.json: connections: 1000000000000 is not a real run's figure: a run holds from 1 to 1,048,576 connections"],
        ),
        (
            "autocannon",
            bad("ac-half.json", edited(&ac, "\"duration\":2.01", "\"duration\":0.5")),
            &ac_cmd,
            &[
                "ac-half.json: duration: 0.5 s, but autocannon took 2 samples 1000 ms apart: the run lasted from 1 to 3 s",
            ],
        ),
        (
            "autocannon",
            bad(
                "ac-mean.json",
                edited(&ac, "\"average\":98592,\"mean\":98592", "\"average\":98592,\"mean\":50000"),
            ),
            &ac_cmd,
            &["ac-mean.json: requests.mean: 50000 per sample over 2 samples makes 100000 answers, but autocannon counted 197204: they must agree within 1%"],
        ),
        (
            "autocannon",
            bad("ac-wrap.json", edited(&ac, "\"3xx\":0", "\"3xx\":18446744073709551615")),
            &ac_cmd,
            &["ac-wrap.json: statusCodeStats: counts 197204 answers, but 1xx–5xx count 18446744073709551615"],
        ),
        (
            "oha",
            bad(
                "oha-rate.json",
                edited(&oha, "\"requestsPerSec\": 129688.1672717414", "\"requestsPerSec\": 1e308"),
            ),
            &oha_cmd,
            &["oha-rate.json: summary.requestsPerSec: 1e308 is not a real run's figure"],
        ),
        (
            "oha",
            bad(
                "oha-off.json",
                edited(&oha, "\"requestsPerSec\": 129688.1672717414", "\"requestsPerSec\": 130688.1672717414"),
            ),
            &oha_cmd,
            &["oha-off.json: summary.requestsPerSec: oha reported 130688.1672717414 per second"],
        ),
        (
            "oha",
            fixture("oha/closed-16.json"),
            &["--command", "oha -c 2000000 http://x/"],
            &["closed-16.json: --command -c: 2000000 is not a real run's figure"],
        ),
        (
            "oha",
            bad(
                "oha-wrap.json",
                edited(&oha, "\"200\": 259576", "\"200\": 259576, \"201\": 18446744073709551615"),
            ),
            &oha_cmd,
            &["oha-wrap.json: the run's responses_per_second: 9.215"],
        ),
        (
            "iperf3",
            bad("iperf-bits.json", {
                let mut v: Value = serde_json::from_str(&iperf).unwrap();
                v["end"]["sum_sent"]["bits_per_second"] = 9e12.into();
                v.to_string()
            }),
            &[],
            &["iperf-bits.json: end.sum_sent.bits_per_second: 9000000000000 bits per second, but 5727715328 bytes over 2.000216 s are"],
        ),
        (
            "iperf3",
            bad(
                "iperf-streams.json",
                edited(&iperf, "\"num_streams\":\t1", "\"num_streams\":\t10000000"),
            ),
            &[],
            &["iperf-streams.json: start.test_start.num_streams: 10000000 is not a real run's figure"],
        ),
    ];
    assert_refused(dir.path(), cases);
}

#[test]
fn an_import_never_replaces_an_archive_and_refuses_requests_it_cannot_carry_out() {
    let dir = tempfile::tempdir().unwrap();
    let iperf = [fixture("iperf3/tcp.json")];
    let first = import("iperf3", &iperf, dir.path(), &[]).unwrap();
    let before = std::fs::read(dir.path().join("iperf3.json")).unwrap();
    let (code, stderr) = import("iperf3", &iperf, dir.path(), &[]).unwrap_err();
    assert_eq!(code, 2);
    assert!(stderr.contains("already exists"), "{stderr}");
    assert_eq!(
        std::fs::read(dir.path().join("iperf3.json")).unwrap(),
        before
    );
    assert_eq!(first["runs"].as_array().unwrap().len(), 1);
    let two = ["oha/closed-16.json", "oha/refused.json"].map(fixture);
    let (code, stderr) = import(
        "oha",
        &two,
        &dir.path().join("o"),
        &["--command", "a", "--command", "b", "--command", "c"],
    )
    .unwrap_err();
    assert_eq!(code, 2, "{stderr}");
    let (code, stderr) = import(
        "iperf3",
        &iperf,
        &dir.path().join("v"),
        &["--tool-version", "3.99"],
    )
    .unwrap_err();
    assert_eq!(code, 2);
    assert!(
        stderr.contains("3.12"),
        "the file's own version wins: {stderr}"
    );
    let o = echomark(&["import", "--from", "ab", "--out", "x", "f"]);
    assert_eq!(o.status.code(), Some(2));
}

/// An imported dataset of wrk and oha, with the host recorded.
fn imported_dataset(root: &Path, name: &str) -> PathBuf {
    let host = root.join("host.json");
    std::fs::write(
        &host,
        r#"{"system": "Linux", "release": "6.1.0", "machine": "x86_64", "cpu": "Test CPU", "logical_cpus": 2, "physical_cpus": 2, "memory_bytes": 1073741824, "os_name": "Debian GNU/Linux", "os_version": "12"}"#,
    )
    .unwrap();
    let out = root.join("raw").join(name);
    let h = host.to_str().unwrap();
    import(
        "oha",
        // Three repetitions of one load (compare needs three a side), and a failed run.
        &[
            "oha/closed-16.json",
            "oha/closed-16.json",
            "oha/closed-16.json",
            "oha/refused.json",
        ]
        .map(fixture),
        &out,
        &[
            "--host",
            h,
            "--tool-version",
            "1.16.0",
            "--payload",
            "1024",
            "--command",
            OHA_CLOSED,
            "--command",
            OHA_CLOSED,
            "--command",
            OHA_CLOSED,
            "--command",
            OHA_REFUSED,
        ],
    )
    .unwrap();
    import(
        "wrk",
        &["wrk/closed-16-json-hook.txt"; 3].map(fixture),
        &out,
        &["--host", h, "--tool-version", "4.1.0"],
    )
    .unwrap();
    out
}

#[test]
fn an_imported_dataset_validates_builds_compares_as_no_change_and_says_who_measured() {
    let dir = tempfile::tempdir().unwrap();
    let data = imported_dataset(dir.path(), "tools-20261205");
    let o = echomark(&["validate", "--json", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report[0]["runs"], 7, "{report}");
    assert_eq!(
        report[0]["runs_passed"], 6,
        "the refused run is data, failed"
    );

    let o = echomark(&[
        "compare",
        "--json",
        data.to_str().unwrap(),
        data.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let counts = &report["counts"];
    assert_eq!(
        counts["equivalent"].as_u64().unwrap() + counts["undecided"].as_u64().unwrap(),
        2,
        "oha's and wrk's loads, each against itself: {report}"
    );
    for verdict in ["improved", "regressed"] {
        assert_eq!(
            report["counts"][verdict].as_u64().unwrap_or(0),
            0,
            "{report}"
        );
    }

    let site = dir.path().join("site");
    let o = echomark(&[
        "build",
        "--raw",
        dir.path().join("raw").to_str().unwrap(),
        "--out",
        site.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let en = std::fs::read_to_string(site.join("en/tools-20261205/overview.md")).unwrap();
    let zh = std::fs::read_to_string(site.join("zh/tools-20261205/overview.md")).unwrap();
    assert!(
        en.starts_with("# tools-20261205: measured by oha 1.16.0 and wrk 4.1.0"),
        "{en}"
    );
    assert!(en.contains("## Measured by oha 1.16.0, not verified by echomark: echoes were not checked byte for byte"));
    assert!(en.contains("## Measured by wrk 4.1.0, not verified by echomark"));
    assert!(
        zh.contains("## 由 oha 1.16.0 测量，未经 echomark 校验：回显未逐字节核对"),
        "{zh}"
    );
    assert!(zh.contains("## 由 wrk 4.1.0 测量"));
    // What the tools did not measure is not shown: no CPU or memory column, no echo counters.
    let tables: Vec<&str> = en.lines().filter(|l| l.starts_with("| Load |")).collect();
    assert_eq!(tables.len(), 2, "one table per tool");
    for header in tables {
        assert!(
            !header.contains("CPU") && !header.contains("RSS"),
            "{header}"
        );
    }
    assert!(en.contains("129,680"), "oha's answers per second");
    assert!(
        en.contains("summary only: percentiles, 1.00 ns resolution"),
        "{en}"
    );
    assert!(en.contains("218,969"), "the refused run's errors, kept");
    // Imported runs are nobody's echo benchmark: not on the UDP report, not an answer.
    assert!(!site.join("en/udp-report.md").exists());
    let index = std::fs::read_to_string(site.join("en/index.md")).unwrap();
    assert!(
        index.contains("tools-20261205"),
        "listed among the datasets"
    );
}

#[test]
fn imported_datasets_of_one_host_and_tools_form_a_history_with_what_changed_pages() {
    let dir = tempfile::tempdir().unwrap();
    imported_dataset(dir.path(), "tools-20261205");
    imported_dataset(dir.path(), "tools-20261206");
    let site = dir.path().join("site");
    let o = echomark(&[
        "build",
        "--raw",
        dir.path().join("raw").to_str().unwrap(),
        "--out",
        site.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for lang in ["en", "zh"] {
        let changes = site.join(format!("{lang}/tools-20261206/changes.md"));
        let text = std::fs::read_to_string(&changes)
            .unwrap_or_else(|e| panic!("{}: {e}", changes.display()));
        assert!(
            text.contains("oha"),
            "the tool's loads are compared: {text}"
        );
        assert!(site
            .join(format!("{lang}/tools-20261206/history.md"))
            .exists());
    }
    let overview = std::fs::read_to_string(site.join("en/tools-20261206/overview.md")).unwrap();
    assert!(overview.contains("measured by oha 1.16.0"));
}

/// Whether `tool` is on the PATH; a skip (a failure under CI) when not.
fn have(tool: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        echomark::skip::because(&format!(
            "{tool} is not installed (.ci/run installs Debian's)"
        ));
    }
    found
}

/// Runs a measuring script of `scripts/` with the tests' own binaries into `out`.
fn measure(script: &str, out: &Path, env: &[(&str, &str)]) {
    let bin = Path::new(env!("CARGO_BIN_EXE_echomark")).parent().unwrap();
    assert!(
        bin.join("echomark-runner").exists(),
        "the workspace's tests build echomark-runner beside echomark"
    );
    let o = std::process::Command::new("bash")
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scripts")
                .join(script),
        )
        .arg(out)
        .env("ECHOMARK_BIN_DIR", bin)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{script}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn measure_agreement_writes_an_interleaved_dataset_whose_page_sets_the_tool_beside_echomark() {
    if !have("wrk") || !have("taskset") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("raw").join("agreement");
    measure(
        "measure-agreement",
        &out,
        &[
            ("TOOLS", "wrk"),
            ("ROUNDS", "2"),
            ("SECONDS_EACH", "1"),
            ("CONNECTIONS", "4"),
        ],
    );
    let serve = json(&out.join("serve.json"));
    assert_eq!(
        serve["complete"], true,
        "the last slice completed the matrix"
    );
    let started: Vec<&str> = serve["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["started_at_utc"].as_str().unwrap())
        .collect();
    assert_eq!(started.len(), 2, "one run per round");
    // Round 1 is echomark then wrk, round 2 wrk then echomark: both of wrk's outputs were
    // written after echomark's first run started and before its second.
    let written = |round: u32| {
        let at = std::fs::metadata(out.join(format!("outputs/wrk/c4-r{round}.out")))
            .unwrap()
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let seconds = echomark::import::utc_from_unix(at.as_secs() as i64);
        format!("{}.{:06}Z", &seconds[..19], at.subsec_micros())
    };
    let (first, second) = (written(1), written(2));
    assert!(
        started[0] < first.as_str() && first < second && second.as_str() < started[1],
        "interleaved: echomark {started:?}, wrk {first} and {second}"
    );
    let wrk = json(&out.join("wrk.json"));
    assert_eq!(wrk["runs"].as_array().unwrap().len(), 2);
    assert_eq!(wrk["runs"][0]["load"]["connections"], 4);
    assert!(wrk["host"].is_object(), "the host is recorded");
    let site = dir.path().join("site");
    let o = echomark(&[
        "build",
        "--raw",
        dir.path().join("raw").to_str().unwrap(),
        "--out",
        site.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let en = std::fs::read_to_string(site.join("en/agreement/overview.md")).unwrap();
    assert!(
        en.contains("## Does echomark agree with the other tools?"),
        "{en}"
    );
    let row = en
        .lines()
        .find(|l| l.starts_with("| HTTP / 1,024 B / 4 clients / window 1 | wrk "))
        .unwrap_or_else(|| panic!("an agreement row for wrk: {en}"));
    // The rule's verdict on the tool against echomark, or the ratio alone where the
    // tool's resolution is coarser than the margin.
    assert!(
        row.contains("agrees: ")
            || row.contains("differs: ")
            || row.contains("coarser than the margin")
            || row.contains("undecided"),
        "{row}"
    );
    assert!(
        en.contains("scripts/measure-agreement"),
        "the page names what measured it"
    );
    // It opens with which client to measure with, decided by the rule: wrk, echomark's
    // client, or no single choice between them, and never before the evidence is set out.
    let what = en
        .find("## What to measure with")
        .expect("a What to measure with table");
    assert!(what < en.find("## Does echomark agree").unwrap());
    let use_row = en[what..]
        .lines()
        .find(|l| l.contains(": 1,024 B, 4 clients | "))
        .unwrap_or_else(|| panic!("a row for the load measured: {en}"));
    assert!(
        use_row.contains("| **wrk ")
            || use_row.contains("| **echomark's client** |")
            || use_row.contains("| No single choice: "),
        "{use_row}"
    );
    let zh = std::fs::read_to_string(site.join("zh/agreement/overview.md")).unwrap();
    assert!(zh.contains("## echomark 与其他工具的结果一致吗？"));
}

#[test]
fn measure_iperf3_sets_iperf3_streams_beside_echomarks_echoes_on_the_same_path() {
    if !have("iperf3") || !have("taskset") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("raw").join("streams");
    measure(
        "measure-iperf3",
        &out,
        &[("ROUNDS", "1"), ("SECONDS_EACH", "1")],
    );
    let iperf = json(&out.join("iperf3.json"));
    let runs = iperf["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["protocol"], "tcp");
    assert_eq!(runs[1]["protocol"], "udp");
    assert!(
        runs[0]["stream"]["received_bits_per_second"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let site = dir.path().join("site");
    let o = echomark(&[
        "build",
        "--raw",
        dir.path().join("raw").to_str().unwrap(),
        "--out",
        site.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let en = std::fs::read_to_string(site.join("en/streams/overview.md")).unwrap();
    assert!(en.starts_with("# streams: echomark beside iperf3 "), "{en}");
    assert!(en.contains("## Measured by iperf3 "));
    assert!(en.contains("echomark's TCP echoes in this dataset"));
    assert!(en.contains("echomark's UDP echoes in this dataset"));
    assert!(en.contains("scripts/measure-iperf3"));
    // Which tool for which figure: iperf3 for the bulk transfer, echomark for round trips.
    assert!(en.contains("## What to measure with"), "{en}");
    let row = |start: &str| {
        en.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("a row {start:?}: {en}"))
            .to_string()
    };
    let tcp = row("| One-way bulk transfer, TCP ");
    assert!(
        tcp.contains("| **iperf3 ") && tcp.contains(" Gbit/s sent") && tcp.contains("retransmits"),
        "{tcp}"
    );
    assert!(
        row("| One-way bulk transfer, UDP ").contains("% lost"),
        "UDP loss from iperf3"
    );
    let rtt = row("| Round-trip latency, TCP ");
    assert!(
        rtt.contains("| **echomark's client**: p99 ") && rtt.contains("measures no round trip"),
        "{rtt}"
    );
}

#[test]
fn an_imported_archive_edited_by_hand_is_refused_at_its_json_path() {
    let dir = tempfile::tempdir().unwrap();
    let data = imported_dataset(dir.path(), "edited");
    let path = data.join("wrk.json");
    let mut archive = json(&path);
    archive["runs"][1]["latency"]["percentiles"][3]["us"] = (-138.0).into();
    std::fs::write(&path, archive.to_string()).unwrap();
    let o = echomark(&["validate", data.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(
            "wrk.json: runs[1].latency.percentiles[3].us: -138: a measurement is not negative"
        ),
        "{stderr}"
    );
    archive["echomark_import"]["format_version"] = 2.into();
    std::fs::write(&path, archive.to_string()).unwrap();
    let o = echomark(&["validate", data.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("echomark_import.format_version: unknown imported-archive version 2"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs `echomark` with `args` and reaps it with wait4: its exit code and its own peak
/// resident set size in KiB (not any other test's child's).
// Reaped by wait4, which std's `Child` cannot see.
#[allow(clippy::zombie_processes)]
fn peak_rss_kib(args: &[&str]) -> (Option<i32>, u64) {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_echomark"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child with valid pointers; `child` is not waited again.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    (code, usage.ru_maxrss as u64)
}

/// The fixture `rel` with `key`'s value replaced by `open`, `item` repeated (`{i}` counting)
/// to `bytes`, and `close`: well-formed output of the tool, as large as a long run makes it.
fn bloated(rel: &str, key: &str, (open, item, close): (&str, &str, &str), bytes: usize) -> String {
    let mut v = json(&fixture(rel));
    v[key] = "@bloat@".into();
    let mut body = String::with_capacity(bytes + 64);
    body.push_str(open);
    let mut i = 0;
    while body.len() < bytes {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&item.replace("{i}", &i.to_string()));
        i += 1;
    }
    body.push_str(close);
    v.to_string().replacen("\"@bloat@\"", &body, 1)
}

/// A large output is held once, as its text, while it is read: not as a JSON tree besides
/// (oha's and iperf3's unread parts were `serde_json::Value`s, 8 to 10 times the text).
#[test]
fn a_large_output_is_held_once_while_it_is_imported() {
    const SIZE: usize = 24 << 20;
    let dir = tempfile::tempdir().unwrap();
    let interval = r#"{"streams": [{"socket": 5, "start": {i}, "end": 1.000379, "seconds": 1.000378966331482, "bytes": 2840199168, "bits_per_second": 22712985887.06138, "retransmits": 12, "snd_cwnd": 1047728, "snd_wnd": 1589248, "rtt": 51, "rttvar": 24, "pmtu": 65535, "omitted": false, "sender": true}], "sum": {"start": 0, "end": 1.000379, "seconds": 1.000378966331482, "bytes": 2840199168, "bits_per_second": 22712985887.06138, "retransmits": 12, "omitted": false, "sender": true}}"#;
    let big_iperf = dir.path().join("iperf3-long.json");
    let intervals = ("[", interval, "]");
    std::fs::write(
        &big_iperf,
        bloated("iperf3/tcp.json", "intervals", intervals, SIZE),
    )
    .unwrap();
    let details = (
        "{",
        r#""p{i}": {"average": 0.0001188, "fastest": 7.9e-05, "slowest": 0.000296}"#,
        "}",
    );
    let big_oha = dir.path().join("oha-long.json");
    std::fs::write(
        &big_oha,
        bloated("oha/closed-16.json", "details", details, SIZE),
    )
    .unwrap();
    for (tool, small, big, extra) in [
        ("iperf3", fixture("iperf3/tcp.json"), big_iperf, vec![]),
        (
            "oha",
            fixture("oha/closed-16.json"),
            big_oha,
            vec!["--command", OHA_CLOSED],
        ),
    ] {
        let run = |file: &Path, out: &str| {
            let out = dir.path().join(format!("{tool}-{out}"));
            let mut args = vec!["import", "--from", tool, "--out", out.to_str().unwrap()];
            args.push(file.to_str().unwrap());
            args.extend(&extra);
            let (code, kib) = peak_rss_kib(&args);
            assert_eq!(code, Some(0), "{tool} {}", file.display());
            kib
        };
        let (small_kib, big_kib) = (run(&small, "small"), run(&big, "big"));
        let grown = big_kib.saturating_sub(small_kib) * 1024;
        assert!(
            grown < 2 * SIZE as u64,
            "{tool}: a {} MiB output took {} MiB more than a small one",
            SIZE >> 20,
            grown >> 20
        );
    }
}

/// An output larger than any input may be is refused by its size, naming the file and the
/// limit, before it is read; nothing is written.
#[test]
fn an_output_over_the_input_limit_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.json");
    // Sparse: the length is all there is.
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(echomark::read::bounded::MAX_INPUT_BYTES + 1)
        .unwrap();
    let out = dir.path().join("out");
    let started = std::time::Instant::now();
    let (code, stderr) = import("iperf3", &[huge], &out, &[]).unwrap_err();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("huge.json: 256.0 MiB, more than the 256 MiB an input may hold"),
        "{stderr}"
    );
    assert!(!out.exists());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "refused by its size, not after reading 256 MiB"
    );
}

/// A run no tool could have measured, written into an imported archive by hand, is refused
/// by validate (and so never reaches a page) at its JSON path: the bound it breaks, or the
/// rate the tool printed that its counts do not make.
#[test]
fn an_imported_run_no_tool_could_measure_is_refused_by_validate() {
    let dir = tempfile::tempdir().unwrap();
    let data = imported_dataset(dir.path(), "impossible");
    let path = data.join("oha.json");
    let good = json(&path);
    let responses = good["runs"][0]["responses"].as_f64().unwrap();
    let mut short = good.clone();
    short["runs"][0]["load"]["duration_seconds"] = 1e-300.into();
    short["runs"][0]["responses_per_second"] = (responses / 1e-300).into();
    let mut off = good.clone();
    off["runs"][1]["reported_rate"] = 1e6.into();
    for (archive, expected) in [
        (
            short,
            "oha.json: runs[0].load.duration_seconds: 1e-300 is not a real run's figure",
        ),
        (
            off,
            "oha.json: runs[1].reported_rate: oha reported 1000000 per second, but its counts",
        ),
    ] {
        std::fs::write(&path, archive.to_string()).unwrap();
        let o = echomark(&["validate", data.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}

/// An `--out` that is a file, or lies under one, is refused by the path the user gave (not
/// the archive's path inside it), saying what to give instead; the file is untouched.
#[test]
fn an_out_that_is_a_file_is_refused_by_the_path_given() {
    let dir = tempfile::tempdir().unwrap();
    let notes = written(dir.path(), "notes.txt", "mine".into());
    let iperf = [fixture("iperf3/tcp.json")];
    let (code, stderr) = import("iperf3", &iperf, &notes, &[]).unwrap_err();
    assert_eq!(code, 2, "{stderr}");
    let shown = notes.display().to_string();
    assert!(
        stderr.contains(&format!(
            "--out {shown}: it is a file, not a folder; give the dataset folder"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("iperf3.json"), "{stderr}");
    let under = notes.join("sub");
    let (code, stderr) = import("iperf3", &iperf, &under, &[]).unwrap_err();
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("--out {}: {shown} is a file", under.display())),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
}

/// An import into the folder that holds the tool's own output would leave a dataset that
/// validate refuses (it reads every *.json there as an archive): the import is refused,
/// naming the file in the way and what to do, and writes nothing; validate says the same of
/// such a file. From a folder of their own the outputs import and the dataset validates.
#[test]
fn an_import_beside_the_tools_own_output_is_refused_and_validate_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds");
    std::fs::create_dir_all(&ds).unwrap();
    let run = written(&ds, "run.json", fixture_text("oha/closed-16.json"));
    let oha = ["--command", OHA_CLOSED];
    let (code, stderr) = import("oha", std::slice::from_ref(&run), &ds, &oha).unwrap_err();
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--out {} holds {}, which is not an archive",
            ds.display(),
            run.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("/outputs/"), "{stderr}");
    assert!(!ds.join("oha.json").exists(), "nothing written");
    let o = echomark(&["validate", ds.to_str().unwrap()]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("run.json: not an archive: its top level has no `echomark`"),
        "{e}"
    );
    // A folder of their own: the import and the dataset are fine.
    std::fs::create_dir_all(ds.join("outputs")).unwrap();
    let moved = ds.join("outputs/run.json");
    std::fs::rename(&run, &moved).unwrap();
    import("oha", &[moved], &ds, &oha).unwrap();
    let o = echomark(&["validate", ds.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}
