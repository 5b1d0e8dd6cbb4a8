//! The stop flag of a command that runs until told to stop (`serve`, `calibrate --serve`):
//! SIGTERM or SIGINT sets it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A signal whose handler could not be installed.
#[derive(Debug, thiserror::Error)]
#[error("cannot handle signal {signal}: {source}")]
pub struct SignalError {
    pub signal: i32,
    #[source]
    pub source: std::io::Error,
}

/// A flag that SIGTERM or SIGINT sets.
pub fn stop_flag() -> Result<Arc<AtomicBool>, SignalError> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, stop.clone())
            .map_err(|source| SignalError { signal, source })?;
    }
    Ok(stop)
}
