//! The Kubernetes manifests of `deploy/kubernetes` pass `scripts/validate-manifests`: each
//! resource against Kubernetes' schemas (kubernetes-validate, strict), and the fleet's sizes,
//! names and ports against each other. Copies broken in one way each show that the script
//! refuses what it should, naming the file and the field.
//!
//! kubernetes-validate comes from PyPI into `target/kubernetes-validate`, installed by the
//! script when missing (`.ci/run` runs it before the tests); without it these tests say
//! "skipped" (a failure under CI) rather than reach for the network.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Whether the validator is installed; a skip (a failure under CI) when not.
fn installed() -> bool {
    let found = repo()
        .join("target/kubernetes-validate/bin/kubernetes-validate")
        .is_file();
    if !found {
        echomark::skip::because(
            "kubernetes-validate is not installed (scripts/validate-manifests installs it; .ci/run runs it)",
        );
    }
    found
}

/// `scripts/validate-manifests` on `dir` (the real manifests without one).
fn validate(dir: Option<&Path>) -> Output {
    let mut command = Command::new("bash");
    command.arg(repo().join("scripts/validate-manifests"));
    if let Some(dir) = dir {
        command.arg(dir);
    }
    command.output().expect("bash runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A copy of `deploy/kubernetes` in a new temporary folder with `from` replaced by `to` in
/// `file` (which must hold `from` exactly once).
fn broken(file: &str, from: &str, to: &str) -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("kubernetes");
    std::fs::create_dir(&dir).unwrap();
    for entry in std::fs::read_dir(repo().join("deploy/kubernetes")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let path = dir.join(file);
    let manifest = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        manifest.matches(from).count(),
        1,
        "{file} holds {from:?} once (the test breaks it there)"
    );
    std::fs::write(&path, manifest.replace(from, to)).unwrap();
    (temp, dir)
}

/// The script fails on the copy of the manifests broken by `from` → `to`, saying each of
/// `expected`.
fn refused(file: &str, from: &str, to: &str, expected: &[&str]) {
    let (_temp, dir) = broken(file, from, to);
    let o = validate(Some(&dir));
    let said = text(&o);
    assert_eq!(o.status.code(), Some(1), "{from} → {to} must fail: {said}");
    for e in expected {
        assert!(said.contains(e), "{from} → {to}: no {e:?} in\n{said}");
    }
}

#[test]
fn the_committed_manifests_pass_their_schemas_and_agree_with_each_other() {
    if !installed() {
        return;
    }
    let o = validate(None);
    let said = text(&o);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("passed: fleet.yaml server.yaml"), "{said}");
    assert!(
        said.contains("passed: fleet.yaml: job/echomark-fleet, its headless Service"),
        "{said}"
    );
}

#[test]
fn a_fleet_job_that_is_not_indexed_is_refused_by_name() {
    if !installed() {
        return;
    }
    refused(
        "fleet.yaml",
        "completionMode: Indexed",
        "completionMode: NonIndexed",
        &["fleet.yaml: job/echomark-fleet: spec.completionMode: is NonIndexed, must be Indexed"],
    );
}

#[test]
fn a_value_of_the_wrong_type_fails_the_schema() {
    if !installed() {
        return;
    }
    refused(
        "fleet.yaml",
        "parallelism: 4",
        "parallelism: \"four\"",
        &["spec.parallelism: 'four' is not of type 'integer'"],
    );
}

#[test]
fn a_misspelt_field_fails_the_strict_schema_and_the_coordinator_loses_its_name() {
    if !installed() {
        return;
    }
    refused(
        "fleet.yaml",
        "      subdomain: echomark-fleet",
        "      subdomian: echomark-fleet",
        &[
            "'subdomian' was unexpected",
            "spec.template.spec.subdomain: is missing",
        ],
    );
}

#[test]
fn a_fleet_size_that_the_job_does_not_have_is_refused() {
    if !installed() {
        return;
    }
    refused(
        "fleet.yaml",
        "  completions: 4",
        "  completions: 3",
        &["spec.completions: is 3, must equal --fleet-size (4)"],
    );
}

#[test]
fn a_server_address_on_a_port_its_service_lacks_is_refused() {
    if !installed() {
        return;
    }
    refused(
        "server.yaml",
        "      port: 7000",
        "      port: 7001",
        &["server.yaml: service/echomark-server: spec.ports: has no port 7000"],
    );
}

#[test]
fn ci_checks_the_manifests_and_installs_the_validator_before_the_tests() {
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let check = ci
        .find("\nbash scripts/validate-manifests\n")
        .expect(".ci/run runs scripts/validate-manifests");
    let tests = ci
        .find("cargo test --workspace\n")
        .expect(".ci/run runs the tests");
    assert!(
        check < tests,
        "the check (which installs kubernetes-validate) runs before the tests that use it"
    );
}

/// The fleet container's `args` in fleet.yaml, read as the block list they are written as.
fn fleet_args() -> Vec<String> {
    let fleet = std::fs::read_to_string(repo().join("deploy/kubernetes/fleet.yaml")).unwrap();
    let mut lines = fleet
        .lines()
        .skip_while(|l| l.trim() != "- name: fleet")
        .skip_while(|l| l.trim() != "args:")
        .skip(1);
    let mut args = Vec::new();
    for line in lines.by_ref() {
        match line.trim().strip_prefix("- ") {
            Some(arg) => args.push(arg.trim_matches('"').to_string()),
            None if line.trim().starts_with('#') => continue,
            None => break,
        }
    }
    args
}

#[test]
fn the_documented_patch_for_another_fleet_size_names_the_arguments_where_they_are() {
    let args = fleet_args();
    assert_eq!(args[..2], ["fleet", "job"], "{args:?}");
    let doc = std::fs::read_to_string(repo().join("docs/kubernetes.md")).unwrap();
    let prefix = "- {op: test, path: /spec/template/spec/containers/0/args/";
    let tests: Vec<(usize, &str)> = doc
        .lines()
        .filter_map(|l| l.trim().strip_prefix(prefix))
        .map(|rest| {
            let (index, value) = rest.split_once(", value: ").expect("index, value");
            (index.parse().unwrap(), value.trim_end_matches('}'))
        })
        .collect();
    assert_eq!(
        tests.len(),
        2,
        "the patch tests --fleet-size and --fleet-generators"
    );
    for (index, flag) in tests {
        assert_eq!(args.get(index).map(String::as_str), Some(flag), "{args:?}");
        let replaced = format!("containers/0/args/{}, value:", index + 1);
        assert!(
            doc.contains(&replaced),
            "the patch replaces the value after {flag}"
        );
    }
}
