//! `--udp-batch N`: up to N datagrams per system call, `recvmmsg` in and `sendmmsg` out,
//! on tokio's UDP sockets (each call runs inside `try_io`, so readiness stays tokio's).
//! Every datagram keeps its own buffer, length and peer, so verification, order and loss
//! accounting see exactly what one-at-a-time IO would have shown them.

use std::io;
use std::mem::MaybeUninit;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::AsRawFd;

use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Largest batch a run may ask for (Linux's `UIO_MAXIOV` is far above; more would only
/// grow the buffers).
pub const MAX_BATCH: usize = 64;

/// Why `--udp-batch batch` cannot run for `protocol` on `backend` (`once` and `serve` alike);
/// `None` when it can.
pub fn refusal(
    protocol: echomark_archive::Protocol,
    backend: crate::case::Backend,
    batch: usize,
) -> Option<String> {
    if protocol != echomark_archive::Protocol::Udp {
        return Some(format!("--udp-batch is for udp, not {protocol}"));
    }
    if backend != crate::case::Backend::Tokio {
        return Some(format!(
            "--udp-batch is not supported by --backend {backend} (recvmmsg/sendmmsg run on tokio's sockets)"
        ));
    }
    (!(2..=MAX_BATCH).contains(&batch))
        .then(|| format!("--udp-batch must be 2 to {MAX_BATCH}, got {batch}"))
}

/// Received datagrams: `len[i]` bytes of `bufs[i]` from `peers[i]`, for `i < count`.
pub struct RecvBatch {
    pub bufs: Vec<Vec<u8>>,
    pub lens: Vec<usize>,
    pub peers: Vec<Option<SocketAddr>>,
    pub count: usize,
    names: Vec<libc::sockaddr_storage>,
}

impl RecvBatch {
    /// Room for `batch` datagrams of up to `size` bytes each.
    pub fn new(batch: usize, size: usize) -> Self {
        let batch = batch.clamp(1, MAX_BATCH);
        Self {
            bufs: (0..batch).map(|_| vec![0u8; size]).collect(),
            lens: vec![0; batch],
            peers: vec![None; batch],
            count: 0,
            // SAFETY: sockaddr_storage is plain data; zeroes are a valid (unspecified) value.
            names: vec![unsafe { MaybeUninit::zeroed().assume_init() }; batch],
        }
    }

    /// Datagram `i` of the last receive and its sender.
    pub fn get(&self, i: usize) -> (&[u8], Option<SocketAddr>) {
        (&self.bufs[i][..self.lens[i]], self.peers[i])
    }

    /// Datagram `i` of the last receive, writable (the server works on it in place).
    pub fn get_mut(&mut self, i: usize) -> (&mut [u8], Option<SocketAddr>) {
        let len = self.lens[i];
        (&mut self.bufs[i][..len], self.peers[i])
    }

    /// Waits until `socket` is readable, then receives as many datagrams as are queued, up
    /// to the batch, in one `recvmmsg`.
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
        }
        // SAFETY: `headers` holds `n` initialised headers whose buffers and names outlive the
        // call; MSG_DONTWAIT keeps it from blocking the runtime.
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
        let got = got as usize;
        for (i, h) in headers[..got].iter().enumerate() {
            self.lens[i] = h.msg_len as usize;
            self.peers[i] = address(&self.names[i], h.msg_hdr.msg_namelen);
        }
        self.count = got;
        Ok(got)
    }
}

/// Sends `datagrams` (each to its address, or on a connected socket to its peer when
/// `None`) with as few `sendmmsg` calls as the kernel allows; the outcome of each, in order.
pub async fn send(
    socket: &UdpSocket,
    datagrams: &[(&[u8], Option<SocketAddr>)],
) -> Vec<io::Result<usize>> {
    let mut outcomes = Vec::with_capacity(datagrams.len());
    while outcomes.len() < datagrams.len() {
        let rest = &datagrams[outcomes.len()..];
        if let Err(e) = socket.writable().await {
            outcomes.push(Err(e));
            continue;
        }
        match socket.try_io(Interest::WRITABLE, || send_now(socket.as_raw_fd(), rest)) {
            Ok(sent) => outcomes.extend(sent.into_iter().map(Ok)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            // The first datagram of the rest failed: it is counted, the next are retried.
            Err(e) => outcomes.push(Err(e)),
        }
    }
    outcomes
}

/// One `sendmmsg` of as many of `datagrams` as the kernel takes now; their lengths.
fn send_now(fd: i32, datagrams: &[(&[u8], Option<SocketAddr>)]) -> io::Result<Vec<usize>> {
    let n = datagrams.len().min(MAX_BATCH);
    let mut names: Vec<(libc::sockaddr_storage, u32)> = datagrams[..n]
        .iter()
        .map(|(_, to)| to.map_or_else(empty_name, raw_address))
        .collect();
    let mut iov: Vec<libc::iovec> = datagrams[..n]
        .iter()
        .map(|(bytes, _)| libc::iovec {
            iov_base: bytes.as_ptr() as *mut libc::c_void,
            iov_len: bytes.len(),
        })
        .collect();
    // SAFETY: mmsghdr is plain data; every pointer field is set below before use.
    let mut headers: Vec<libc::mmsghdr> = vec![unsafe { MaybeUninit::zeroed().assume_init() }; n];
    for (i, h) in headers.iter_mut().enumerate() {
        h.msg_hdr.msg_iov = &mut iov[i];
        h.msg_hdr.msg_iovlen = 1;
        if datagrams[i].1.is_some() {
            h.msg_hdr.msg_name = (&mut names[i].0 as *mut libc::sockaddr_storage).cast();
            h.msg_hdr.msg_namelen = names[i].1;
        }
    }
    // SAFETY: `headers` holds `n` initialised headers whose buffers (borrowed from
    // `datagrams`, which the kernel only reads) and names outlive the call.
    let sent = unsafe { libc::sendmmsg(fd, headers.as_mut_ptr(), n as u32, libc::MSG_DONTWAIT) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(headers[..sent as usize]
        .iter()
        .map(|h| h.msg_len as usize)
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
            let sent = send(&a, &out).await;
            assert!(sent.iter().all(|r| r.is_ok()), "{sent:?}");
            let mut batch = RecvBatch::new(4, 128);
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
