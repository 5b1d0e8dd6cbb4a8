//! Socket setup, done on the orchestrator thread before any runtime sees the sockets:
//! connected TCP pairs with TCP_NODELAY, and UDP sockets with buffer requests set before bind.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};

use socket2::{Domain, Protocol, Socket, Type};

/// One client connection and the server side accepted for it.
pub struct TcpPair {
    pub client: TcpStream,
    pub server: TcpStream,
}

/// Opens `count` loopback connections to one listener on an ephemeral port.
pub fn tcp_pairs(ip: IpAddr, count: usize) -> io::Result<Vec<TcpPair>> {
    let listener = TcpListener::bind(SocketAddr::new(ip, 0))?;
    let addr = listener.local_addr()?;
    (0..count)
        .map(|_| {
            let client = TcpStream::connect(addr)?;
            let (server, _) = listener.accept()?;
            for s in [&client, &server] {
                s.set_nodelay(true)?;
                s.set_nonblocking(true)?;
            }
            Ok(TcpPair { client, server })
        })
        .collect()
}

/// A UDP socket and the buffer sizes the kernel reports for it.
pub struct UdpEndpoint {
    pub socket: UdpSocket,
    pub send_buffer: u64,
    pub recv_buffer: u64,
}

/// Binds a non-blocking UDP socket on `ip:0` after requesting buffer sizes. Linux doubles
/// the request (after clamping it to `net.core.[rw]mem_max`); the read-back value is kept as
/// the kernel reports it.
pub fn udp_endpoint(ip: IpAddr, send_request: u64, recv_request: u64) -> io::Result<UdpEndpoint> {
    let socket = Socket::new(
        Domain::for_address(SocketAddr::new(ip, 0)),
        Type::DGRAM,
        Some(Protocol::UDP),
    )?;
    socket.set_send_buffer_size(usize::try_from(send_request).unwrap_or(usize::MAX))?;
    socket.set_recv_buffer_size(usize::try_from(recv_request).unwrap_or(usize::MAX))?;
    socket.bind(&SocketAddr::new(ip, 0).into())?;
    socket.set_nonblocking(true)?;
    let send_buffer = socket.send_buffer_size()? as u64;
    let recv_buffer = socket.recv_buffer_size()? as u64;
    Ok(UdpEndpoint {
        socket: socket.into(),
        send_buffer,
        recv_buffer,
    })
}

/// A non-blocking UDP socket bound to `addr` for `serve`, with buffer requests set before
/// bind and `SO_REUSEPORT`, so that one socket per runtime can share a port.
pub fn udp_listener(
    addr: SocketAddr,
    send_request: u64,
    recv_request: u64,
) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_send_buffer_size(usize::try_from(send_request).unwrap_or(usize::MAX))?;
    socket.set_recv_buffer_size(usize::try_from(recv_request).unwrap_or(usize::MAX))?;
    socket.set_reuse_port(true)?;
    socket.bind(&addr.into())?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// A TCP listener on `addr` for `serve`, with `SO_REUSEPORT`, so that one listener per
/// shard can share a port (the kernel spreads connections over them).
pub fn tcp_listener(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    Ok(socket.into())
}

/// The unspecified address of `peer`'s family (`0.0.0.0` or `::`): where a client socket that
/// talks to `peer` binds, so that the kernel picks the route and the source address.
pub fn unspecified_for(peer: &SocketAddr) -> IpAddr {
    match peer {
        SocketAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}
