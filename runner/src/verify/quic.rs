//! `verify` for the QUIC protocols, on quinn in a current-thread tokio runtime: the
//! handshake (TLS 1.3, ALPN `echomark`, the certificate trusted as `--tls-ca` or
//! `--tls-insecure` says), byte-exact echoes of every size the protocol carries, a window of
//! messages in flight and concurrent connections, each under the same deadlines as the other
//! protocols' checks. The checks that test TCP framing or HTTP and WebSocket requests are
//! skipped with why.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use echomark_archive::Protocol;

use super::failure::Failure;
use super::{msg, Check, Limits, Outcome, CONNECTIONS, SIZES, WINDOW};
use crate::case::Target;
use crate::framing::prefix::LengthPrefix;
use crate::framing::Framing;
use crate::traffic::quic;
use crate::traffic::tls::{TlsClient, TlsError};

/// The checks of a QUIC server, in the order of the other protocols' table.
pub(super) fn checks(
    protocol: Protocol,
    target: &Target,
    tls: Option<&Result<TlsClient, Arc<TlsError>>>,
    limits: Limits,
) -> Vec<Check> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return vec![failed("connect", Failure::io("starting a runtime", e))],
    };
    let verifier = match tls {
        Some(Ok(client)) => quic::target_client_config(client, target.alpn.as_deref())
            .map(|config| QuicVerifier {
                protocol,
                server: (target.addr, client.server_name()),
                config,
                limits,
            })
            .map_err(|e| Failure::TlsSetup(Arc::new(e))),
        Some(Err(e)) => Err(Failure::TlsSetup(e.clone())),
        None => Err(Failure::contract(
            "a QUIC server needs --tls-ca FILE or --tls-insecure",
        )),
    };
    let verifier = match verifier {
        Ok(v) => v,
        Err(failure) => return vec![failed("connect", failure)],
    };
    let run = |name, check: &dyn Fn() -> Result<String, Failure>| match check() {
        Ok(detail) => Check {
            name,
            outcome: Outcome::Passed,
            detail,
        },
        Err(failure) => failed(name, failure),
    };
    let connect = run("connect", &|| runtime.block_on(verifier.connect_check()));
    if connect.outcome != Outcome::Passed {
        return vec![connect];
    }
    vec![
        connect,
        run("echo-sizes", &|| runtime.block_on(verifier.sizes())),
        skipped(
            "split-write",
            "QUIC delivers a stream's bytes however they were written",
        ),
        skipped(
            "coalesced-write",
            "QUIC delivers a stream's bytes however they were written",
        ),
        run("pipelined-window", &|| runtime.block_on(verifier.window())),
        run("concurrent-connections", &|| {
            runtime.block_on(verifier.concurrent())
        }),
        skipped("idle-keep-alive", "QUIC keeps its connection alive itself"),
        skipped("fragments-and-ping", "a WebSocket check"),
        skipped(
            "malformed-request",
            "QUIC has no requests to get wrong beyond its own",
        ),
    ]
}

fn failed(name: &'static str, failure: Failure) -> Check {
    Check {
        name,
        outcome: Outcome::Failed,
        detail: failure.to_string(),
    }
}

fn skipped(name: &'static str, why: &str) -> Check {
    Check {
        name,
        outcome: Outcome::Skipped,
        detail: why.to_string(),
    }
}

/// `future` within `limit`, or a failure saying what did not finish.
async fn within<T>(
    limit: std::time::Duration,
    what: &str,
    future: impl Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| {
            Err(Failure::Deadline {
                what: format!("{what} did not finish"),
                limit,
            })
        })
}

fn quic_failure(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::contract(format!("{what}: {e}"))
}

struct QuicVerifier {
    protocol: Protocol,
    server: (SocketAddr, String),
    config: quinn::ClientConfig,
    limits: Limits,
}

impl QuicVerifier {
    async fn connection(&self) -> Result<quic::QuicClient, Failure> {
        let any = crate::traffic::sockets::unspecified_for(&self.server.0);
        let socket = std::net::UdpSocket::bind(SocketAddr::new(any, 0))
            .map_err(Failure::io_in("binding a UDP socket"))?;
        socket
            .set_nonblocking(true)
            .map_err(Failure::io_in("binding a UDP socket"))?;
        let connect = async {
            quic::connect(socket, (self.server.0, &self.server.1), self.config.clone())
                .await
                .map_err(|e| quic_failure("QUIC handshake", e))
        };
        within(self.limits.handshake, "the QUIC handshake", connect).await
    }

    async fn connect_check(&self) -> Result<String, Failure> {
        let client = self.connection().await?;
        let limit = client.connection.max_datagram_size();
        if self.protocol == Protocol::QuicDatagram && limit.is_none() {
            return Err(Failure::contract(
                "the server accepts no QUIC datagrams (RFC 9221)",
            ));
        }
        Ok(format!(
            "{}, QUIC with TLS 1.3, ALPN echomark{}",
            self.server.0,
            limit.map_or(String::new(), |l| format!(", datagrams up to {l} B"))
        ))
    }

    /// The sizes this protocol carries in one message.
    fn sizes_for(&self, client: &quic::QuicClient) -> Vec<usize> {
        let limit = match self.protocol {
            Protocol::QuicDatagram => client.connection.max_datagram_size().unwrap_or(0),
            _ => usize::MAX,
        };
        SIZES.into_iter().filter(|s| *s <= limit).collect()
    }

    async fn sizes(&self) -> Result<String, Failure> {
        let client = self.connection().await?;
        let sizes = self.sizes_for(&client);
        let messages: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(seq, &size)| msg(0, seq as u64, size))
            .collect();
        let mut session = Session::new(client);
        for m in &messages {
            self.echo(&mut session, std::slice::from_ref(m)).await?;
        }
        Ok(format!(
            "{} to {} B echoed byte for byte",
            sizes.first().copied().unwrap_or(0),
            sizes.last().copied().unwrap_or(0)
        ))
    }

    async fn window(&self) -> Result<String, Failure> {
        let client = self.connection().await?;
        let messages: Vec<Vec<u8>> = (0..WINDOW as u64).map(|seq| msg(1, seq, 1024)).collect();
        self.echo(&mut Session::new(client), &messages).await?;
        Ok(format!(
            "{WINDOW} messages of 1,024 B in flight, all echoed"
        ))
    }

    async fn concurrent(&self) -> Result<String, Failure> {
        let mut sessions = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            sessions.push(Session::new(self.connection().await?));
        }
        for (i, session) in sessions.iter_mut().enumerate() {
            self.echo(session, &[msg(2 + i as u32, 0, 1024)]).await?;
        }
        Ok(format!(
            "{CONNECTIONS} connections open at once, each echoed"
        ))
    }

    /// Sends `messages` all at once as the protocol carries them and checks every echo.
    async fn echo(&self, session: &mut Session, messages: &[Vec<u8>]) -> Result<(), Failure> {
        let exchange = async {
            let connection = &session.client.connection;
            match self.protocol {
                Protocol::Quic => {
                    let stream = match session.stream.take() {
                        Some(stream) => stream,
                        None => connection
                            .open_bi()
                            .await
                            .map_err(|e| quic_failure("opening a stream", e))?,
                    };
                    let (send, recv) = session.stream.insert(stream);
                    echo_on_one_stream(send, recv, messages).await
                }
                Protocol::QuicDatagram => echo_datagrams(connection, messages).await,
                _ => echo_stream_each(connection, messages).await,
            }
        };
        within(self.limits.io, "the echo", exchange).await
    }
}

/// A check's connection, with `quic`'s one stream once opened (the server serves only the
/// first stream of a connection).
struct Session {
    client: quic::QuicClient,
    stream: Option<(quinn::SendStream, quinn::RecvStream)>,
}

impl Session {
    fn new(client: quic::QuicClient) -> Self {
        Self {
            client,
            stream: None,
        }
    }
}

/// `quic`: the messages length-prefixed on the connection's one stream, their echo read
/// back whole.
async fn echo_on_one_stream(
    send: &mut quinn::SendStream,
    recv: &mut quinn::RecvStream,
    messages: &[Vec<u8>],
) -> Result<(), Failure> {
    let mut framed = Vec::new();
    for m in messages {
        LengthPrefix.encode(&mut framed, m.len(), |o| o.extend_from_slice(m));
    }
    send.write_all(&framed)
        .await
        .map_err(|e| quic_failure("writing", e))?;
    let mut echo = vec![0; framed.len()];
    recv.read_exact(&mut echo)
        .await
        .map_err(|e| quic_failure("reading the echo", e))?;
    same(&framed, &echo, "the stream")
}

/// `quic-streams` and the connection-per-message forms: a stream per message, all open at
/// once, each echo read to its stream's end.
async fn echo_stream_each(
    connection: &quinn::Connection,
    messages: &[Vec<u8>],
) -> Result<(), Failure> {
    let mut streams = Vec::with_capacity(messages.len());
    for m in messages {
        let (mut send, recv) = connection
            .open_bi()
            .await
            .map_err(|e| quic_failure("opening a stream", e))?;
        send.write_all(m)
            .await
            .map_err(|e| quic_failure("writing", e))?;
        send.finish().map_err(|e| quic_failure("finishing", e))?;
        streams.push(recv);
    }
    for (m, mut recv) in messages.iter().zip(streams) {
        let echo = recv
            .read_to_end(crate::message::MAX_PAYLOAD)
            .await
            .map_err(|e| quic_failure("reading the echo to the stream's end", e))?;
        same(m, &echo, "its stream")?;
    }
    Ok(())
}

/// `quic-datagram`: a datagram per message; the echoes may come back in any order.
async fn echo_datagrams(
    connection: &quinn::Connection,
    messages: &[Vec<u8>],
) -> Result<(), Failure> {
    for m in messages {
        connection
            .send_datagram_wait(bytes::Bytes::copy_from_slice(m))
            .await
            .map_err(|e| quic_failure("sending a datagram", e))?;
    }
    let mut echoes = Vec::with_capacity(messages.len());
    for _ in messages {
        let echo = connection
            .read_datagram()
            .await
            .map_err(|e| quic_failure("reading a datagram", e))?;
        echoes.push(echo.to_vec());
    }
    let mut sent: Vec<&Vec<u8>> = messages.iter().collect();
    let mut back: Vec<&Vec<u8>> = echoes.iter().collect();
    sent.sort();
    back.sort();
    if sent == back {
        Ok(())
    } else {
        Err(Failure::contract(
            "the datagrams echoed differ from those sent, byte for byte",
        ))
    }
}

fn same(sent: &[u8], echo: &[u8], on: &str) -> Result<(), Failure> {
    match sent.iter().zip(echo).position(|(a, b)| a != b) {
        None if sent.len() == echo.len() => Ok(()),
        None => Err(Failure::contract(format!(
            "the echo on {on} is {} B, {} were sent",
            echo.len(),
            sent.len()
        ))),
        Some(i) => Err(Failure::contract(format!(
            "the echo on {on} differs at byte {i} of {}",
            sent.len()
        ))),
    }
}
