//! Setup of one stream connection pair on tokio: the TLS handshake (`tcps`, `wss`, `https`),
//! then the WebSocket upgrade (`websocket`, `wss`), whose messages come from the sans-IO
//! [`crate::framing::websocket`]. Both run on the connection's own runtime before any phase
//! and are never timed, as in arknet. monoio connections are set up here too, on a tokio
//! runtime used for setup only, and then [`Pair::detach`]ed: the handshakes are the same
//! code for both backends, and only the measured traffic runs on io_uring.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::server;

use crate::framing::websocket::handshake::BAD_REQUEST;
use crate::framing::websocket::{self, HandshakeError};
use crate::traffic::tls::{Tls, TlsClient, TlsServer};

/// Bytes read at a time while waiting for an upgrade head.
const HANDSHAKE_READ: usize = 512;

/// A client's connection: plain TCP (split without cost) or TLS (split into owned halves).
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<TlsHalves>),
    /// `quic`: the client's bidirectional stream on its own connection.
    Quic(Box<QuicStream>),
}

/// The two halves of a client TLS stream.
pub type TlsHalves = (
    tokio::io::ReadHalf<tokio_rustls::client::TlsStream<TcpStream>>,
    tokio::io::WriteHalf<tokio_rustls::client::TlsStream<TcpStream>>,
);

/// `quic`: a client's long-lived bidirectional stream, its two directions, on its
/// connection ([`crate::traffic::quic::open_stream`] opens it).
pub struct QuicStream {
    pub recv: quinn::RecvStream,
    pub send: quinn::SendStream,
    /// The connection the stream runs on (its statistics are read from it).
    pub connection: quinn::Connection,
    /// What keeps the connection open (its client endpoint) while the stream lives.
    pub _keep: Box<dyn std::any::Any + Send + Sync>,
}

/// The server's end of a connection pair.
pub enum ServerConn {
    /// `tcp`, `websocket`, `http`.
    Plain(TcpStream),
    /// `tcps`, `wss`, `https`.
    Tls(Box<server::TlsStream<TcpStream>>),
}

/// A connection pair ready for traffic.
pub struct Pair {
    /// The client's end, for [`crate::traffic::stream::StreamClient`].
    pub client: Conn,
    /// The server's end, for [`crate::traffic::stream::serve_conn`].
    pub server: ServerConn,
    /// The negotiated TLS version and cipher suite.
    pub tls: Option<(String, String)>,
}

/// Completes the handshakes `tls` and `websocket_host` ask for on a connected TCP pair,
/// both halves at once on the current runtime. `websocket_host` is the `Host` header of
/// the upgrade request.
pub async fn establish(
    client: TcpStream,
    server: TcpStream,
    tls: Option<&Tls>,
    websocket_host: Option<&str>,
) -> std::io::Result<Pair> {
    let (client, server) = tokio::join!(
        establish_client(client, tls.map(|t| &t.client), websocket_host),
        establish_server(server, tls.map(|t| &t.server), websocket_host.is_some()),
    );
    Pair::of(client?, server?)
}

/// The TLS handshake (when `tls`) and the WebSocket upgrade (when `websocket`) of
/// echomark's server on an accepted stream.
pub async fn establish_server(
    stream: TcpStream,
    tls: Option<&TlsServer>,
    websocket: bool,
) -> std::io::Result<ServerConn> {
    match tls {
        None => {
            let mut stream = stream;
            if websocket {
                server_upgrade(&mut stream).await?;
            }
            Ok(ServerConn::Plain(stream))
        }
        Some(tls) => {
            let mut stream = tls.accept(stream).await?;
            if websocket {
                server_upgrade(&mut stream).await?;
            }
            Ok(ServerConn::Tls(Box::new(stream)))
        }
    }
}

/// Reads one upgrade head: the head without its blank line, and whatever came after it.
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(HANDSHAKE_READ);
    let mut chunk = [0u8; HANDSHAKE_READ];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(io(HandshakeError::Closed));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = websocket::head_end(&buf).map_err(io)? {
            let after = buf.split_off(end + 4);
            buf.truncate(end);
            let head =
                String::from_utf8(buf).map_err(|e| io(HandshakeError::NotUtf8(e.utf8_error())))?;
            return Ok((head, after));
        }
    }
}

fn io(e: HandshakeError) -> std::io::Error {
    std::io::Error::other(e)
}

/// Client side of the upgrade. Returns the bytes the server sent after its `101` (frames
/// it may send at once, such as a ping), which the receive buffer must start with.
pub async fn client_upgrade<S>(stream: &mut S, host: &str) -> std::io::Result<Vec<u8>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let key = websocket::new_key().map_err(io)?;
    stream
        .write_all(websocket::client_request(host, &key).as_bytes())
        .await?;
    stream.flush().await?;
    let (head, early) = read_head(stream).await?;
    websocket::check_server_response(&head, &key).map_err(io)?;
    Ok(early)
}

/// Server side of the upgrade: switches protocols, or answers `400` and fails.
pub async fn server_upgrade<S>(stream: &mut S) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (head, early) = read_head(stream).await?;
    if !early.is_empty() {
        let _ = stream.write_all(BAD_REQUEST.as_bytes()).await;
        return Err(io(HandshakeError::FramesBefore101));
    }
    match websocket::server_response(&head) {
        Ok(response) => {
            stream.write_all(response.as_bytes()).await?;
            stream.flush().await
        }
        Err((refusal, error)) => {
            let _ = stream.write_all(refusal.as_bytes()).await;
            Err(io(error))
        }
    }
}

/// A connected pair after its handshakes, out of tokio: std sockets and the rustls
/// sessions, to be driven by another runtime (monoio) from here on.
pub struct Detached {
    pub client: std::net::TcpStream,
    pub client_tls: Option<rustls::ClientConnection>,
    pub server: std::net::TcpStream,
    pub server_tls: Option<rustls::ServerConnection>,
    /// The negotiated TLS version and cipher suite.
    pub tls: Option<(String, String)>,
}

impl ServerConn {
    /// Takes the socket and TLS session out of tokio (call inside the runtime the
    /// connection was accepted on), with the session's buffered records.
    pub fn detach(
        self,
    ) -> std::io::Result<(std::net::TcpStream, Option<rustls::ServerConnection>)> {
        Ok(match self {
            ServerConn::Plain(s) => (s.into_std()?, None),
            ServerConn::Tls(s) => {
                let (io, session) = s.into_inner();
                (io.into_std()?, Some(session))
            }
        })
    }
}

impl Pair {
    /// The pair of `client` and `server` once both ends' handshakes are done. echomark's
    /// server sends nothing after its `101`, so nothing may have come early.
    pub fn of(client: Established, server: ServerConn) -> std::io::Result<Self> {
        let tls = client.negotiated.clone();
        let (client, early) = client.into_conn();
        if !early.is_empty() {
            return Err(io(HandshakeError::BytesAfter101));
        }
        Ok(Pair {
            client,
            server,
            tls,
        })
    }

    /// Takes the sockets and TLS sessions out of tokio (call inside the runtime the pair was
    /// set up on). A session's buffered records move with it, so nothing is lost.
    pub fn detach(self) -> std::io::Result<Detached> {
        let (client, client_tls) = match self.client {
            Conn::Plain(s) => (s.into_std()?, None),
            Conn::Tls(halves) => {
                let (rd, wr) = *halves;
                let (io, session) = rd.unsplit(wr).into_inner();
                (io.into_std()?, Some(session))
            }
            Conn::Quic(_) => {
                return Err(std::io::Error::other("QUIC connections stay on tokio"));
            }
        };
        let (server, server_tls) = self.server.detach()?;
        Ok(Detached {
            client,
            client_tls,
            server,
            server_tls,
            tls: self.tls,
        })
    }
}

/// A client's stream to a server echomark did not start, after its handshakes on tokio.
pub enum ClientStream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// A client connection after its TLS handshake and WebSocket upgrade: the stream, the TLS
/// version and cipher suite it negotiated, and the bytes the server sent right after its
/// `101` (which the receive buffer must start with).
pub struct Established {
    pub stream: ClientStream,
    pub negotiated: Option<(String, String)>,
    pub early: Vec<u8>,
}

impl Established {
    /// The connection for a tokio client: TLS split into owned halves.
    pub fn into_conn(self) -> (Conn, Vec<u8>) {
        let conn = match self.stream {
            ClientStream::Plain(s) => Conn::Plain(s),
            ClientStream::Tls(s) => Conn::Tls(Box::new(tokio::io::split(*s))),
        };
        (conn, self.early)
    }

    /// The socket and TLS session out of tokio, for another runtime (call inside the
    /// runtime the connection was made on).
    pub fn detach(self) -> std::io::Result<DetachedClient> {
        let (socket, tls) = match self.stream {
            ClientStream::Plain(s) => (s.into_std()?, None),
            ClientStream::Tls(s) => {
                let (io, session) = s.into_inner();
                (io.into_std()?, Some(session))
            }
        };
        Ok(DetachedClient {
            socket,
            tls,
            early: self.early,
        })
    }
}

/// A client connection after its handshakes, out of tokio: the socket, the TLS session
/// (with its buffered records), and the bytes the server sent right after its `101`.
pub struct DetachedClient {
    pub socket: std::net::TcpStream,
    pub tls: Option<rustls::ClientConnection>,
    pub early: Vec<u8>,
}

/// The TLS handshake (when `tls`) and the WebSocket upgrade (when `websocket_host`) of a
/// client on a connected stream.
pub async fn establish_client(
    stream: TcpStream,
    tls: Option<&TlsClient>,
    websocket_host: Option<&str>,
) -> std::io::Result<Established> {
    let (mut stream, negotiated) = match tls {
        None => (ClientStream::Plain(stream), None),
        Some(tls) => {
            let c = tls.connect(stream).await?;
            let negotiated = Some((c.version, c.cipher_suite));
            (ClientStream::Tls(Box::new(c.stream)), negotiated)
        }
    };
    let early = match (websocket_host, &mut stream) {
        (None, _) => Vec::new(),
        (Some(host), ClientStream::Plain(s)) => client_upgrade(s, host).await?,
        (Some(host), ClientStream::Tls(s)) => client_upgrade(&mut **s, host).await?,
    };
    Ok(Established {
        stream,
        negotiated,
        early,
    })
}

/// A blocking connect to `addr` within `limit`, made ready for an async runtime (no Nagle
/// delay, non-blocking).
pub fn connect_std(
    addr: std::net::SocketAddr,
    limit: std::time::Duration,
) -> std::io::Result<std::net::TcpStream> {
    let stream = std::net::TcpStream::connect_timeout(&addr, limit)
        .map_err(|e| std::io::Error::new(e.kind(), format!("connecting to {addr}: {e}")))?;
    stream.set_nodelay(true)?;
    stream.set_nonblocking(true)?;
    Ok(stream)
}
