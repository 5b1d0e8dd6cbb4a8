//! The in-process QUIC server: one endpoint per runtime accepting one connection per client
//! on that runtime, each served on a task of its own as its protocol says.

use bytes::Bytes;
use quinn::{Connection, Endpoint, SendStream};
use tokio::task::JoinSet;

use echomark_archive::Protocol;

use super::limits::ConnectionCap;
use crate::framing::prefix::LengthPrefix;
use crate::message::MAX_PAYLOAD;
use crate::traffic::datagram::{DatagramServer, Reply};
use crate::traffic::stream::{self, ServerDuty};

/// What happened to a connection attempt, for `serve`'s counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A client's first packet arrived.
    Accepted,
    /// Its handshake failed.
    HandshakeFailed,
    /// The server had as many connections as `cap` takes: it was refused.
    Refused,
}

/// Accepts connections on `endpoint` while `next_duty` has a duty for the next one (and,
/// with a `cap`, while the cap has room: past it a connection is refused), and serves each
/// on a task of its own as `protocol` says, until every connection has closed; `events`
/// hears of each attempt.
pub async fn serve_endpoint(
    endpoint: Endpoint,
    protocol: Protocol,
    (mut next_duty, cap): (impl FnMut() -> Option<ServerDuty>, Option<ConnectionCap>),
    events: impl Fn(Event) + Clone + Send + 'static,
) {
    let mut connections = JoinSet::new();
    let mut next = next_duty();
    while let Some(duty) = next.take() {
        let Some(incoming) = endpoint.accept().await else {
            break;
        };
        let place = match cap.as_ref().map(ConnectionCap::admit) {
            Some(None) => {
                events(Event::Refused);
                incoming.refuse();
                // The duty waits for a connection that is served.
                next = Some(duty);
                continue;
            }
            admitted => admitted.flatten(),
        };
        events(Event::Accepted);
        let events = events.clone();
        connections.spawn(async move {
            // The place is held until the connection's task ends (and its connection with
            // it).
            let _place = place;
            let Ok(connection) = incoming.await else {
                events(Event::HandshakeFailed);
                return;
            };
            match protocol {
                Protocol::QuicStreams | Protocol::QuicHandshake | Protocol::Quic0rtt => {
                    serve_streams(&connection, duty).await
                }
                Protocol::QuicDatagram => serve_datagrams(&connection, duty).await,
                _ => serve_long_stream(&connection, duty).await,
            }
        });
        // Reap the connections that have closed, so a long `serve` holds only open ones.
        while connections.try_join_next().is_some() {}
        next = next_duty();
    }
    while connections.join_next().await.is_some() {}
}

/// `quic`: the connection's first bidirectional stream, echoed like a TCP connection.
async fn serve_long_stream(connection: &Connection, duty: ServerDuty) {
    let Ok((send, recv)) = connection.accept_bi().await else {
        return;
    };
    stream::serve(tokio::io::join(recv, send), duty, LengthPrefix).await;
}

/// `quic-datagram`: every datagram is judged like a UDP datagram and echoed as one.
async fn serve_datagrams(connection: &Connection, duty: ServerDuty) {
    let peer = connection.remote_address();
    let mut server = DatagramServer::new(duty);
    while let Ok(datagram) = connection.read_datagram().await {
        if let Some(stall) = server.stall() {
            tokio::time::sleep(stall).await;
        }
        let mut message = Vec::from(datagram);
        let Reply::Echo { phase, then } = server.on_datagram(&mut message, peer) else {
            continue;
        };
        let len = message.len();
        server.sent(phase, send_datagram(connection, message).await, len);
        if let Some((late, _)) = then {
            let len = late.len();
            server.sent(phase, send_datagram(connection, late).await, len);
        }
    }
}

async fn send_datagram(connection: &Connection, message: Vec<u8>) -> std::io::Result<usize> {
    let len = message.len();
    connection
        .send_datagram_wait(Bytes::from(message))
        .await
        .map(|()| len)
        .map_err(std::io::Error::other)
}

/// `quic-streams`: every bidirectional stream carries one message, read to its end, judged
/// like a datagram and answered on the same stream, which is then finished. Streams are
/// read concurrently; a stream whose message a `drop` fault swallowed stays open and
/// unanswered, and a `delay` fault answers the held stream with the next message and the
/// next stream with the held one (so the client sees each echo on the wrong stream).
async fn serve_streams(connection: &Connection, duty: ServerDuty) {
    let peer = connection.remote_address();
    let mut server = DatagramServer::new(duty);
    let mut reads = JoinSet::new();
    let mut held: Option<SendStream> = None;
    let mut unanswered: Vec<SendStream> = Vec::new();
    loop {
        tokio::select! {
            accepted = connection.accept_bi() => {
                let Ok((send, mut recv)) = accepted else {
                    break;
                };
                reads.spawn(async move { (send, recv.read_to_end(MAX_PAYLOAD).await) });
            }
            Some(read) = reads.join_next() => {
                let Ok((mut send, Ok(mut message))) = read else {
                    continue;
                };
                if let Some(stall) = server.stall() {
                    tokio::time::sleep(stall).await;
                }
                match server.on_datagram(&mut message, peer) {
                    Reply::Nothing => {
                        let _ = send.reset(0u32.into());
                    }
                    Reply::Dropped => unanswered.push(send),
                    Reply::Held => held = Some(send),
                    Reply::Echo { phase, then } => {
                        if let (Some((late, _)), Some(mut early)) = (then, held.take()) {
                            let len = message.len();
                            server.sent(phase, answer(&mut early, &message).await, len);
                            message = late;
                        }
                        let len = message.len();
                        server.sent(phase, answer(&mut send, &message).await, len);
                    }
                }
            }
        }
    }
}

/// Writes `message` on `send` and finishes the stream.
async fn answer(send: &mut SendStream, message: &[u8]) -> std::io::Result<usize> {
    send.write_all(message)
        .await
        .map_err(std::io::Error::other)?;
    send.finish().map_err(std::io::Error::other)?;
    Ok(message.len())
}
