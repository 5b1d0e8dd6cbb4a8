//! The server side's per-phase counts. Client tasks own an [`ErrorCounters`] per phase and
//! merge it at the end, so the hot path never touches shared memory (arknet-echo-core.md §15
//! item 9); a server task owns one [`ServerStats`], readable from the orchestrator thread.

use std::sync::atomic::{AtomicU64, Ordering};

use echomark_archive::ErrorCounters;

use crate::message::{self, HeaderError, PHASE_MEASURED, PHASE_WARMUP};

/// What one server task observed, per phase tag. Each task owns one (never shared between
/// tasks), and the orchestrator reads it after the task ended; relaxed atomics only make it
/// readable from another thread.
#[derive(Debug, Default)]
pub struct ServerStats {
    phases: [ServerPhaseStats; 2],
    /// `serve`: messages without echomark's header, echoed all the same.
    foreign: AtomicU64,
}

#[derive(Debug, Default)]
struct ServerPhaseStats {
    received: AtomicU64,
    content_errors: AtomicU64,
    send_rejections: AtomicU64,
    send_completion_errors: AtomicU64,
    disconnect_errors: AtomicU64,
}

/// A server-side event, charged to the phase that the message's tag names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerEvent {
    Received,
    ContentError,
    SendRejected,
    SendShort,
    Disconnected,
}

impl ServerStats {
    /// Counts one event on `phase` (0 warmup, 1 measured; anything else is warmup, as arknet
    /// charges malformed tags).
    pub fn count(&self, phase: u8, event: ServerEvent) {
        let p = &self.phases[usize::from(phase == PHASE_MEASURED)];
        let c = match event {
            ServerEvent::Received => &p.received,
            ServerEvent::ContentError => &p.content_errors,
            ServerEvent::SendRejected => &p.send_rejections,
            ServerEvent::SendShort => &p.send_completion_errors,
            ServerEvent::Disconnected => &p.disconnect_errors,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The server-side check of one received message (arknet §2.5): counts it and returns
    /// its phase, or counts a content error and returns `None` (no echo). Short messages and
    /// bad tags are charged to warmup; a bad magic with a valid tag to the tagged phase.
    pub fn admit(&self, message: &[u8]) -> Option<u8> {
        match message::parse_header(message) {
            Ok(h) => {
                self.count(h.phase, ServerEvent::Received);
                Some(h.phase)
            }
            Err(e) => {
                let tagged = match e {
                    HeaderError::BadMagic => message[3],
                    _ => PHASE_WARMUP,
                };
                self.count(tagged, ServerEvent::ContentError);
                None
            }
        }
    }

    /// `serve`'s check: a message with echomark's header counts as received on its phase,
    /// any other as foreign; both are echoed, so ordinary clients work against `serve`.
    /// Returns the phase to charge the echo's outcome to (the measured phase for foreign
    /// messages, which have none).
    pub fn admit_any(&self, message: &[u8]) -> u8 {
        match message::parse_header(message) {
            Ok(h) => {
                self.count(h.phase, ServerEvent::Received);
                h.phase
            }
            Err(_) => {
                self.foreign.fetch_add(1, Ordering::Relaxed);
                PHASE_MEASURED
            }
        }
    }

    /// Messages without echomark's header that were echoed (`serve`).
    pub fn foreign(&self) -> u64 {
        self.foreign.load(Ordering::Relaxed)
    }

    /// Messages received on `phase`.
    pub fn received(&self, phase: u8) -> u64 {
        self.phases[usize::from(phase == PHASE_MEASURED)]
            .received
            .load(Ordering::Relaxed)
    }

    /// The server's error counters on `phase`, to merge with the clients'.
    pub fn counters(&self, phase: u8) -> ErrorCounters {
        let p = &self.phases[usize::from(phase == PHASE_MEASURED)];
        ErrorCounters {
            content_errors: p.content_errors.load(Ordering::Relaxed),
            server_send_rejections: p.send_rejections.load(Ordering::Relaxed),
            server_send_completion_errors: p.send_completion_errors.load(Ordering::Relaxed),
            disconnect_errors: p.disconnect_errors.load(Ordering::Relaxed),
            ..ErrorCounters::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admitted_messages_count_on_their_phase_and_bad_ones_are_content_errors() {
        let stats = ServerStats::default();
        let mut m = Vec::new();
        let header = message::Header {
            phase: PHASE_MEASURED,
            client_id: 1,
            sequence: 2,
        };
        message::write_message(&mut m, header, 32);
        assert_eq!(stats.admit(&m), Some(PHASE_MEASURED));
        m[0] = b'X';
        assert_eq!(stats.admit(&m), None);
        assert_eq!(stats.admit(b"short"), None);
        assert_eq!(stats.received(PHASE_MEASURED), 1);
        assert_eq!(stats.counters(PHASE_MEASURED).content_errors, 1);
        assert_eq!(stats.counters(PHASE_WARMUP).content_errors, 1);
    }
}
