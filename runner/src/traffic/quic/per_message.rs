//! `quic-streams`: a new bidirectional stream for every message (request and response, as
//! secnetperf's request-rate tests do), so opening a stream is part of each round trip;
//! `quic-handshake` and `quic-0rtt`: a new connection for every message, so a handshake
//! (full, or resumed with the message as 0-RTT data) is part of each.
//!
//! Each in-flight message is a task on the client's runtime that (connects and) opens a
//! stream, writes the message, finishes the stream and reads the echo to the stream's end. The client judges
//! the echo with the same verification as every other protocol and checks that it is the
//! stream's own message (an echo answered on another stream is an order error); there is no
//! order across streams.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quinn::{Connection, Endpoint};
use tokio::task::JoinSet;

use super::QuicClient;
use crate::instruments::alarm::Alarm;
use crate::message::{self, MAX_PAYLOAD};
use crate::traffic::client::{ClientCore, ClientShape, Next, OrderRule};
use crate::traffic::pacing::{self, Pacer};
use crate::traffic::phase::{ClientReport, PhaseClient, PhasePlan};

/// How one message's stream ended.
enum Exchange {
    /// The echo read to the stream's end.
    Echo(Vec<u8>),
    /// The stream could not be opened, written or read to its end (the connection is
    /// gone, or the server reset the stream or sent more than any message).
    Failed,
}

/// What the connection-per-message protocols count over a run, client and server side.
#[derive(Debug, Default)]
pub struct HandshakeCounts {
    /// Connections the clients completed (handshake done), one per message.
    pub completed: AtomicU64,
    /// Of those, the ones whose 0-RTT data the server accepted.
    pub zero_rtt_accepted: AtomicU64,
    /// In process: connections echomark's server accepted.
    pub server_accepted: AtomicU64,
}

/// A new connection per message from one client endpoint to one server.
#[derive(Clone)]
pub struct NewConnections {
    pub endpoint: Endpoint,
    pub server: (SocketAddr, String),
    /// Resume and send the message as 0-RTT data (`quic-0rtt`).
    pub zero_rtt: bool,
    pub counts: Arc<HandshakeCounts>,
    /// The client's setup connection, kept open while the client lives.
    pub setup: Arc<Connection>,
}

/// Where a message's stream comes from.
#[derive(Clone)]
enum Opener {
    /// The client's one connection (`quic-streams`).
    Stream(Connection),
    /// A connection of its own (`quic-handshake`, `quic-0rtt`).
    Connection(NewConnections),
}

/// One client whose every message has a stream of its own.
pub struct PerMessageClient {
    opener: Opener,
    /// The endpoint and connection of `quic-streams` (kept open).
    _client: Option<QuicClient>,
    core: ClientCore,
    send_buf: Vec<u8>,
    /// The in-flight messages: each task returns its message's sequence and the exchange.
    exchanges: JoinSet<(u64, Exchange)>,
    alarm: Arc<Alarm>,
    /// Open loop: waits for the client's next due message.
    pacer: Option<Pacer>,
    broken: bool,
}

impl PerMessageClient {
    /// A `quic-streams` client on `client`'s connection; open-loop clients wait for their
    /// due messages on `pacer`.
    pub fn new(
        client: QuicClient,
        index: usize,
        shape: ClientShape,
        waits: (Arc<Alarm>, Option<Pacer>),
    ) -> Self {
        let opener = Opener::Stream(client.connection.clone());
        Self::with(opener, Some(client), index, shape, waits)
    }

    /// A `quic-handshake` or `quic-0rtt` client: a new connection per message.
    pub fn connecting(
        connections: NewConnections,
        index: usize,
        shape: ClientShape,
        waits: (Arc<Alarm>, Option<Pacer>),
    ) -> Self {
        Self::with(Opener::Connection(connections), None, index, shape, waits)
    }

    fn with(
        opener: Opener,
        client: Option<QuicClient>,
        index: usize,
        shape: ClientShape,
        (alarm, pacer): (Arc<Alarm>, Option<Pacer>),
    ) -> Self {
        Self {
            opener,
            _client: client,
            core: shape.core(index, OrderRule::Any),
            send_buf: Vec::with_capacity(shape.payload),
            exchanges: JoinSet::new(),
            alarm,
            pacer,
            broken: false,
        }
    }

    /// Takes a slot and starts its message's stream.
    fn send_next(&mut self, now: Instant) {
        self.send_buf.clear();
        self.core.write_next(&mut self.send_buf, now);
        let sequence = message::parse_header(&self.send_buf).map_or(u64::MAX, |h| h.sequence);
        let message = self.send_buf.clone();
        let opener = self.opener.clone();
        self.exchanges.spawn(async move {
            let outcome = match &opener {
                Opener::Stream(connection) => exchange(connection, &message).await,
                Opener::Connection(new) => connect_and_exchange(new, &message).await,
            };
            (sequence, outcome)
        });
    }

    /// Open loop: starts every message that is due and has a slot.
    fn send_pass(&mut self, now: Instant) {
        while self.core.due(now) && !self.broken {
            self.send_next(now);
        }
        self.core.end_pass();
    }

    /// Judges one finished exchange of the message with `sequence`.
    fn on_exchange(&mut self, sequence: u64, outcome: Exchange, now: Instant) {
        match outcome {
            Exchange::Echo(echo) => {
                // An echo of another stream's message (a header that does not parse is the
                // verification's to count).
                if message::parse_header(&echo).is_ok_and(|h| h.sequence != sequence) {
                    self.core.counters().order_errors += 1;
                }
                if self.core.on_echo(&echo, now) == Next::Send {
                    self.send_next(now);
                } else if self.core.is_open_loop() {
                    self.send_pass(now);
                }
            }
            Exchange::Failed => {
                self.core.counters().disconnect_errors += 1;
                self.broken = true;
            }
        }
    }
}

/// One message's round trip on a new stream.
async fn exchange(connection: &Connection, message: &[u8]) -> Exchange {
    let Ok((mut send, mut recv)) = connection.open_bi().await else {
        return Exchange::Failed;
    };
    if send.write_all(message).await.is_err() || send.finish().is_err() {
        return Exchange::Failed;
    }
    match recv.read_to_end(MAX_PAYLOAD).await {
        Ok(echo) => Exchange::Echo(echo),
        Err(_) => Exchange::Failed,
    }
}

/// One message's round trip on a connection of its own, closed after the echo: a full
/// handshake, or (`quic-0rtt`, with a session to resume) the message sent as 0-RTT data and
/// sent again over the established connection if the server refused the early data.
async fn connect_and_exchange(new: &NewConnections, message: &[u8]) -> Exchange {
    let (server, name) = (&new.server.0, new.server.1.as_str());
    let Ok(connecting) = new.endpoint.connect(*server, name) else {
        return Exchange::Failed;
    };
    let early = if new.zero_rtt {
        connecting.into_0rtt()
    } else {
        Err(connecting)
    };
    let (connection, outcome) = match early {
        Ok((connection, accepted)) => {
            let outcome = exchange(&connection, message).await;
            if accepted.await {
                new.counts.zero_rtt_accepted.fetch_add(1, Ordering::Relaxed);
            }
            if connection.close_reason().is_some() {
                return Exchange::Failed;
            }
            // Refused early data resets its stream: the message goes again, now 1-RTT.
            let outcome = match outcome {
                Exchange::Failed => exchange(&connection, message).await,
                echoed => echoed,
            };
            (connection, outcome)
        }
        Err(connecting) => {
            let Ok(connection) = connecting.await else {
                return Exchange::Failed;
            };
            let outcome = exchange(&connection, message).await;
            (connection, outcome)
        }
    };
    new.counts.completed.fetch_add(1, Ordering::Relaxed);
    connection.close(0u32.into(), b"");
    outcome
}

impl PhaseClient for PerMessageClient {
    async fn run_phase(&mut self, plan: PhasePlan) -> ClientReport {
        if let Some(report) = self.core.begin_unless_broken(plan, self.broken, false) {
            return report;
        }
        let now = Instant::now();
        if self.core.is_open_loop() {
            self.send_pass(now);
        } else {
            for _ in 0..self.core.window() {
                self.send_next(now);
            }
        }
        let alarm = self.alarm.clone();
        let mut seen = alarm.rings();
        while self.core.has_traffic(Instant::now()) && !self.broken {
            let wake = self.core.next_wake(Instant::now());
            tokio::select! {
                biased;
                _ = pacing::until(self.pacer.as_mut(), wake), if wake.is_some() => {
                    self.send_pass(Instant::now());
                },
                Some(done) = self.exchanges.join_next() => {
                    alarm.progressed();
                    match done {
                        Ok((sequence, outcome)) => self.on_exchange(sequence, outcome, Instant::now()),
                        // A task that panicked: counted as the orchestrator counts a client's.
                        Err(_) => self.core.counters().callback_exceptions += 1,
                    }
                },
                rung = alarm.after(seen) => {
                    seen = rung;
                    if Instant::now() >= plan.drain_limit {
                        self.core.counters().drain_timeouts += 1;
                        break;
                    }
                }
            }
        }
        // Streams still open (unanswered, or left by a broken connection) end with the phase.
        self.exchanges.abort_all();
        while self.exchanges.join_next().await.is_some() {}
        self.core.finish(false)
    }
}
