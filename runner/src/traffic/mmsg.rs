//! `--udp-batch N`: up to N datagrams per system call, `recvmmsg` in and `sendmmsg` out,
//! on tokio's UDP sockets (each call runs inside `try_io`, so readiness stays tokio's).
//! Every datagram keeps its own bytes, length and peer, so verification, order and loss
//! accounting see exactly what one-at-a-time IO would have shown them.
//!
//! `--udp-gso` adds the kernel's UDP segmentation offload: consecutive datagrams of one size
//! to one peer leave as one GSO send (`UDP_SEGMENT`), which the kernel cuts into those
//! datagrams, and a socket with `UDP_GRO` on receives a run of one sender's datagrams
//! coalesced, with their size, which is cut back into datagrams here. On the wire (and in
//! every counter) they are the same datagrams; what changes is how many times each side
//! enters the kernel and walks its stack for them.

use std::io;
use std::mem::MaybeUninit;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::AsRawFd;

use tokio::io::Interest;
use tokio::net::UdpSocket;

pub use crate::case::Batching;

/// Largest batch a run may ask for: the archive's bound, which `validate` holds every run
/// to (Linux's `UIO_MAXIOV` is far above; more would only grow the buffers).
pub const MAX_BATCH: usize = echomark_archive::limits::MAX_UDP_BATCH as usize;

impl Batching {
    /// Makes `socket` ready for this batching: its GRO on when segmented (a refusal fails
    /// the setup, not the run).
    pub fn prepare(&self, socket: &UdpSocket) -> io::Result<()> {
        if self.segmented {
            enable_gro(socket)?;
        }
        Ok(())
    }
}

/// Linux's `UDP_SEGMENT` (`linux/udp.h`): a send's segment size, for GSO.
const UDP_SEGMENT: libc::c_int = 103;
/// Linux's `UDP_GRO` (`linux/udp.h`): a socket option, and the received segment size.
const UDP_GRO: libc::c_int = 104;
/// Most segments one GSO send may carry (Linux's `UDP_MAX_SEGMENTS`).
const MAX_SEGMENTS: usize = 64;
/// The largest UDP payload one send or one coalesced receive may carry.
const MAX_COALESCED: usize = 65_507;
/// Room for one `int` control message (`CMSG_SPACE(sizeof(int))` on 64-bit Linux).
const CONTROL_SPACE: usize = 24;

/// `--udp-gso`: switches UDP generic receive offload on for `socket`, so the kernel hands
/// over datagrams of one flow and one size coalesced, with their segment size; every
/// datagram is still split out and checked alone.
fn enable_gro(socket: &UdpSocket) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and a c_int option value of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            UDP_GRO,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::other(format!(
            "--udp-gso: the kernel refused UDP_GRO: {}",
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Received datagrams: each a part of one receive slot's buffer, with its sender.
pub struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    /// The datagrams of the last receive: (slot, offset, length, sender).
    datagrams: Vec<(usize, usize, usize, Option<SocketAddr>)>,
    names: Vec<libc::sockaddr_storage>,
    /// `--udp-gso`: a slot may hold several datagrams of one sender, coalesced.
    coalesced: bool,
    controls: Vec<[u64; CONTROL_SPACE / 8]>,
}

impl RecvBatch {
    /// Room for `batch` receives of up to `size` bytes each; with `coalesced` (the socket's
    /// GRO on, [`Batching::prepare`]) each receive has room for a coalesced run of datagrams.
    pub fn new(batch: usize, size: usize, coalesced: bool) -> Self {
        let batch = batch.clamp(1, MAX_BATCH);
        let size = if coalesced { MAX_COALESCED } else { size };
        Self {
            bufs: (0..batch).map(|_| vec![0u8; size]).collect(),
            datagrams: Vec::with_capacity(batch),
            // SAFETY: sockaddr_storage is plain data; zeroes are a valid (unspecified) value.
            names: vec![unsafe { MaybeUninit::zeroed().assume_init() }; batch],
            coalesced,
            controls: vec![[0; CONTROL_SPACE / 8]; batch],
        }
    }

    /// Whether receives may be coalesced (`--udp-gso`), and sends segmented to match.
    pub fn segmented(&self) -> bool {
        self.coalesced
    }

    /// Datagram `i` of the last receive and its sender.
    pub fn get(&self, i: usize) -> (&[u8], Option<SocketAddr>) {
        let (slot, at, len, peer) = self.datagrams[i];
        (&self.bufs[slot][at..at + len], peer)
    }

    /// Datagram `i` of the last receive, writable (the server works on it in place).
    pub fn get_mut(&mut self, i: usize) -> (&mut [u8], Option<SocketAddr>) {
        let (slot, at, len, peer) = self.datagrams[i];
        (&mut self.bufs[slot][at..at + len], peer)
    }

    /// Waits until `socket` is readable, then receives as many datagrams as are queued, up
    /// to the batch (of receives: coalesced ones hold several), in one `recvmmsg`; how many
    /// datagrams arrived.
    pub async fn recv(&mut self, socket: &UdpSocket) -> io::Result<usize> {
        loop {
            socket.readable().await?;
            match socket.try_io(Interest::READABLE, || self.recv_now(socket.as_raw_fd())) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return other,
            }
        }
    }

    fn recv_now(&mut self, fd: i32) -> io::Result<usize> {
        let n = self.bufs.len();
        let mut iov: Vec<libc::iovec> = self
            .bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            })
            .collect();
        // SAFETY: mmsghdr is plain data; every pointer field is set below before use.
        let mut headers: Vec<libc::mmsghdr> =
            vec![unsafe { MaybeUninit::zeroed().assume_init() }; n];
        for (i, h) in headers.iter_mut().enumerate() {
            h.msg_hdr.msg_iov = &mut iov[i];
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
            if self.coalesced {
                h.msg_hdr.msg_control = self.controls[i].as_mut_ptr().cast();
                h.msg_hdr.msg_controllen = CONTROL_SPACE;
            }
        }
        // SAFETY: `headers` holds `n` initialised headers whose buffers, names and control
        // buffers outlive the call; MSG_DONTWAIT keeps it from blocking the runtime.
        let got = unsafe {
            libc::recvmmsg(
                fd,
                headers.as_mut_ptr(),
                n as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        self.datagrams.clear();
        for (slot, h) in headers[..got as usize].iter().enumerate() {
            let len = h.msg_len as usize;
            let peer = address(&self.names[slot], h.msg_hdr.msg_namelen);
            // Coalesced: datagrams of `segment` bytes each, the last possibly shorter; an
            // empty datagram is one too.
            let segment = match segment_size(&h.msg_hdr) {
                Some(size) if size > 0 => size,
                _ => len.max(1),
            };
            for at in (0..len.max(1)).step_by(segment) {
                self.datagrams.push((slot, at, segment.min(len - at), peer));
            }
        }
        Ok(self.datagrams.len())
    }
}

/// The segment size a GRO receive reports in its control messages, if it was coalesced.
fn segment_size(header: &libc::msghdr) -> Option<usize> {
    if header.msg_control.is_null() {
        return None;
    }
    // SAFETY: the kernel filled `header`'s control buffer; CMSG_FIRSTHDR and CMSG_NXTHDR
    // stay inside the length it wrote.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == UDP_GRO {
                let value = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                return usize::try_from(value).ok();
            }
            cmsg = libc::CMSG_NXTHDR(header, cmsg);
        }
    }
    None
}

/// Sends `datagrams` (each to its address, or on a connected socket to its peer when
/// `None`) with as few `sendmmsg` calls as the kernel allows; the outcome of each, in order.
/// With `segmented` (`--udp-gso`), consecutive datagrams of one size to one peer go out as
/// one GSO send, which the kernel cuts into those datagrams.
pub async fn send(
    socket: &UdpSocket,
    datagrams: &[(&[u8], Option<SocketAddr>)],
    segmented: bool,
) -> Vec<io::Result<usize>> {
    let mut outcomes = Vec::with_capacity(datagrams.len());
    while outcomes.len() < datagrams.len() {
        let rest = &datagrams[outcomes.len()..];
        if let Err(e) = socket.writable().await {
            outcomes.push(Err(e));
            continue;
        }
        let sent = socket.try_io(Interest::WRITABLE, || {
            send_now(socket.as_raw_fd(), rest, segmented)
        });
        match sent {
            Ok(sent) => outcomes.extend(sent.into_iter().map(Ok)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // The first datagram (or GSO run) of the rest failed: each of its datagrams is
            // counted, the next are retried.
            Err(e) => {
                let failed = runs(rest, segmented).first().map_or(1, |r| r.len());
                for _ in 0..failed {
                    outcomes.push(Err(io::Error::new(e.kind(), e.to_string())));
                }
            }
        }
    }
    outcomes
}

/// How `datagrams` go out: one per send, or with `segmented` in runs of one peer and one
/// size (at most [`MAX_SEGMENTS`] and [`MAX_COALESCED`] bytes each), as index ranges.
fn runs(datagrams: &[(&[u8], Option<SocketAddr>)], segmented: bool) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, (bytes, to)) in datagrams.iter().enumerate() {
        if out.len() == MAX_BATCH {
            break;
        }
        let joins = segmented
            && out.last().is_some_and(|run| {
                let (first, first_to) = datagrams[run.start];
                first_to == *to
                    && first.len() == bytes.len()
                    && run.len() < MAX_SEGMENTS
                    && (run.len() + 1) * bytes.len() <= MAX_COALESCED
            });
        match out.last_mut() {
            Some(run) if joins => run.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

/// One `sendmmsg` of as many of `datagrams` as the kernel takes now (one message header per
/// run of [`runs`]); the lengths of the datagrams sent.
fn send_now(
    fd: i32,
    datagrams: &[(&[u8], Option<SocketAddr>)],
    segmented: bool,
) -> io::Result<Vec<usize>> {
    let runs = runs(datagrams, segmented);
    let n = runs.len();
    let mut names: Vec<(libc::sockaddr_storage, u32)> = runs
        .iter()
        .map(|run| datagrams[run.start].1.map_or_else(empty_name, raw_address))
        .collect();
    // One iovec per datagram: a run's are consecutive.
    let mut iov: Vec<libc::iovec> = datagrams[..runs.last().map_or(0, |r| r.end)]
        .iter()
        .map(|(bytes, _)| libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        })
        .collect();
    let mut controls = vec![[0u64; CONTROL_SPACE / 8]; n];
    // SAFETY: mmsghdr is plain data; every pointer field is set below before use.
    let mut headers: Vec<libc::mmsghdr> = vec![unsafe { MaybeUninit::zeroed().assume_init() }; n];
    for (i, (h, run)) in headers.iter_mut().zip(&runs).enumerate() {
        h.msg_hdr.msg_iov = &mut iov[run.start];
        h.msg_hdr.msg_iovlen = run.len();
        if datagrams[run.start].1.is_some() {
            h.msg_hdr.msg_name = (&mut names[i].0 as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = names[i].1;
        }
        if run.len() > 1 {
            let size = datagrams[run.start].0.len() as u16;
            h.msg_hdr.msg_control = controls[i].as_mut_ptr().cast();
            h.msg_hdr.msg_controllen = CONTROL_SPACE;
            // SAFETY: the control buffer has room for one int message (CONTROL_SPACE), so
            // CMSG_FIRSTHDR is inside it and its data holds a u16.
            unsafe {
                let cmsg = libc::CMSG_FIRSTHDR(&h.msg_hdr);
                (*cmsg).cmsg_level = libc::SOL_UDP;
                (*cmsg).cmsg_type = UDP_SEGMENT;
                (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), size);
                h.msg_hdr.msg_controllen =
                    libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) as usize;
            }
        }
    }
    // SAFETY: `headers` holds `n` initialised headers whose buffers (borrowed from
    // `datagrams`, which the kernel only reads), names and control messages outlive the call.
    let sent = unsafe { libc::sendmmsg(fd, headers.as_mut_ptr(), n as u32, libc::MSG_DONTWAIT) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(runs[..sent as usize]
        .iter()
        .flat_map(|run| datagrams[run.clone()].iter().map(|(bytes, _)| bytes.len()))
        .collect())
}

fn empty_name() -> (libc::sockaddr_storage, u32) {
    // SAFETY: sockaddr_storage is plain data; zeroes are a valid value.
    (unsafe { MaybeUninit::zeroed().assume_init() }, 0)
}

/// `addr` as the kernel's socket address and its length.
fn raw_address(addr: SocketAddr) -> (libc::sockaddr_storage, u32) {
    let (mut storage, _) = empty_name();
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as u32)
}

/// The address the kernel wrote into `storage`, when it is IPv4 or IPv6.
fn address(storage: &libc::sockaddr_storage, len: u32) -> Option<SocketAddr> {
    let ptr = (storage as *const libc::sockaddr_storage).cast::<u8>();
    match storage.ss_family as i32 {
        libc::AF_INET if len as usize >= std::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in of that length.
            let sin: libc::sockaddr_in = unsafe { std::ptr::read(ptr.cast()) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                sin.sin_addr.s_addr.to_ne_bytes().into(),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= std::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6: libc::sockaddr_in6 = unsafe { std::ptr::read(ptr.cast()) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                sin6.sin6_addr.s6_addr.into(),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_survive_the_round_trip_through_the_kernels_form() {
        for addr in ["127.0.0.1:4242", "[::1]:4242", "[fe80::1%2]:9"] {
            let addr: SocketAddr = addr.parse().unwrap();
            let (storage, len) = raw_address(addr);
            assert_eq!(address(&storage, len), Some(addr));
        }
        let (storage, len) = empty_name();
        assert_eq!(address(&storage, len), None);
    }

    #[test]
    fn a_batch_goes_out_and_comes_back_datagram_by_datagram() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let to = Some(b.local_addr().unwrap());
            let messages: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 10 + i as usize]).collect();
            let out: Vec<(&[u8], Option<SocketAddr>)> =
                messages.iter().map(|m| (m.as_slice(), to)).collect();
            let sent = send(&a, &out, false).await;
            assert!(sent.iter().all(|r| r.is_ok()), "{sent:?}");
            let mut batch = RecvBatch::new(4, 128, false);
            let mut seen = Vec::new();
            while seen.len() < messages.len() {
                let n = batch.recv(&b).await.unwrap();
                assert!((1..=4).contains(&n));
                for i in 0..n {
                    let (bytes, from) = batch.get(i);
                    assert_eq!(from, Some(a.local_addr().unwrap()));
                    seen.push(bytes.to_vec());
                }
            }
            assert_eq!(seen, messages);
        });
    }
}
