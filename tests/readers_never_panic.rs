//! Property test: whatever bytes an archive holds, the reader returns a result (an archive
//! or a problem naming the file), never a panic.
#![recursion_limit = "256"]

mod common;

use proptest::prelude::*;

fn valid_archive() -> Vec<u8> {
    common::archive(common::six_runs()).to_string().into_bytes()
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
