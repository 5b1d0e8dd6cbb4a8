//! One io_uring shard serving TCP connections: a multishot accept on its own listener, a
//! receive armed per connection (multishot into the buffer ring, or single-shot into the
//! connection's buffer), and one send in flight per connection with whatever the echo owes
//! queued behind it. WebSocket connections are upgraded here, on the ring, before their
//! frames are echoed.

use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd};
use std::time::{Duration, Instant};

use io_uring::opcode;

use super::{ACCEPT_BACKOFF, STOP_GRACE, TURN};
use crate::framing::Framing;
use crate::iouring::buffers::BufferRing;
use crate::iouring::driver::{
    on_target, Completion, Driver, RingCounters, Target, GUEST as GUEST_SENDS,
    SERVER as SERVER_SENDS,
};
use crate::iouring::{Guest, ShardContext, GUEST};
use crate::traffic::stream::{IdleLimit, ServerSide};

mod conn;
mod paired;

/// Buffers in the ring and bytes each: 8 MiB per shard, enough for 16 KiB messages at 256
/// in flight; an empty ring only re-arms a receive (`ENOBUFS`).
const RING_BUFFERS: u16 = 512;
const RING_BUFFER_SIZE: usize = 16 * 1024;
/// Bytes a single-shot receive reads at a time.
const READ_CHUNK: usize = 64 * 1024;

/// What a completion answers, in the top byte of its `user_data`; the connection's slot is
/// in the low 32 bits.
const ACCEPT: u64 = 1;
const RECV: u64 = 2;
const SEND: u64 = 3;

fn tag(kind: u64, slot: usize) -> u64 {
    (kind << 56) | slot as u64
}

/// One connection.
struct Conn<F> {
    socket: std::net::TcpStream,
    target: Target,
    side: ServerSide<F>,
    /// WebSocket: the upgrade request read so far, until the `101` is queued.
    upgrade: Option<Vec<u8>>,
    /// The bytes of the send in flight, and how many of them the kernel took.
    sending: Option<Vec<u8>>,
    /// A zero-copy echo in flight instead: the provided buffer it is sent from, and how
    /// many of its bytes are the echo.
    lent: Option<(u16, usize)>,
    /// Whether the lent buffer's send was submitted (until the end of the turn it was
    /// not: another receive in the same turn copies it out, so both leave in one send).
    lent_sending: bool,
    sent: usize,
    /// An emptied send buffer, for the next batch.
    spare: Vec<u8>,
    /// Single-shot receives of raw bytes and of the upgrade request read here (allocated
    /// on first use).
    read_buf: Vec<u8>,
    /// The single-shot receive in flight reads straight into `side.recv`.
    direct: bool,
    recv_armed: bool,
    /// Paired: the last receive filled its buffer (more may be waiting), and how long the
    /// receive in flight may read; whether the connection is listed in `unarmed`.
    recv_full: bool,
    recv_len: usize,
    listed: bool,
    /// Listed in the shard's `owed`: echoes wait for the end of the turn.
    owed: bool,
    /// Operations in flight: the slot is freed only when none are.
    ops: u32,
    closing: bool,
    /// Close once `out` is written (a WebSocket close answered, a refused upgrade).
    close_after_send: bool,
    last_heard: Instant,
}

/// The shard: its ring first, so the ring is released before the memory it points into.
struct Shard<F, G> {
    driver: Driver,
    buffers: Option<BufferRing>,
    conns: Vec<Option<Conn<F>>>,
    free: Vec<usize>,
    /// Connections that received this turn: their echoes are sent when the turn's
    /// completions are all taken.
    owed: Vec<usize>,
    /// `None` when the shard serves no connection (a client's shard).
    listener: Option<TcpListener>,
    ctx: ShardContext,
    /// What else the ring carries (an in-process measurement's clients).
    guest: G,
    framing: F,
    /// `--framing raw`: bytes back as they come.
    bytes: bool,
    websocket: bool,
    idle: Option<IdleLimit>,
    accept_armed: bool,
    accept_after: Option<Instant>,
    /// Provided buffers held by zero-copy echoes in flight.
    lent: u16,
    /// Paired with a guest on the ring ([`ShardContext::paired`]), and the connections
    /// whose next receive waits for the guest's sends.
    paired: bool,
    unarmed: Vec<usize>,
    last_idle_scan: Instant,
}

/// Serves `listener` (if any) and `guest` on this thread until the shard is told to stop.
pub fn serve<F: Framing + Clone, G: Guest>(
    mut ctx: ShardContext,
    listener: Option<TcpListener>,
    framing: F,
    bytes: bool,
    guest: G,
) -> std::io::Result<RingCounters> {
    let driver = ctx.driver()?;
    let buffers = if ctx.tuning.multishot {
        Some(BufferRing::register(
            driver.ring(),
            0,
            RING_BUFFERS,
            RING_BUFFER_SIZE,
        )?)
    } else {
        None
    };
    let websocket = crate::framing::codecs::upgrades(ctx.protocol);
    let paired = ctx.paired;
    ctx.serving();
    let mut shard = Shard {
        driver,
        buffers,
        conns: Vec::new(),
        free: Vec::new(),
        owed: Vec::new(),
        listener,
        guest,
        idle: ctx.hooks.idle_limit(),
        ctx,
        framing,
        bytes,
        websocket,
        accept_armed: false,
        accept_after: None,
        lent: 0,
        paired,
        unarmed: Vec::new(),
        last_idle_scan: Instant::now(),
    };
    let mut reaped = Vec::new();
    while !shard.ctx.stopping() {
        shard.keep_accepting()?;
        super::turn(
            &mut shard.driver,
            &mut shard.guest,
            shard.paired,
            &mut reaped,
        )?;
        for c in &reaped {
            shard.complete(*c)?;
        }
        shard.guest.after_turn(&mut shard.driver)?;
        if shard.paired {
            // After the guest's sends: the receives that find them.
            let guest_sending = shard.driver.peer_sent(GUEST_SENDS);
            shard.arm_paired(guest_sending)?;
        }
        shard.send_everything_owed()?;
        if shard.paired {
            let sending = shard.driver.peer_sent(SERVER_SENDS);
            shard.guest.arm_receives(&mut shard.driver, sending)?;
            if shard.driver.nothing_queued() {
                // About to sleep: every receive waits for its bytes, so none is missed.
                shard.arm_blocking()?;
                shard.guest.arm_blocking(&mut shard.driver)?;
            }
        }
        if let Some(b) = &shard.buffers {
            b.publish();
        }
        shard.close_idle();
    }
    shard.shut_down(&mut reaped);
    Ok(shard.driver.stats)
}

impl<F: Framing + Clone, G: Guest> Shard<F, G> {
    /// Arms the multishot accept when it is not armed (and no backoff is running).
    fn keep_accepting(&mut self) -> std::io::Result<()> {
        let Some(listener) = &self.listener else {
            return Ok(());
        };
        if self.accept_armed || self.accept_after.is_some_and(|t| Instant::now() < t) {
            return Ok(());
        }
        let entry = opcode::AcceptMulti::new(io_uring::types::Fd(listener.as_raw_fd()))
            .build()
            .user_data(tag(ACCEPT, 0));
        // SAFETY: the entry points to no memory; the listener outlives the ring.
        unsafe { self.driver.push(entry) }?;
        self.accept_armed = true;
        self.accept_after = None;
        Ok(())
    }

    fn complete(&mut self, c: Completion) -> std::io::Result<()> {
        if c.user_data & GUEST != 0 {
            return self.guest.complete(&mut self.driver, c);
        }
        let slot = (c.user_data & 0xffff_ffff) as usize;
        match c.user_data >> 56 {
            ACCEPT => self.accepted(c),
            RECV => self.received(slot, c),
            SEND => self.sent(slot, c),
            _ => Ok(()),
        }
    }

    fn accepted(&mut self, c: Completion) -> std::io::Result<()> {
        if !c.more() {
            self.accept_armed = false;
        }
        if c.result < 0 {
            if matches!(
                -c.result,
                libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM
            ) {
                self.accept_armed = false;
                self.accept_after = Some(Instant::now() + ACCEPT_BACKOFF);
            }
            return Ok(());
        }
        // SAFETY: a successful accept completion's result is a new descriptor we own.
        let socket = unsafe { std::net::TcpStream::from_raw_fd(c.result) };
        let _ = socket.set_nodelay(true);
        self.driver.stats.other_syscalls += 1;
        self.ctx.hooks.connected();
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        let target = self.driver.register(slot, socket.as_raw_fd());
        let duty = self.ctx.hooks.duty();
        self.conns[slot] = Some(Conn {
            socket,
            target,
            side: ServerSide::new(duty, self.framing.clone()),
            upgrade: self.websocket.then(Vec::new),
            sending: None,
            lent: None,
            lent_sending: false,
            sent: 0,
            spare: Vec::new(),
            read_buf: Vec::new(),
            direct: false,
            recv_armed: false,
            recv_full: false,
            recv_len: 0,
            listed: false,
            owed: false,
            ops: 0,
            closing: false,
            close_after_send: false,
            last_heard: Instant::now(),
        });
        self.rearm(slot)
    }

    fn arm_receive(&mut self, slot: usize) -> std::io::Result<()> {
        self.arm_receive_waiting(slot, false)
    }

    /// Arms the connection's receive; paired (once upgraded) it does not wait for bytes
    /// unless `wait`.
    fn arm_receive_waiting(&mut self, slot: usize, wait: bool) -> std::io::Result<()> {
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        if conn.closing || conn.close_after_send || conn.recv_armed {
            return Ok(());
        }
        let entry = match &self.buffers {
            Some(ring) => {
                on_target!(conn.target, |file| opcode::RecvMulti::new(
                    file,
                    ring.group()
                )
                .build())
            }
            None => {
                // Messages are read straight into the server side's buffer, as on tokio; the
                // upgrade request and raw bytes go through `read_buf`.
                conn.direct = !self.bytes && conn.upgrade.is_none();
                let buf: &mut [u8] = if conn.direct {
                    conn.side.recv.spare()
                } else {
                    if conn.read_buf.is_empty() {
                        conn.read_buf = vec![0; READ_CHUNK];
                    }
                    &mut conn.read_buf
                };
                conn.recv_len = buf.len();
                // Paired, once upgraded: the receive finds its bytes now or says so.
                let flags = if self.paired && !wait && conn.upgrade.is_none() {
                    libc::MSG_DONTWAIT
                } else {
                    0
                };
                on_target!(conn.target, |file| opcode::Recv::new(
                    file,
                    buf.as_mut_ptr(),
                    buf.len() as u32
                )
                .flags(flags)
                .build())
            }
        };
        // SAFETY: the buffer ring, `read_buf` and the server side's receive buffer live as
        // long as the connection's slot, which is freed only once no operation is in flight;
        // nothing touches the receive buffer until this receive completes.
        unsafe { self.driver.push(entry.user_data(tag(RECV, slot))) }?;
        conn.recv_armed = true;
        conn.ops += 1;
        self.driver.stats.receives_armed += 1;
        Ok(())
    }

    fn received(&mut self, slot: usize, c: Completion) -> std::io::Result<()> {
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        if !(self.buffers.is_some() && c.more()) {
            conn.recv_armed = false;
            conn.ops -= 1;
        }
        if conn.closing || conn.close_after_send {
            // Nothing read now is answered: the connection is closing, or owes only its last
            // answer. A completion that ends the receive of a closing connection (an error,
            // the end of the stream, but also bytes or an empty buffer ring) may be its last
            // operation, and then frees the slot: otherwise a peer whose reset failed the
            // echo's send first would leave its socket held for ever.
            if let (Some(id), Some(ring)) = (c.buffer(), self.buffers.as_mut()) {
                ring.give_back(id);
            }
            return self.finish_if_done(slot);
        }
        if c.result == -libc::EAGAIN && self.paired {
            // Nothing there yet: the next receive follows the guest's next sends.
            conn.recv_full = false;
            return self.rearm(slot);
        }
        let mut fine = true;
        if c.result > 0 {
            let n = c.result as usize;
            conn.recv_full = n >= conn.recv_len;
            conn.last_heard = Instant::now();
            match (c.buffer(), self.buffers.as_mut()) {
                (Some(id), Some(ring)) => {
                    self.driver.stats.ring_buffers_used += 1;
                    self.driver.stats.multishot_receives += u64::from(c.more());
                    if let (Some((held, len)), false) = (conn.lent, conn.lent_sending) {
                        // A second receive this turn: the first one's echo is copied out
                        // after all, and both leave in one send.
                        conn.side.out.extend_from_slice(ring.filled(held, len));
                        ring.give_back(held);
                        conn.lent = None;
                        self.lent -= 1;
                    }
                    let lend = self.ctx.tuning.zero_copy
                        && self.lent < RING_BUFFERS / 2
                        && conn.sending.is_none()
                        && conn.lent.is_none()
                        && conn.side.out.is_empty()
                        && conn.upgrade.is_none();
                    let data = ring.filled(id, n);
                    let verbatim = match (lend, self.bytes) {
                        (false, _) => None,
                        (true, true) => Some(n),
                        (true, false) => conn.side.answer_verbatim(data),
                    };
                    match verbatim {
                        Some(echo) if echo > 0 => {
                            conn.lent = Some((id, echo));
                            conn.lent_sending = false;
                            self.lent += 1;
                        }
                        Some(_) => ring.give_back(id),
                        None => {
                            fine = conn.feed(data, self.bytes, &self.ctx);
                            ring.give_back(id);
                        }
                    }
                }
                _ if conn.direct => {
                    conn.side.recv.filled(n);
                    fine = conn.answer();
                }
                _ => {
                    let buf = std::mem::take(&mut conn.read_buf);
                    fine = conn.feed(&buf[..n.min(buf.len())], self.bytes, &self.ctx);
                    conn.read_buf = buf;
                }
            }
        } else if c.result == -libc::ENOBUFS {
            self.driver.stats.ring_buffers_exhausted += 1;
        } else {
            if c.result < 0 {
                conn.side.disconnected();
            }
            fine = false;
        }
        if !fine {
            return self.close(slot);
        }
        // The send waits for the end of the turn: a multishot receive often completes
        // several times per burst, and their echoes then leave in one send.
        if !conn.owed {
            conn.owed = true;
            self.owed.push(slot);
        }
        self.rearm(slot)
    }

    fn sent(&mut self, slot: usize, c: Completion) -> std::io::Result<()> {
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        conn.ops -= 1;
        self.driver.sent(SERVER_SENDS);
        if let Some((id, len)) = conn.lent {
            return self.sent_lent(slot, c, id, len);
        }
        let Some(batch) = conn.sending.take() else {
            return self.finish_if_done(slot);
        };
        if conn.closing {
            // Whatever it wrote, nothing more goes out.
            return self.finish_if_done(slot);
        }
        if c.result <= 0 {
            conn.side
                .send_failed(&std::io::Error::from_raw_os_error(-c.result));
            return self.close(slot);
        }
        conn.sent += c.result as usize;
        if conn.sent < batch.len() {
            conn.sending = Some(batch);
            return self.push_send(slot);
        }
        let echoed = batch.len();
        let mut batch = batch;
        batch.clear();
        conn.spare = batch;
        self.echo_sent(slot, echoed)
    }

    /// An echo of `len` bytes is written: what was queued meanwhile follows, and a
    /// connection that owed only this answer closes.
    fn echo_sent(&mut self, slot: usize, len: usize) -> std::io::Result<()> {
        if self.bytes {
            self.ctx.hooks.raw_echoed(len as u64);
        }
        self.send_owed(slot)?;
        let conn = self.conns[slot].as_mut().expect("the slot was just used");
        if conn.close_after_send && conn.sending.is_none() {
            return self.close(slot);
        }
        self.finish_if_done(slot)
    }

    /// A zero-copy echo's send completed: the rest of it goes out from the same buffer, or
    /// the buffer goes back to the kernel and whatever was queued meanwhile follows.
    fn sent_lent(
        &mut self,
        slot: usize,
        c: Completion,
        id: u16,
        len: usize,
    ) -> std::io::Result<()> {
        let conn = self.conns[slot].as_mut().expect("a send was in flight");
        let failed = c.result <= 0;
        if !failed {
            conn.sent += c.result as usize;
            if conn.sent < len && !conn.closing {
                return self.push_send(slot);
            }
        }
        conn.lent = None;
        self.lent -= 1;
        if let Some(ring) = self.buffers.as_mut() {
            ring.give_back(id);
        }
        if conn.closing {
            return self.finish_if_done(slot);
        }
        if failed {
            conn.side
                .send_failed(&std::io::Error::from_raw_os_error(-c.result));
            return self.close(slot);
        }
        self.echo_sent(slot, len)
    }

    /// Sends the echoes of every connection that received this turn.
    fn send_everything_owed(&mut self) -> std::io::Result<()> {
        let mut owed = std::mem::take(&mut self.owed);
        for &slot in &owed {
            if let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) {
                conn.owed = false;
            }
            self.send_owed(slot)?;
        }
        owed.clear();
        self.owed = owed;
        Ok(())
    }

    /// Starts a send of everything the echo owes, unless one is in flight.
    fn send_owed(&mut self, slot: usize) -> std::io::Result<()> {
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        if let (Some(_), false) = (conn.lent, conn.lent_sending) {
            if conn.closing {
                return Ok(());
            }
            conn.lent_sending = true;
            conn.sent = 0;
            self.driver.stats.zero_copy_sends += 1;
            return self.push_send(slot);
        }
        if conn.closing || conn.sending.is_some() || conn.lent.is_some() || conn.side.out.is_empty()
        {
            return Ok(());
        }
        let spare = std::mem::take(&mut conn.spare);
        conn.sending = Some(std::mem::replace(&mut conn.side.out, spare));
        conn.sent = 0;
        self.push_send(slot)
    }

    /// Submits the unsent rest of the connection's send buffer.
    fn push_send(&mut self, slot: usize) -> std::io::Result<()> {
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        let rest: &[u8] = match (&conn.sending, conn.lent, self.buffers.as_mut()) {
            (Some(batch), _, _) => &batch[conn.sent..],
            (None, Some((id, len)), Some(ring)) => &ring.filled(id, len)[conn.sent..],
            _ => return Ok(()),
        };
        let entry = on_target!(conn.target, |file| opcode::Send::new(
            file,
            rest.as_ptr(),
            rest.len() as u32
        )
        .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
        .build());
        let entry = entry.user_data(tag(SEND, slot));
        // A connection closes once its last answer is written: that completion is a reason
        // to wake (a quiet one would wait for the turn's end to close it).
        let pushed = if conn.close_after_send {
            // SAFETY: `sending` (or the lent provided buffer, which the kernel gets back only
            // once this send completed) is neither touched nor dropped until then.
            unsafe { self.driver.push(entry) }
        } else {
            // SAFETY: as above.
            unsafe { self.driver.push_quiet(entry) }
        };
        pushed?;
        conn.ops += 1;
        self.driver.sending(SERVER_SENDS);
        Ok(())
    }

    /// Closes the connection: its operations complete (the shutdown ends them), then its
    /// slot is freed.
    fn close(&mut self, slot: usize) -> std::io::Result<()> {
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        if !conn.closing {
            conn.closing = true;
            let _ = conn.socket.shutdown(std::net::Shutdown::Both);
            self.driver.stats.other_syscalls += 1;
        }
        self.finish_if_done(slot)
    }

    fn finish_if_done(&mut self, slot: usize) -> std::io::Result<()> {
        let done = self
            .conns
            .get(slot)
            .and_then(Option::as_ref)
            .is_some_and(|c| c.closing && c.ops == 0);
        if done {
            if let Some(conn) = self.conns[slot].take() {
                self.driver.unregister(conn.target);
                // A zero-copy echo never sent: its buffer goes back.
                if let (Some((id, _)), Some(ring)) = (conn.lent, self.buffers.as_mut()) {
                    ring.give_back(id);
                    self.lent -= 1;
                }
            }
            self.free.push(slot);
        }
        Ok(())
    }

    /// `--idle-timeout`: closes connections silent for longer, about once a second.
    fn close_idle(&mut self) {
        let Some(idle) = self.idle.clone() else {
            return;
        };
        let now = Instant::now();
        if now.duration_since(self.last_idle_scan) < Duration::from_secs(1) {
            return;
        }
        self.last_idle_scan = now;
        for slot in 0..self.conns.len() {
            let silent = self.conns[slot]
                .as_ref()
                .is_some_and(|c| !c.closing && now.duration_since(c.last_heard) > idle.after);
            if silent {
                idle.expired();
                let _ = self.close(slot);
            }
        }
    }

    /// Closes every connection and reaps their operations, for up to [`STOP_GRACE`].
    fn shut_down(&mut self, reaped: &mut Vec<Completion>) {
        for slot in 0..self.conns.len() {
            let _ = self.close(slot);
        }
        let until = Instant::now() + STOP_GRACE;
        while self.conns.iter().any(Option::is_some) && Instant::now() < until {
            if self.driver.turn(TURN, reaped).is_err() {
                return;
            }
            for c in reaped.iter() {
                let _ = self.complete(*c);
            }
        }
    }
}
