//! Every exit code `echomark-runner` uses, in one place (as nextest-metadata's `exit_codes`).

/// Success: the measurement is ok; the matrix recorded every run and none failed.
pub const OK: u8 = 0;
/// A measurement ran but failed a check, or a matrix recorded failed runs.
pub const FAILED: u8 = 1;
/// A request that cannot be run: bad flags, a bad matrix, an archive that cannot be resumed.
pub const USAGE: u8 = 2;
/// Interrupted by SIGINT (128 + 2), the archive saved.
pub const SIGINT: u8 = 130;
/// Interrupted by SIGTERM (128 + 15), the archive saved.
pub const SIGTERM: u8 = 143;

/// [`OK`] for a measurement or check that passed, else [`FAILED`].
pub fn verdict(passed: bool) -> u8 {
    if passed {
        OK
    } else {
        FAILED
    }
}
