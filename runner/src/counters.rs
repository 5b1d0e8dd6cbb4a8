//! Per-phase error counters: owned by one client or server task, merged at the end, so the
//! hot path never touches shared memory (arknet-echo-core.md §15 item 9).

use std::ops::AddAssign;
use std::sync::atomic::{AtomicU64, Ordering};

/// The error counters of one phase, with arknet's names and meanings (§7.3).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// The OS refused a client send outright (an error other than "would block").
    pub client_send_rejections: u64,
    /// A client datagram went out short.
    pub client_send_completion_errors: u64,
    /// The OS refused a server echo.
    pub server_send_rejections: u64,
    /// A server echo datagram went out short.
    pub server_send_completion_errors: u64,
    pub content_errors: u64,
    pub order_errors: u64,
    pub unexpected_messages: u64,
    pub disconnect_errors: u64,
    pub udp_lost_messages: u64,
    pub unfinished_messages: u64,
    /// A client or server task panicked, or a socket option could not be set.
    pub callback_exceptions: u64,
    pub drain_timeouts: u64,
    /// Cannot happen in this design (no completion callbacks); kept at 0 for arknet parity.
    pub duplicate_completions: u64,
}

impl Counters {
    /// Sum of all counters.
    pub fn total(&self) -> u64 {
        let Counters {
            client_send_rejections,
            client_send_completion_errors,
            server_send_rejections,
            server_send_completion_errors,
            content_errors,
            order_errors,
            unexpected_messages,
            disconnect_errors,
            udp_lost_messages,
            unfinished_messages,
            callback_exceptions,
            drain_timeouts,
            duplicate_completions,
        } = *self;
        client_send_rejections
            + client_send_completion_errors
            + server_send_rejections
            + server_send_completion_errors
            + content_errors
            + order_errors
            + unexpected_messages
            + disconnect_errors
            + udp_lost_messages
            + unfinished_messages
            + callback_exceptions
            + drain_timeouts
            + duplicate_completions
    }
}

impl AddAssign for Counters {
    fn add_assign(&mut self, o: Self) {
        self.client_send_rejections += o.client_send_rejections;
        self.client_send_completion_errors += o.client_send_completion_errors;
        self.server_send_rejections += o.server_send_rejections;
        self.server_send_completion_errors += o.server_send_completion_errors;
        self.content_errors += o.content_errors;
        self.order_errors += o.order_errors;
        self.unexpected_messages += o.unexpected_messages;
        self.disconnect_errors += o.disconnect_errors;
        self.udp_lost_messages += o.udp_lost_messages;
        self.unfinished_messages += o.unfinished_messages;
        self.callback_exceptions += o.callback_exceptions;
        self.drain_timeouts += o.drain_timeouts;
        self.duplicate_completions += o.duplicate_completions;
    }
}

/// What one server task observed, per phase tag. Each task owns one (never shared between
/// tasks), and the orchestrator reads it after the task ended; relaxed atomics only make it
/// readable from another thread.
#[derive(Debug, Default)]
pub struct ServerStats {
    phases: [ServerPhaseStats; 2],
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
        let p = &self.phases[usize::from(phase == 1)];
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
        match crate::wire::parse_header(message) {
            Ok(h) => {
                self.count(h.phase, ServerEvent::Received);
                Some(h.phase)
            }
            Err(e) => {
                let tagged = match e {
                    crate::wire::HeaderError::BadMagic => message[3],
                    _ => crate::wire::PHASE_WARMUP,
                };
                self.count(tagged, ServerEvent::ContentError);
                None
            }
        }
    }

    /// Messages received on `phase`.
    pub fn received(&self, phase: u8) -> u64 {
        self.phases[usize::from(phase == 1)]
            .received
            .load(Ordering::Relaxed)
    }

    /// The server's error counters on `phase`, as a [`Counters`] to merge with the clients'.
    pub fn counters(&self, phase: u8) -> Counters {
        let p = &self.phases[usize::from(phase == 1)];
        Counters {
            content_errors: p.content_errors.load(Ordering::Relaxed),
            server_send_rejections: p.send_rejections.load(Ordering::Relaxed),
            server_send_completion_errors: p.send_completion_errors.load(Ordering::Relaxed),
            disconnect_errors: p.disconnect_errors.load(Ordering::Relaxed),
            ..Counters::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Counters;

    #[test]
    fn merge_adds_every_field() {
        let mut a = Counters {
            order_errors: 2,
            udp_lost_messages: 5,
            ..Default::default()
        };
        a += Counters {
            order_errors: 1,
            drain_timeouts: 1,
            ..Default::default()
        };
        assert_eq!(
            (a.order_errors, a.udp_lost_messages, a.drain_timeouts),
            (3, 5, 1)
        );
        assert_eq!(a.total(), 9);
    }
}
