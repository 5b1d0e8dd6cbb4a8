//! Property test: whatever bytes an archive holds, the reader returns a result (an archive
//! or a problem naming the file), never a panic.

use proptest::prelude::*;

fn valid_archive() -> Vec<u8> {
    crate::common::archive(crate::common::six_runs())
        .to_string()
        .into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = echomark::read::parse::parse("fuzz.json", &bytes);
    }

    #[test]
    fn damaged_archives_never_panic(cut in 0usize..4096, flips in proptest::collection::vec((0usize..8192, any::<u8>()), 0..8)) {
        let mut bytes = valid_archive();
        for (at, value) in flips {
            let i = at % bytes.len();
            bytes[i] = value;
        }
        bytes.truncate(bytes.len().saturating_sub(cut));
        match echomark::read::parse::parse("fuzz.json", &bytes) {
            Ok(_) => {}
            Err(problem) => prop_assert_eq!(problem.file, "fuzz.json"),
        }
    }
}

#[test]
fn the_undamaged_archive_parses() {
    assert!(echomark::read::parse::parse("ok.json", &valid_archive()).is_ok());
}

/// The demo archive (echomark's own format).
fn demo_archive() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/site/demo/archive.json"
    ))
    .unwrap()
}

proptest! {
    // Each case runs the real binary twice; a few cases are enough to catch a panic path.
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Damaged archives through `validate` and `build`: an answer (exit 0, 1 or 2), never a
    /// panic (exit 101), and a failed build leaves nothing behind.
    #[test]
    fn damaged_archives_never_panic_the_binary(cut in 0usize..40_000, flips in proptest::collection::vec((0usize..200_000, any::<u8>()), 0..6)) {
        let mut bytes = demo_archive();
        for (at, value) in flips {
            let i = at % bytes.len();
            bytes[i] = value;
        }
        bytes.truncate(bytes.len().saturating_sub(cut));
        let dir = tempfile::tempdir().unwrap();
        let path = crate::common::write(dir.path(), "ds", "archive.json", &String::from_utf8_lossy(&bytes));
        let out = dir.path().join("site");
        for args in [
            vec!["validate", path.to_str().unwrap()],
            vec!["build", "--raw", path.to_str().unwrap(), "--out", out.to_str().unwrap()],
        ] {
            let o = crate::common::echomark(&args);
            let stderr = String::from_utf8_lossy(&o.stderr);
            prop_assert!(matches!(o.status.code(), Some(0..=2)), "{args:?}: {stderr}");
            prop_assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        }
    }
}
