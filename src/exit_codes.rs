//! Every exit code `echomark` uses, in one place.

/// Success: the archives are well formed (failed runs are data), the files were written,
/// the site is up to date.
pub const OK: u8 = 0;
/// Malformed or inconsistent input, an I/O failure, or a stale site.
pub const FAILED: u8 = 1;
/// A request that cannot be carried out as asked: an `--out` that is a file, overlaps an
/// input, or holds things echomark did not write; for `compare`, any usage or input error.
pub const USAGE: u8 = 2;
/// `compare --fail-on regression` found a regression.
pub const REGRESSION: u8 = 1;
/// `compare --fail-on regression` compared nothing: the two sides share no configuration
/// (a gate pointed at the wrong folders must not pass).
pub const NOTHING_COMPARED: u8 = 3;
