//! One io_uring shard serving UDP on its own socket: one receive always armed (a multishot
//! `recvmsg` into the buffer ring, each buffer a datagram with its sender's address, or a
//! single-shot `recvmsg` into the shard's own buffer), and a `sendmsg` per echo from a pool
//! of send slots whose memory stays put until the kernel completes them.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::opcode;
use io_uring::types::RecvMsgOut;

use super::{STOP_GRACE, TURN};
use crate::iouring::buffers::BufferRing;
use crate::iouring::driver::{
    on_target, Completion, Driver, RingCounters, Target, GUEST as GUEST_SENDS,
    SERVER as SERVER_SENDS,
};
use crate::iouring::{peer_of, Guest, ShardContext, GUEST};
use crate::traffic::datagram::{DatagramServer, Reply, RECV_BUF};

/// Buffers in the ring: each holds one datagram of any size with its header and address.
const RING_BUFFERS: u16 = 256;
/// The kernel's header before the address in a multishot `recvmsg` buffer
/// (`struct io_uring_recvmsg_out`: four `u32`).
const OUT_HEADER: usize = 16;
const NAME_LEN: usize = std::mem::size_of::<libc::sockaddr_storage>();

const RECV: u64 = 1;
const SEND: u64 = 2;

/// A single-shot receive's message header, address and buffer, boxed so they stay put.
struct SingleRecv {
    msghdr: libc::msghdr,
    iov: libc::iovec,
    name: libc::sockaddr_storage,
    buf: Vec<u8>,
}

/// One echo on its way out.
struct SendSlot {
    msghdr: libc::msghdr,
    iov: libc::iovec,
    name: socket2::SockAddr,
    buf: Vec<u8>,
    phase: u8,
}

struct Shard<G> {
    driver: Driver,
    buffers: Option<BufferRing>,
    /// The header multishot receives are described by (only its name length matters).
    template: Box<libc::msghdr>,
    single: Option<Box<SingleRecv>>,
    /// Boxed: the kernel holds pointers into a slot in flight, and the list may grow
    /// (reallocate) meanwhile.
    #[allow(clippy::vec_box)]
    sends: Vec<Box<SendSlot>>,
    free: Vec<usize>,
    in_flight: usize,
    /// Kept open for as long as the ring serves it (the operations name it by `target`).
    _socket: UdpSocket,
    target: Target,
    server: DatagramServer,
    ctx: ShardContext,
    recv_armed: bool,
    /// What else the ring carries (an in-process measurement's clients).
    guest: G,
    /// Paired with the guest ([`ShardContext::paired`]): receives follow the guest's sends
    /// and do not wait; whether the last one found a datagram (more may be queued).
    paired: bool,
    /// Paired: the receive being armed waits for its datagram.
    blocking: bool,
    got_data: bool,
    /// Datagrams received: paired, every one the guest sent arrives here, so fewer than
    /// the guest's completed sends means more are queued.
    received: u64,
}

/// Serves `socket` and `guest` on this thread until the shard is told to stop.
pub fn serve<G: Guest>(
    mut ctx: ShardContext,
    socket: UdpSocket,
    guest: G,
) -> std::io::Result<RingCounters> {
    let mut driver = ctx.driver()?;
    let buffers = if ctx.tuning.multishot {
        Some(BufferRing::register(
            driver.ring(),
            0,
            RING_BUFFERS,
            OUT_HEADER + NAME_LEN + RECV_BUF,
        )?)
    } else {
        None
    };
    let target = driver.register(0, socket.as_raw_fd());
    // SAFETY: an all-zero msghdr is a valid empty header.
    let mut template: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
    template.msg_namelen = NAME_LEN as libc::socklen_t;
    let single = buffers.is_none().then(|| {
        Box::new(SingleRecv {
            // SAFETY: all-zero headers and addresses are valid empty ones.
            msghdr: unsafe { std::mem::zeroed() },
            iov: libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            },
            name: unsafe { std::mem::zeroed() },
            buf: vec![0; RECV_BUF],
        })
    });
    let duty = ctx.hooks.duty();
    let paired = ctx.paired;
    ctx.serving();
    let mut shard = Shard {
        driver,
        buffers,
        template,
        single,
        sends: Vec::new(),
        free: Vec::new(),
        in_flight: 0,
        _socket: socket,
        target,
        server: DatagramServer::new(duty),
        ctx,
        recv_armed: false,
        guest,
        paired,
        blocking: false,
        got_data: false,
        received: 0,
    };
    let mut reaped = Vec::new();
    while !shard.ctx.stopping() {
        if !shard.paired {
            shard.arm_receive()?;
        }
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
            // After the guest's sends (the echoes went out as their messages came): the
            // receive that finds them, then the guest's receives of the echoes.
            let queued = shard.got_data && shard.driver.sends_done[GUEST_SENDS] > shard.received;
            if shard.driver.peer_sent(GUEST_SENDS) || queued {
                shard.arm_receive()?;
            }
            let sending = shard.driver.peer_sent(SERVER_SENDS);
            shard.guest.arm_receives(&mut shard.driver, sending)?;
            if shard.driver.nothing_queued() {
                // About to sleep: every receive waits for its bytes, so none is missed.
                shard.blocking = true;
                shard.arm_receive()?;
                shard.blocking = false;
                shard.guest.arm_blocking(&mut shard.driver)?;
            }
        }
        if let Some(b) = &shard.buffers {
            b.publish();
        }
    }
    let until = Instant::now() + STOP_GRACE;
    while shard.in_flight > 0 && Instant::now() < until {
        shard.driver.turn(TURN, &mut reaped)?;
        for c in &reaped {
            if c.user_data & GUEST == 0 && c.user_data >> 56 == SEND {
                shard.sent(*c);
            }
        }
    }
    Ok(shard.driver.stats)
}

impl<G: Guest> Shard<G> {
    fn arm_receive(&mut self) -> std::io::Result<()> {
        if self.recv_armed {
            return Ok(());
        }
        let entry = match (&self.buffers, self.single.as_mut()) {
            (Some(ring), _) => {
                let header: *const libc::msghdr = &*self.template;
                on_target!(self.target, |file| opcode::RecvMsgMulti::new(
                    file,
                    header,
                    ring.group()
                )
                .build())
            }
            (None, Some(single)) => {
                single.iov = libc::iovec {
                    iov_base: single.buf.as_mut_ptr().cast(),
                    iov_len: single.buf.len(),
                };
                single.msghdr.msg_name = (&raw mut single.name).cast();
                single.msghdr.msg_namelen = NAME_LEN as libc::socklen_t;
                single.msghdr.msg_iov = &raw mut single.iov;
                single.msghdr.msg_iovlen = 1;
                let header: *mut libc::msghdr = &raw mut single.msghdr;
                let flags = if self.paired && !self.blocking {
                    libc::MSG_DONTWAIT as u32
                } else {
                    0
                };
                on_target!(self.target, |file| opcode::RecvMsg::new(file, header)
                    .flags(flags)
                    .build())
            }
            (None, None) => return Ok(()),
        };
        // SAFETY: the template, the single-shot box and the buffer ring live as long as the
        // shard, whose ring is dropped first.
        unsafe { self.driver.push(entry.user_data(RECV << 56)) }?;
        self.recv_armed = true;
        self.driver.stats.receives_armed += 1;
        Ok(())
    }

    fn complete(&mut self, c: Completion) -> std::io::Result<()> {
        if c.user_data & GUEST != 0 {
            return self.guest.complete(&mut self.driver, c);
        }
        match c.user_data >> 56 {
            RECV => self.received(c),
            SEND => {
                self.sent(c);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn received(&mut self, c: Completion) -> std::io::Result<()> {
        if !(self.buffers.is_some() && c.more()) {
            self.recv_armed = false;
        }
        self.got_data = c.result >= 0;
        self.received += u64::from(c.result >= 0);
        if c.result == -libc::EAGAIN {
            // Nothing queued: whatever the guest sent so far arrived or was dropped by the
            // kernel, so no receive is owed until it sends again (a dropped datagram would
            // otherwise keep the ring looking for it without ever sleeping).
            self.received = self.received.max(self.driver.sends_done[GUEST_SENDS]);
        }
        if c.result == -libc::ENOBUFS {
            self.driver.stats.ring_buffers_exhausted += 1;
            return Ok(());
        }
        // ICMP errors and the like: the socket keeps serving.
        if c.result < 0 {
            return Ok(());
        }
        let n = c.result as usize;
        let slot = self.take_slot();
        let peer = match (c.buffer(), self.buffers.as_mut(), self.single.as_ref()) {
            (Some(id), Some(ring), _) => {
                self.driver.stats.ring_buffers_used += 1;
                self.driver.stats.multishot_receives += u64::from(c.more());
                let peer = match RecvMsgOut::parse(ring.filled(id, n), &self.template) {
                    Ok(out) => {
                        let to = &mut self.sends[slot].buf;
                        to.clear();
                        to.extend_from_slice(out.payload_data());
                        peer_of(out.name_data())
                    }
                    Err(()) => None,
                };
                ring.give_back(id);
                peer
            }
            (_, _, Some(single)) => {
                let to = &mut self.sends[slot].buf;
                to.clear();
                to.extend_from_slice(&single.buf[..n.min(single.buf.len())]);
                // SAFETY: the name field is a `sockaddr_storage`, as long as any address.
                let name = unsafe {
                    std::slice::from_raw_parts(
                        (&raw const single.name).cast::<u8>(),
                        (single.msghdr.msg_namelen as usize).min(NAME_LEN),
                    )
                };
                peer_of(name)
            }
            _ => None,
        };
        let Some(peer) = peer else {
            self.free.push(slot);
            return Ok(());
        };
        let mut message = std::mem::take(&mut self.sends[slot].buf);
        let reply = self.server.on_datagram(&mut message, peer);
        self.sends[slot].buf = message;
        match reply {
            Reply::Nothing | Reply::Dropped | Reply::Held => {
                self.free.push(slot);
                Ok(())
            }
            Reply::Echo { phase, then } => {
                self.send(slot, peer, phase)?;
                if let Some((late, to)) = then {
                    let extra = self.take_slot();
                    self.sends[extra].buf = late;
                    self.send(extra, to, phase)?;
                }
                Ok(())
            }
        }
    }

    /// A free send slot, a new one when every slot is in flight.
    fn take_slot(&mut self) -> usize {
        self.free.pop().unwrap_or_else(|| {
            self.sends.push(Box::new(SendSlot {
                // SAFETY: an all-zero header is a valid empty one.
                msghdr: unsafe { std::mem::zeroed() },
                iov: libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0,
                },
                name: socket2::SockAddr::from(SocketAddr::from(([0, 0, 0, 0], 0))),
                buf: Vec::with_capacity(RECV_BUF),
                phase: 0,
            }));
            self.sends.len() - 1
        })
    }

    /// Sends slot `slot`'s bytes to `peer`.
    fn send(&mut self, slot: usize, peer: SocketAddr, phase: u8) -> std::io::Result<()> {
        let s = &mut *self.sends[slot];
        s.name = socket2::SockAddr::from(peer);
        s.phase = phase;
        s.iov = libc::iovec {
            iov_base: s.buf.as_mut_ptr().cast(),
            iov_len: s.buf.len(),
        };
        s.msghdr.msg_name = s.name.as_ptr() as *mut libc::c_void;
        s.msghdr.msg_namelen = s.name.len();
        s.msghdr.msg_iov = &raw mut s.iov;
        s.msghdr.msg_iovlen = 1;
        let header: *const libc::msghdr = &raw const s.msghdr;
        let entry = on_target!(self.target, |file| opcode::SendMsg::new(file, header)
            .build());
        // SAFETY: the slot is boxed and neither reused nor dropped before its completion.
        unsafe {
            self.driver
                .push_quiet(entry.user_data((SEND << 56) | slot as u64))
        }?;
        self.in_flight += 1;
        self.driver.sending(SERVER_SENDS);
        Ok(())
    }

    fn sent(&mut self, c: Completion) {
        let slot = (c.user_data & 0xffff_ffff) as usize;
        let Some(s) = self.sends.get(slot) else {
            return;
        };
        let result = if c.result < 0 {
            Err(std::io::Error::from_raw_os_error(-c.result))
        } else {
            Ok(c.result as usize)
        };
        self.server.sent(s.phase, result, s.buf.len());
        self.in_flight = self.in_flight.saturating_sub(1);
        self.driver.sent(SERVER_SENDS);
        self.free.push(slot);
    }
}
