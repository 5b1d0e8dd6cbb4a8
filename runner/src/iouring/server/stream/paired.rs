//! A paired shard's receives (in process, the server half sharing its ring with the clients
//! it serves): each is issued right after the guest's sends, without waiting, and before the
//! ring sleeps every listed one waits for its bytes.

use super::Shard;
use crate::framing::Framing;
use crate::iouring::Guest;

impl<F: Framing + Clone, G: Guest> Shard<F, G> {
    /// Paired, about to sleep: arms every listed receive to wait for its bytes.
    pub(super) fn arm_blocking(&mut self) -> std::io::Result<()> {
        for slot in std::mem::take(&mut self.unarmed) {
            if let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) {
                conn.listed = false;
                self.arm_receive_waiting(slot, true)?;
            }
        }
        Ok(())
    }

    /// Arms the connection's next receive, or (paired, once upgraded) lists it to be armed
    /// after the guest's sends.
    pub(super) fn rearm(&mut self, slot: usize) -> std::io::Result<()> {
        if !self.paired {
            return self.arm_receive(slot);
        }
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        if conn.upgrade.is_some() {
            return self.arm_receive(slot);
        }
        if !conn.listed {
            conn.listed = true;
            self.unarmed.push(slot);
        }
        Ok(())
    }

    /// Paired: arms the listed receives once the guest has sent (`guest_sending`), or
    /// where the last receive filled its buffer.
    pub(super) fn arm_paired(&mut self, guest_sending: bool) -> std::io::Result<()> {
        let mut listed = std::mem::take(&mut self.unarmed);
        let mut kept = 0;
        for i in 0..listed.len() {
            let slot = listed[i];
            let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            if conn.closing || conn.close_after_send {
                conn.listed = false;
                continue;
            }
            if guest_sending || conn.recv_full {
                conn.listed = false;
                self.arm_receive(slot)?;
            } else {
                listed[kept] = slot;
                kept += 1;
            }
        }
        listed.truncate(kept);
        self.unarmed = listed;
        Ok(())
    }
}
