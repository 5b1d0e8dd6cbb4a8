//! Placement: `--client-cpus` and `--server-cpus` pin real threads, the kernel's own view of
//! them (`/proc/PID/task/*/status`) agrees, and the archives record where every side ran.
//! CPU numbers come from this process's own affinity, so the tests run on any host; on a
//! host with one CPU, client and server get the same one.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common::{exited, rendered_pages, threads, RUNNER, TEST_VERIFY_IDLE};

/// The CPUs this test may run on, as the kernel lists them for it.
fn allowed() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    list.parse::<echomark_archive::cpus::CpuList>()
        .unwrap()
        .cpus()
        .to_vec()
}

fn once(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(RUNNER)
        .arg("once")
        .args(["--seconds", "0.2", "--warmup", "0"])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_str(&stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn once_pins_its_runtime_threads_and_records_where_they_ran() {
    let cpus = allowed();
    let last = cpus.last().unwrap().to_string();
    for backend in ["tokio", "monoio"] {
        if backend == "monoio" && echomark_runner::measure::shards::probe().is_err() {
            echomark::skip::because("io_uring is not available here (kernel.io_uring_disabled)");
            continue;
        }
        for (model, threads) in [("shared", "1"), ("sharded", "2")] {
            let (code, m, stderr) = once(&[
                "--backend",
                backend,
                "--io-model",
                model,
                "--io-threads",
                threads,
                "--clients",
                "2",
                "--client-cpus",
                &last,
            ]);
            assert_eq!(code, 0, "{backend} {model}: {stderr}");
            assert_eq!(m["ok"], true, "{m}");
            assert_eq!(
                m["placement"],
                serde_json::json!({
                    "client_cpus": last,
                    "client_pinned": true,
                    "server_in_process": true,
                }),
                "{backend} {model}"
            );
        }
    }
    // Unpinned, the record is the scheduler's whole choice.
    let (code, m, _) = once(&[]);
    assert_eq!(code, 0);
    assert_eq!(m["placement"]["client_pinned"], false);
    let everywhere = echomark_archive::cpus::CpuList::of(cpus)
        .unwrap()
        .to_string();
    assert_eq!(m["placement"]["client_cpus"], everywhere.as_str());
}

#[test]
fn a_cpu_the_host_lacks_is_a_usage_error() {
    let past = allowed().last().unwrap() + 1;
    for (command, flag) in [("once", "--client-cpus"), ("serve", "--server-cpus")] {
        let out = Command::new(RUNNER)
            .args([command, flag, &format!("0,{past}")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("CPU {past} is not available here")),
            "{stderr}"
        );
    }
    let out = Command::new(RUNNER)
        .args(["once", "--client-cpus", "1-0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a CPU list"));
}

#[test]
fn serve_pins_every_runtime_thread_to_its_cpu() {
    let cpus = allowed();
    let list = echomark_archive::cpus::CpuList::of(cpus.clone()).unwrap();
    let mut child = Command::new(RUNNER)
        .args([
            "serve",
            "--io-model",
            "sharded",
            "--io-threads",
            "2",
            "--server-cpus",
            &list.to_string(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let listening: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(listening["cpus"], list.to_string().as_str(), "{line}");
    let seen = threads(child.id());
    let _ = child.kill();
    let _ = child.wait();
    let shards: Vec<&(String, String)> = seen
        .iter()
        .filter(|(name, _)| name.starts_with("echomark-shard"))
        .collect();
    assert_eq!(shards.len(), 2, "{seen:?}");
    for (name, allowed) in &shards {
        assert!(
            list.cpus().iter().any(|c| c.to_string() == *allowed),
            "{name} may run on {allowed}, not one CPU of {list}"
        );
    }
    // Runtime i takes the list's i-th CPU in turn; thread order in /proc is not runtime
    // order, so the two are compared as sets.
    let mut taken: Vec<&str> = shards.iter().map(|(_, a)| a.as_str()).collect();
    taken.sort();
    let mut expected: Vec<String> = (0..2).map(|i| list.for_runtime(i).to_string()).collect();
    expected.sort();
    assert_eq!(taken, expected);
    // Every other thread stays inside the list.
    for (name, allowed) in &seen {
        let cpus: echomark_archive::cpus::CpuList = allowed.parse().unwrap();
        assert!(cpus.outside(&list).is_none(), "{name}: {allowed}");
    }
}

#[test]
fn a_matrix_pins_client_and_server_apart_and_records_both() {
    let cpus = allowed();
    let (client, server) = (cpus[0].to_string(), cpus.last().unwrap().to_string());
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("apart");
    std::fs::create_dir(&folder).unwrap();
    let out = folder.join("serve-tokio.json");
    let serve = format!("{RUNNER} serve --listen 127.0.0.1:{{port}} --protocol {{protocol}}");
    let status = Command::new(RUNNER)
        .args(["matrix", "--preset", "quick", "--protocols", "tcp,udp"])
        .args(["--clients", "1", "--windows", "1", "--io-models", "shared"])
        .args([
            "--io-threads",
            "1",
            "--repetitions",
            "1",
            "--seconds",
            "0.2",
        ])
        .args([
            "--warmup",
            "0",
            "--client-cpus",
            &client,
            "--server-cpus",
            &server,
        ])
        .args(["--udp-batch", "8", "--udp-gso"])
        .args(["--verify-idle", TEST_VERIFY_IDLE])
        .args(["--server-name", "serve-tokio", "--server-cmd", &serve])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let archive: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(archive["settings"]["client_cpus"], client.as_str());
    assert_eq!(archive["settings"]["server_cpus"], server.as_str());
    let results = archive["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for e in results {
        assert_eq!(e["metrics"]["ok"], true, "{e}");
        assert_eq!(e["metrics"]["placement"]["client_cpus"], client.as_str());
        assert_eq!(e["metrics"]["placement"]["server_in_process"], false);
        assert_eq!(e["server"]["cpus"], server.as_str(), "{}", e["server"]);
        assert_eq!(e["server"]["pinned"], true);
        // The batch and its offload apply to UDP runs only, and each records them.
        let batched = (e["protocol"] == "udp").then_some(8);
        assert_eq!(
            e["metrics"]["udp_batch"].as_u64(),
            batched,
            "{}",
            e["protocol"]
        );
        assert_eq!(
            e["metrics"]["udp_gso"].as_bool(),
            batched.map(|_| true),
            "{}",
            e["protocol"]
        );
        let argv: Vec<&str> = e["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        assert!(
            argv.windows(2)
                .any(|w| w == ["--client-cpus", client.as_str()]),
            "{argv:?}"
        );
    }
    // The generator reads it back: one placement for the dataset, each side on its CPUs.
    let dataset =
        echomark::analysis::compare::side::load_dataset(&folder).expect("the archive validates");
    match echomark::analysis::placement::of(&dataset) {
        echomark::analysis::placement::Placement::Same(p) => {
            assert_eq!(p.client.to_string(), client);
            assert_eq!(p.server.map(|s| s.to_string()), Some(server.clone()));
            assert!(p.client_pinned && p.server_pinned && !p.server_in_process);
        }
        other => panic!("{other:?}"),
    }
    let batches: Vec<Option<u64>> = dataset
        .runs
        .iter()
        .map(|r| r.instruments.udp_batch)
        .collect();
    assert!(
        batches.contains(&Some(8)) && batches.contains(&None),
        "{batches:?}"
    );
    // And the overview says both, in both languages.
    let pages = rendered_pages(std::slice::from_ref(&dataset));
    let page = |lang: &str| pages(&format!("{lang}/apart/overview.md"));
    let shared = if client == server {
        format!("they share CPU {client}")
    } else {
        "they share no CPU".to_string()
    };
    let en = page("en");
    assert!(
        en.contains(&format!(
            "CPUs: the client ran on CPU {client} (pinned), the server on CPU {server} (pinned); {shared}"
        )),
        "{en}"
    );
    assert!(en.contains("up to 8 datagrams per system call"), "{en}");
    assert!(
        en.contains("With `--udp-gso` the kernel also segmented (GSO) and coalesced (GRO)"),
        "{en}"
    );
    let commands = echomark::reproduce::commands(&dataset).join("\n");
    assert!(
        commands.contains("--udp-batch 8") && commands.contains("--udp-gso"),
        "{commands}"
    );
    let zh = page("zh");
    assert!(
        zh.contains(&format!("客户端运行在 CPU {client}（已绑核）")),
        "{zh}"
    );
    assert!(zh.contains("`--udp-batch 8`"), "{zh}");
}

/// The first and last CPU this test may use: client and server apart where there are two.
fn two_sides() -> (String, String) {
    let cpus = allowed();
    (cpus[0].to_string(), cpus.last().unwrap().to_string())
}

#[test]
fn an_in_process_server_runs_apart_on_its_own_cpus_on_every_protocol_of_both_backends() {
    let (client, server) = two_sides();
    let mut loads: Vec<(&str, &str)> = [
        "tcp",
        "udp",
        "websocket",
        "tcps",
        "wss",
        "http",
        "https",
        "quic",
        "quic-datagram",
    ]
    .iter()
    .map(|p| ("tokio", *p))
    .collect();
    if echomark_runner::measure::shards::probe().is_ok() {
        loads.extend(
            ["tcp", "udp", "websocket", "tcps", "wss", "http", "https"]
                .iter()
                .map(|p| ("monoio", *p)),
        );
    } else {
        echomark::skip::because("io_uring is not available here (kernel.io_uring_disabled)");
    }
    // A few at a time: each is a real measurement, and they share the same two CPUs.
    for batch in loads.chunks(4) {
        let children: Vec<_> = batch
            .iter()
            .map(|(backend, protocol)| {
                let child = Command::new(RUNNER)
                    .args(["once", "--backend", backend, "--protocol", protocol])
                    .args([
                        "--io-model",
                        "sharded",
                        "--io-threads",
                        "2",
                        "--clients",
                        "2",
                    ])
                    .args(["--seconds", "0.6", "--warmup", "0"])
                    .args(["--client-cpus", &client, "--server-cpus", &server])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                (backend, protocol, child)
            })
            .collect();
        // Each watched while it runs, all at once: the kernel's view, the server's runtime
        // threads on the server's CPU and every other thread on the client's.
        let finished: Vec<_> = std::thread::scope(|scope| {
            let watchers: Vec<_> = children
                .into_iter()
                .map(|(backend, protocol, child)| {
                    scope.spawn(move || {
                        let seen = threads_while_running(child.id(), "echomark-server");
                        (backend, protocol, seen, child.wait_with_output().unwrap())
                    })
                })
                .collect();
            watchers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        for (backend, protocol, seen, out) in finished {
            let what = format!("{backend} {protocol}");
            assert_eq!(
                out.status.code(),
                Some(0),
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let servers: Vec<_> = seen
                .iter()
                .filter(|(n, _)| n == "echomark-server")
                .collect();
            assert_eq!(servers.len(), 2, "{what}: {seen:?}");
            for (name, cpus) in &seen {
                if name.starts_with("iou-") {
                    // The kernel's io_uring workers (`iou-wrk-*`) are threads of the process
                    // too, started for a ring as its operations need them, on the CPU of the
                    // thread that owns the ring: the client's or the server's.
                    assert!(cpus == &server || cpus == &client, "{what}: thread {name}");
                    continue;
                }
                let side = if name == "echomark-server" {
                    &server
                } else {
                    &client
                };
                assert_eq!(cpus, side, "{what}: thread {name}");
            }
            let m: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(m["ok"], true, "{what}: {m}");
            assert_eq!(
                m["placement"],
                serde_json::json!({
                    "client_cpus": client,
                    "client_pinned": true,
                    "server_in_process": true,
                    "server_cpus": server,
                }),
                "{what}"
            );
        }
    }
}

/// The threads of `pid` as last seen while at least two named `name` ran (or the last
/// sample, if they never did, after 30 s). Sampled until the process exits, not once: a
/// thread carries its name from birth but pins itself as its first act, so a sample taken
/// in between (a loaded machine can hold the new thread off its CPU for milliseconds)
/// shows the parent's CPUs on a thread that has not served yet.
fn threads_while_running(pid: u32, name: &str) -> Vec<(String, String)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut last = Vec::new();
    let mut with_named = None;
    while !exited(pid) && std::time::Instant::now() < deadline {
        last = threads(pid);
        if last.iter().filter(|(n, _)| n == name).count() >= 2 {
            with_named = Some(last.clone());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    with_named.unwrap_or(last)
}

#[test]
fn server_cpus_against_a_target_and_together_with_cpu_lists_are_usage_errors() {
    let (client, server) = two_sides();
    let out = Command::new(RUNNER)
        .args(["once", "--target", "127.0.0.1:9", "--server-cpus", &server])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--server-cpus places echomark's own server"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(RUNNER)
        .args([
            "matrix",
            "--preset",
            "baseline",
            "--together",
            "--client-cpus",
            &client,
        ])
        .args(["--out", "/nonexistent/never-written.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

#[test]
fn the_baseline_preset_places_client_and_server_apart_unless_told_together() {
    let cpus = allowed();
    let dir = tempfile::tempdir().unwrap();
    let small = [
        "--protocols",
        "tcp,udp",
        "--payloads",
        "64",
        "--clients",
        "1",
        "--windows",
        "1",
        "--io-models",
        "shared",
        "--io-threads",
        "1",
        "--repetitions",
        "1",
        "--seconds",
        "0.2",
        "--warmup",
        "0",
    ];
    let matrix = |name: &str, extra: &[&str]| {
        let folder = dir.path().join(name);
        std::fs::create_dir(&folder).unwrap();
        let out = folder.join("archive.json");
        let status = Command::new(RUNNER)
            .args(["matrix", "--preset", "baseline"])
            .args(small)
            .args(extra)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        let archive: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        (folder, archive)
    };
    let (apart_folder, apart) = matrix("apart", &[]);
    let (together_folder, together) = matrix("together", &["--together"]);
    let halves = echomark_runner::placement::halves(
        &echomark_archive::cpus::CpuList::of(cpus.clone()).unwrap(),
    );
    for e in together["results"].as_array().unwrap() {
        assert_eq!(e["metrics"]["ok"], true, "{e}");
        assert!(
            e["metrics"]["placement"].get("server_cpus").is_none(),
            "{e}"
        );
        assert_eq!(e["metrics"]["placement"]["client_pinned"], false);
    }
    assert!(together["settings"].get("client_cpus").is_none());
    let Some((client, server)) = halves else {
        echomark::skip::because("one CPU: the baseline has no apart to place client and server");
        assert_eq!(cpus.len(), 1);
        return;
    };
    let (client, server) = (client.to_string(), server.to_string());
    assert_eq!(apart["settings"]["client_cpus"], client.as_str());
    assert_eq!(apart["settings"]["server_cpus"], server.as_str());
    for e in apart["results"].as_array().unwrap() {
        assert_eq!(e["metrics"]["ok"], true, "{e}");
        assert_eq!(e["metrics"]["placement"]["client_cpus"], client.as_str());
        assert_eq!(e["metrics"]["placement"]["server_cpus"], server.as_str());
        assert_eq!(e["metrics"]["placement"]["server_in_process"], true);
    }
    // The pages say which arrangement each dataset measured, and the reproduction commands
    // ask for it.
    let apart_set = echomark::analysis::compare::side::load_dataset(&apart_folder).unwrap();
    let together_set = echomark::analysis::compare::side::load_dataset(&together_folder).unwrap();
    let apart_commands = echomark::reproduce::commands(&apart_set).join("\n");
    assert!(
        apart_commands.contains(&format!("--client-cpus {client} --server-cpus {server}")),
        "{apart_commands}"
    );
    assert!(echomark::reproduce::commands(&together_set)
        .join("\n")
        .contains("--together"));
    let page = rendered_pages(&[apart_set, together_set]);
    let en = page("en/apart/overview.md");
    assert!(
        en.contains(&format!(
            "client and server ran in one process on threads of their own: the client's runtime threads on CPU{} {client} (pinned), the server's own runtimes, as many as the client's, on CPU{} {server}",
            if client.len() > 1 { "s" } else { "" },
            if server.len() > 1 { "s" } else { "" },
        )),
        "{en}"
    );
    assert!(page("zh/apart/overview.md").contains("服务端有自己的运行时"));
    assert!(page("en/together/overview.md").contains(
        "the scheduler placed the runtime threads, each running clients and the server side"
    ));
}

/// A process pinned to one CPU (taskset, a pod's cpuset) still describes the whole machine:
/// the host's logical CPUs are the machine's online ones, not the ones it may run on.
#[test]
fn a_pinned_process_describes_every_cpu_of_its_machine() {
    let online = std::process::Command::new("getconf")
        .arg("_NPROCESSORS_ONLN")
        .output()
        .expect("getconf runs");
    let online: u64 = String::from_utf8_lossy(&online.stdout)
        .trim()
        .parse()
        .unwrap();
    let out = std::process::Command::new("taskset")
        .args(["-c", "0", RUNNER, "describe-host"])
        .output()
        .expect("taskset runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let host: echomark_archive::Host = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(host.logical_cpus, online);
}
