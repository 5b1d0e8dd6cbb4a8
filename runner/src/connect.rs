//! Setup of one stream connection pair: the TLS handshake (`tcps`, `wss`, `https`), then the
//! WebSocket upgrade (`websocket`, `wss`). Both run on the connection's own runtime before
//! any phase and are never timed, as in arknet.

use tokio::net::TcpStream;
use tokio_rustls::server;

use crate::tcp::Conn;
use crate::tls::Tls;
use crate::websocket;

/// The server's end of a connection pair.
pub enum ServerConn {
    /// `tcp`, `websocket`, `http`.
    Plain(TcpStream),
    /// `tcps`, `wss`, `https`.
    Tls(Box<server::TlsStream<TcpStream>>),
}

/// A connection pair ready for traffic.
pub struct Pair {
    /// The client's end, for [`crate::tcp::TcpClient`].
    pub client: Conn,
    /// The server's end, for [`crate::tcp::serve_conn`].
    pub server: ServerConn,
    /// The negotiated TLS version and cipher suite.
    pub tls: Option<(String, String)>,
}

/// Completes the handshakes `tls` and `websocket_host` ask for on a connected TCP pair.
/// `websocket_host` is the `Host` header of the upgrade request.
pub async fn establish(
    client: TcpStream,
    server: TcpStream,
    tls: Option<&Tls>,
    websocket_host: Option<&str>,
) -> std::io::Result<Pair> {
    match tls {
        None => {
            let (mut client, mut server) = (client, server);
            if let Some(host) = websocket_host {
                upgrade(&mut client, &mut server, host).await?;
            }
            Ok(Pair {
                client: Conn::Plain(client),
                server: ServerConn::Plain(server),
                tls: None,
            })
        }
        Some(tls) => {
            let mut established = tls
                .handshake(client, server)
                .await
                .map_err(|e| std::io::Error::other(format!("TLS handshake: {e}")))?;
            if let Some(host) = websocket_host {
                upgrade(&mut established.client, &mut established.server, host).await?;
            }
            Ok(Pair {
                client: Conn::Tls(Box::new(tokio::io::split(established.client))),
                server: ServerConn::Tls(Box::new(established.server)),
                tls: Some((established.version, established.cipher_suite)),
            })
        }
    }
}

/// Both sides of the WebSocket upgrade at once.
async fn upgrade<C, S>(client: &mut C, server: &mut S, host: &str) -> std::io::Result<()>
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (client, server) = tokio::join!(
        websocket::client_handshake(client, host),
        websocket::server_handshake(server)
    );
    server?;
    client
}
