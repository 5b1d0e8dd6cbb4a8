//! The README is a guide whose commands run: every command in its `sh` blocks is run here,
//! in a scratch folder, with the workspace's own binaries first on `PATH` (what `cargo
//! install` would put there), so the guide cannot rot.
//!
//! Three kinds of line are not run as written, each for a reason checked here instead:
//! - `cargo test --workspace` is this very run; `.ci/run` must call exactly it;
//! - `cargo install --locked --path P` would compile the workspace again: P must be a
//!   package of this workspace whose binary the tests already built;
//! - `cargo run --release -p echomark -- build` runs as the built `echomark build`, in a
//!   scratch folder whose `raw-results` is the committed one, and must write the committed
//!   site byte for byte.
//!
//! The rest run verbatim but for what a test cannot have: the example server at port 7000
//! is a real `echomark-runner serve` on a free port, `./my-server` is a two-line script
//! starting one, `BASE` and `NEW` are two copies of the dataset the guide measured, and the
//! matrix measures 0.1 s runs with a 10 s budget instead of 30 minutes.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The README's commands, in order, each on one line (continuations joined, comments cut).
fn guide_commands(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let code = match line.find("  #") {
            Some(at) => &line[..at],
            None => line,
        };
        let code = code.trim_end();
        if let Some(head) = code.strip_suffix('\\') {
            pending.push_str(head.trim_end());
            pending.push(' ');
            continue;
        }
        pending.push_str(code.trim_start());
        if !pending.trim().is_empty() {
            out.push(pending.trim().to_string());
        }
        pending.clear();
    }
    out
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The folder of the tests' binaries: `echomark` and `echomark-runner` side by side.
fn bin_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_echomark"))
        .parent()
        .unwrap()
        .to_path_buf();
    assert!(
        dir.join("echomark-runner").exists(),
        "the workspace's tests build echomark-runner beside echomark"
    );
    dir
}

/// A free TCP port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `line` with `sh -c` in `dir`, the tests' binaries first on `PATH`; panics with its
/// output unless it exits 0.
fn run_line(line: &str, dir: &Path) -> String {
    let path = format!(
        "{}:{}",
        bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .args(["-c", line])
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "`{line}` failed: {text}");
    text
}

/// Whether the files under `a` and `b` are the same, byte for byte.
fn same_tree(a: &Path, b: &Path) -> Result<(), String> {
    let list = |root: &Path| -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    out.push(path.strip_prefix(root).unwrap().to_path_buf());
                }
            }
        }
        out.sort();
        out
    };
    let (left, right) = (list(a), list(b));
    if left != right {
        return Err(format!("{} files against {}", left.len(), right.len()));
    }
    for file in left {
        if std::fs::read(a.join(&file)).unwrap() != std::fs::read(b.join(&file)).unwrap() {
            return Err(format!("{} differs", file.display()));
        }
    }
    Ok(())
}

/// A server the guide's commands measure: `echomark-runner serve` on `port`, stopped on drop.
struct Server(std::process::Child);

impl Server {
    fn start(port: u16) -> Self {
        let child = Command::new(bin_dir().join("echomark-runner"))
            .args(["serve", "--protocol", "tcp", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut server = Server(child);
        // The first line it prints says it listens.
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(server.0.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("\"listening\""), "{line}");
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn every_command_of_the_readme_guide_runs() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = guide_commands(&readme);
    assert!(
        readme.lines().count() <= 250,
        "the README is a guide of at most 250 lines"
    );
    assert!(
        lines.len() >= 10,
        "the guide's commands were found: {lines:?}"
    );
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    // The example server, and `./my-server --port N` as a script that starts one.
    let port = free_port();
    let _server = Server::start(port);
    let script = dir.join("my-server");
    std::fs::write(
        &script,
        "#!/bin/sh\nexec echomark-runner serve --protocol tcp --listen \"127.0.0.1:$2\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut ran = 0;
    for line in &lines {
        if line == "cargo test --workspace" {
            let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
            assert!(
                ci.lines()
                    .any(|l| l.trim_end().ends_with("cargo test --workspace")),
                ".ci/run runs the README's test command"
            );
            continue;
        }
        if let Some(path) = line.strip_prefix("cargo install --locked --path ") {
            let manifest = std::fs::read_to_string(repo().join(path).join("Cargo.toml")).unwrap();
            let name = if path == "runner" {
                "echomark-runner"
            } else {
                "echomark"
            };
            assert!(
                manifest.contains(&format!("name = \"{name}\"")),
                "{path} is the package of {name}"
            );
            assert!(bin_dir().join(name).exists(), "{name} is built");
            continue;
        }
        if line == "cargo run --release -p echomark -- build" {
            let copy = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(repo().join("raw-results"), copy.path().join("raw-results"))
                .unwrap();
            run_line("echomark build", copy.path());
            if let Err(why) = same_tree(&copy.path().join("site"), &repo().join("site")) {
                panic!("the README's build command does not write the committed site: {why}");
            }
            ran += 1;
            continue;
        }
        let adapted = line
            .replace("127.0.0.1:7000", &format!("127.0.0.1:{port}"))
            .replace(
                "--until-decided --budget 30m",
                "--until-decided --budget 10s --seconds 0.1 --warmup 0.05 --repetitions 2",
            )
            .replace(" BASE NEW ", " raw-results/before raw-results/after ");
        let output = run_line(&adapted, dir);
        ran += 1;
        // After the matrix: its archives are the guide's dataset, and the comparison's two
        // sides are copies of it.
        if line.starts_with("echomark-runner matrix ") {
            let mine = dir.join("raw-results/mine");
            for name in ["mine.json", "serve-tokio.json"] {
                assert!(mine.join(name).exists(), "{name}: {output}");
            }
            for side in ["before", "after"] {
                std::fs::create_dir_all(dir.join("raw-results").join(side)).unwrap();
                for name in ["mine.json", "serve-tokio.json"] {
                    std::fs::copy(
                        mine.join(name),
                        dir.join("raw-results").join(side).join(name),
                    )
                    .unwrap();
                }
            }
        }
        if line.starts_with("echomark build --raw raw-results --out site") {
            assert!(dir.join("site/en/index.html").exists(), "{output}");
        }
        if line.contains("--markdown summary.md") {
            assert!(dir.join("summary.md").exists(), "{output}");
        }
    }
    assert!(ran >= 7, "ran {ran} of the guide's commands: {lines:?}");
}
