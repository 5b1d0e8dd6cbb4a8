//! Deliberate server misbehaviour (`--inject-fault`, hidden, for tests), decided in one place
//! for every protocol: the tests prove that the client's checks catch what they claim to.

use std::time::{Duration, Instant};

use crate::case::{Fault, STALL, STALL_EVERY};
use crate::message::HEADER_LEN;

/// Every how many admitted messages a fault strikes.
const EVERY: u64 = 97;

/// What the server does with one admitted message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Echo it (possibly corrupted in place).
    Echo,
    /// Never echo it.
    Drop,
    /// Echo it after the next message for the same peer (a stream flushes it at the end of
    /// the batch it came in when no other message follows).
    Delay,
}

/// Counts admitted messages and applies one fault.
#[derive(Debug, Clone)]
pub struct FaultInjector {
    fault: Option<Fault>,
    seen: u64,
    /// `stall`: when the server stops answering next.
    next_stall: Instant,
}

impl FaultInjector {
    pub fn new(fault: Option<Fault>) -> Self {
        Self {
            fault,
            seen: 0,
            next_stall: Instant::now() + STALL_EVERY,
        }
    }

    /// `stall`: how long the server must stop before it handles what it just read, when a
    /// stall is due at `now`.
    pub fn stall(&mut self, now: Instant) -> Option<Duration> {
        if self.fault != Some(Fault::Stall) || now < self.next_stall {
            return None;
        }
        self.next_stall = now + STALL_EVERY;
        Some(STALL)
    }

    /// Decides about the message the server just admitted; corruption flips the first
    /// filler byte in place.
    pub fn on_message(&mut self, message: &mut [u8]) -> Action {
        self.seen += 1;
        let strikes = self.seen % EVERY == 0;
        match self.fault {
            Some(Fault::Drop) if strikes => Action::Drop,
            Some(Fault::Corrupt) if strikes && message.len() > HEADER_LEN => {
                message[HEADER_LEN] ^= 0x5A;
                Action::Echo
            }
            Some(Fault::Reorder) if strikes => Action::Delay,
            _ => Action::Echo,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_due_once_per_interval_and_only_for_the_stall_fault() {
        let start = Instant::now();
        let mut f = FaultInjector::new(Some(Fault::Stall));
        assert_eq!(f.stall(start), None);
        let later = start + STALL_EVERY + Duration::from_millis(1);
        assert_eq!(f.stall(later), Some(STALL));
        assert_eq!(f.stall(later + Duration::from_millis(1)), None);
        assert_eq!(f.stall(later + STALL_EVERY), Some(STALL));
        assert_eq!(FaultInjector::new(Some(Fault::Drop)).stall(later), None);
    }

    #[test]
    fn each_fault_strikes_every_97th_message_and_no_fault_never_does() {
        for (fault, expected) in [
            (None, Action::Echo),
            (Some(Fault::Drop), Action::Drop),
            (Some(Fault::Reorder), Action::Delay),
            (Some(Fault::Corrupt), Action::Echo),
        ] {
            let mut f = FaultInjector::new(fault);
            let mut message = vec![0u8; 32];
            for _ in 1..EVERY {
                assert_eq!(f.on_message(&mut message), Action::Echo);
            }
            assert_eq!(message[HEADER_LEN], 0);
            assert_eq!(f.on_message(&mut message), expected, "{fault:?}");
            let corrupted = fault == Some(Fault::Corrupt);
            assert_eq!(message[HEADER_LEN] != 0, corrupted);
        }
    }
}
