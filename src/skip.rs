//! How the workspace's tests skip what this machine cannot run (no Chromium, no arknet
//! fixtures, no network namespaces, no IPv6): outside CI a skip says why, once per reason;
//! under `CI=true` it is a failure naming what is missing, so CI can never go green
//! without running every test.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Reasons already printed by this process.
static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Whether this process runs under CI (`CI=true`, as `.ci/run` and GitHub Actions set it).
pub fn under_ci() -> bool {
    ci_value(std::env::var("CI").ok().as_deref())
}

/// Whether a value of `CI` means CI.
fn ci_value(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Skips the calling test because `missing` is not available: panics under CI, else prints
/// `skipped: {missing}` the first time this process meets that reason. The caller returns
/// right after.
pub fn because(missing: &str) {
    assert!(
        !under_ci(),
        "{missing}; under CI=true a test that cannot run is a failure (.ci/run installs what the tests need)"
    );
    let first = SAID
        .lock()
        .map(|mut said| said.insert(missing.to_string()))
        .unwrap_or(true);
    if first {
        eprintln!("skipped: {missing}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_is_recognised_as_github_and_ci_run_set_it() {
        assert!(ci_value(Some("true")) && ci_value(Some("TRUE")) && ci_value(Some("1")));
        assert!(!ci_value(None) && !ci_value(Some("")) && !ci_value(Some("false")));
    }

    #[test]
    fn a_skip_under_ci_is_a_failure_that_names_what_is_missing() {
        let outcome = std::panic::catch_unwind(|| {
            if under_ci() {
                because("the thing under test");
            } else {
                // Outside CI the same call returns; under CI it must not.
                because("the thing under test");
                panic!("returned");
            }
        });
        let message = outcome.expect_err("either way it panics here");
        let text = message
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| message.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        if under_ci() {
            assert!(text.contains("the thing under test"), "{text}");
        } else {
            assert_eq!(text, "returned");
        }
    }
}
