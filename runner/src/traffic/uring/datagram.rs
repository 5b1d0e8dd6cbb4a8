//! UDP echo on monoio (io_uring): the same client core, loss timeout and server side as on
//! tokio. As for streams, a receive is never cancelled (it would lose the datagram it
//! completed with), so each client is a receiver task that keeps one `recv` in flight, a
//! sender task that sends what is queued, one datagram per message, and the phase driver,
//! which opens phases and runs the loss checks when the orchestrator rings its alarm.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use monoio::buf::IoBuf;
use monoio::net::udp::UdpSocket;
use tokio::sync::Notify;

use crate::instruments::alarm::Alarm;
use crate::traffic::client::{ClientCore, ClientShape, Next, OrderRule};
use crate::traffic::datagram::{DatagramServer, Reply, RECV_BUF};
use crate::traffic::phase::{ClientReport, LocalPhaseClient, PhasePlan};
use crate::traffic::stream::ServerDuty;

/// One UDP client's state, shared by its three tasks.
struct State {
    core: ClientCore,
    payload: usize,
    /// Messages waiting to be sent, each exactly `payload` bytes, back to back.
    queue: Vec<u8>,
    broken: bool,
}

impl State {
    fn queue_next(&mut self, now: Instant) {
        self.core.write_next(&mut self.queue, now);
    }
}

/// What a UDP client's tasks share.
pub struct DatagramLink {
    state: RefCell<State>,
    socket: UdpSocket,
    alarm: Arc<Alarm>,
    timeout: Duration,
    to_send: Notify,
    settled: Notify,
}

impl DatagramLink {
    /// Client `index` on `socket` (connected to its server socket).
    pub fn new(
        socket: UdpSocket,
        index: usize,
        shape: ClientShape,
        timeout: Duration,
        alarm: Arc<Alarm>,
    ) -> Rc<Self> {
        Rc::new(Self {
            state: RefCell::new(State {
                core: shape.core(index, OrderRule::Increasing),
                payload: shape.payload,
                queue: Vec::with_capacity(shape.window * shape.payload),
                broken: false,
            }),
            socket,
            alarm,
            timeout,
            to_send: Notify::new(),
            settled: Notify::new(),
        })
    }

    fn break_off(&self) {
        self.state.borrow_mut().broken = true;
        self.to_send.notify_one();
        self.settled.notify_one();
    }
}

/// The receiver task: one `recv` always in flight.
pub async fn receive_echoes(link: Rc<DatagramLink>) {
    let mut buf: Vec<u8> = Vec::with_capacity(RECV_BUF);
    loop {
        let (result, returned) = link.socket.recv(buf).await;
        buf = returned;
        let mut s = link.state.borrow_mut();
        match result {
            // The shard shut the socket down: the measurement is over.
            Ok(0) if super::stopping() => {
                drop(s);
                link.break_off();
                return;
            }
            Ok(n) => {
                link.alarm.progressed();
                let now = Instant::now();
                if s.core.on_echo(&buf[..n], now) == Next::Send {
                    s.queue_next(now);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                s.core.counters().disconnect_errors += 1;
                drop(s);
                link.break_off();
                return;
            }
            Err(_) => s.core.counters().unexpected_messages += 1,
        }
        let (queued, idle) = (!s.queue.is_empty(), s.core.in_flight() == 0);
        drop(s);
        if queued {
            link.to_send.notify_one();
        }
        if idle {
            link.settled.notify_one();
        }
    }
}

/// The sender task: one datagram per queued message.
pub async fn send_queued(link: Rc<DatagramLink>) {
    let mut spare: Vec<u8> = Vec::new();
    loop {
        let (batch, payload) = {
            let mut s = link.state.borrow_mut();
            if s.broken {
                return;
            }
            let payload = s.payload;
            if s.queue.is_empty() {
                (None, payload)
            } else {
                let next = std::mem::take(&mut spare);
                (Some(std::mem::replace(&mut s.queue, next)), payload)
            }
        };
        let Some(mut batch) = batch else {
            link.to_send.notified().await;
            continue;
        };
        let mut at = 0;
        while at < batch.len() {
            let end = (at + payload).min(batch.len());
            let (result, slice) = link.socket.send(batch.slice(at..end)).await;
            batch = slice.into_inner();
            let mut s = link.state.borrow_mut();
            match result {
                Ok(n) if n == end - at => {}
                Ok(_) => s.core.counters().client_send_completion_errors += 1,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    s.core.counters().disconnect_errors += 1;
                    drop(s);
                    link.break_off();
                    return;
                }
                Err(_) => s.core.counters().client_send_rejections += 1,
            }
            at = end;
        }
        batch.clear();
        spare = batch;
    }
}

/// The phase driver of one UDP client.
pub struct UringUdpClient {
    link: Rc<DatagramLink>,
}

impl UringUdpClient {
    /// The driver of the client whose tasks share `link`.
    pub fn new(link: Rc<DatagramLink>) -> Self {
        Self { link }
    }
}

impl LocalPhaseClient for UringUdpClient {
    async fn run_phase(&mut self, plan: PhasePlan) -> ClientReport {
        let link = &self.link;
        {
            let mut s = link.state.borrow_mut();
            let broken = s.broken;
            if let Some(report) = s.core.begin_unless_broken(plan, broken, true) {
                return report;
            }
            let now = Instant::now();
            s.queue.clear();
            for _ in 0..s.core.window() {
                s.queue_next(now);
            }
        }
        link.to_send.notify_one();
        // Loss checks and the drain limit run when the orchestrator rings the alarm.
        let mut seen = link.alarm.rings();
        loop {
            {
                let s = link.state.borrow();
                if s.broken || !s.core.has_traffic(Instant::now()) {
                    break;
                }
            }
            monoio::select! {
                _ = link.settled.notified() => {}
                rung = link.alarm.after(seen) => {
                    seen = rung;
                    let now = Instant::now();
                    let mut s = link.state.borrow_mut();
                    if now >= plan.drain_limit {
                        s.core.counters().drain_timeouts += 1;
                        break;
                    }
                    let freed = s.core.expire(now, link.timeout);
                    if s.core.may_send(now) && freed > 0 {
                        for _ in 0..freed {
                            s.queue_next(now);
                        }
                        drop(s);
                        link.to_send.notify_one();
                    }
                }
            }
        }
        link.state.borrow_mut().core.finish(true)
    }
}

/// Serves one server socket until the runtime stops.
pub async fn serve(socket: UdpSocket, duty: ServerDuty) {
    let mut buf: Vec<u8> = Vec::with_capacity(RECV_BUF);
    let mut server = DatagramServer::new(duty);
    loop {
        let (result, returned) = socket.recv_from(buf).await;
        buf = returned;
        if super::stopping() {
            return;
        }
        // ICMP errors from a client that already closed surface here; keep serving.
        let Ok((_, peer)) = result else { continue };
        if let Some(stall) = server.stall() {
            monoio::time::sleep(stall).await;
        }
        let Reply::Echo { phase, then } = server.on_datagram(&mut buf, peer) else {
            continue;
        };
        let len = buf.len();
        let (sent, returned) = socket.send_to(buf, peer).await;
        buf = returned;
        server.sent(phase, sent, len);
        if let Some((late, to)) = then {
            let len = late.len();
            let (sent, _) = socket.send_to(late, to).await;
            server.sent(phase, sent, len);
        }
    }
}
