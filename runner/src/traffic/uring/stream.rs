//! Stream echo on monoio (io_uring): the same [`Session`] and [`ServerSide`] as on tokio,
//! driven by completion-based IO.
//!
//! An io_uring read owns its buffer until the kernel completes it, and dropping it loses
//! whatever it read, so a read is never raced against anything and cancelled. Each client
//! therefore runs as three tasks on its shard that share one session (one thread: a
//! `RefCell`, never borrowed across an await):
//!
//! * the **reader** keeps one read in flight at all times and judges the echoes it brings,
//!   queueing a new message per freed slot;
//! * the **writer** sends whatever is queued, one `write_all` per batch;
//! * the **phase driver** opens each phase and waits until nothing is in flight, the
//!   connection broke or the drain limit passed (the orchestrator's alarm).
//!
//! The server side is one task per connection: read, answer, write all, read again.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use monoio::io::{AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt};
use tokio::sync::Notify;

use super::buf::ReadSpace;
use crate::framing::Framing;
use crate::traffic::phase::{ClientReport, LocalPhaseClient, PhasePlan};
use crate::traffic::stream::{within_idle, ServerDuty, ServerSide, Session};

/// What a client's three tasks share.
pub struct Link<F> {
    session: RefCell<Session<F>>,
    /// Wakes the writer: bytes are queued, or the connection broke.
    to_write: Notify,
    /// Wakes the phase driver: nothing is in flight any more, or the connection broke.
    settled: Notify,
}

impl<F: Framing> Link<F> {
    /// A link around `session`.
    pub fn new(session: Session<F>) -> Rc<Self> {
        Rc::new(Self {
            session: RefCell::new(session),
            to_write: Notify::new(),
            settled: Notify::new(),
        })
    }

    /// Marks the connection broken and wakes everyone who waits on it.
    fn break_off(&self) {
        self.session.borrow_mut().broken = true;
        self.to_write.notify_one();
        self.settled.notify_one();
    }
}

/// The reader task: one read always in flight, every echo judged as it arrives.
pub async fn read_echoes<R: AsyncReadRent, F: Framing>(mut rd: R, link: Rc<Link<F>>) {
    loop {
        let space = ReadSpace::lend(&mut link.session.borrow_mut().recv);
        let (result, space) = rd.read(space).await;
        let mut s = link.session.borrow_mut();
        space.give_back(&mut s.recv);
        match result {
            Ok(n) if n > 0 => {}
            _ => {
                s.core.counters().disconnect_errors += 1;
                drop(s);
                link.break_off();
                return;
            }
        }
        s.alarm.progressed();
        if !s.take_echoes(Instant::now()) {
            drop(s);
            link.break_off();
            return;
        }
        let (queued, idle) = (!s.out.is_empty(), s.core.in_flight() == 0);
        drop(s);
        if queued {
            link.to_write.notify_one();
        }
        if idle {
            link.settled.notify_one();
        }
    }
}

/// The writer task: sends each batch the session queued.
pub async fn write_queued<W: AsyncWriteRent, F: Framing>(mut wr: W, link: Rc<Link<F>>) {
    let mut spare: Vec<u8> = Vec::new();
    loop {
        let batch = {
            let mut s = link.session.borrow_mut();
            if s.broken {
                return;
            }
            if s.out.is_empty() {
                None
            } else {
                Some(std::mem::replace(&mut s.out, std::mem::take(&mut spare)))
            }
        };
        let Some(batch) = batch else {
            link.to_write.notified().await;
            continue;
        };
        let (result, mut batch) = wr.write_all(batch).await;
        // TLS buffers records; push them out so the echo is not delayed.
        let written = result.is_ok() && wr.flush().await.is_ok();
        if !written {
            link.session
                .borrow_mut()
                .core
                .counters()
                .client_send_rejections += 1;
            link.break_off();
            return;
        }
        batch.clear();
        spare = batch;
    }
}

/// The phase driver of one stream client.
pub struct UringStreamClient<F> {
    link: Rc<Link<F>>,
}

impl<F: Framing> UringStreamClient<F> {
    /// The driver of the client whose reader and writer share `link`.
    pub fn new(link: Rc<Link<F>>) -> Self {
        Self { link }
    }
}

impl<F: Framing> LocalPhaseClient for UringStreamClient<F> {
    async fn run_phase(&mut self, plan: PhasePlan) -> ClientReport {
        let link = &self.link;
        let alarm = {
            let mut s = link.session.borrow_mut();
            if let Some(report) = s.start_phase(plan) {
                return report;
            }
            s.alarm.clone()
        };
        link.to_write.notify_one();
        let mut seen = alarm.rings();
        loop {
            {
                let s = link.session.borrow();
                if s.broken || s.core.in_flight() == 0 {
                    break;
                }
            }
            monoio::select! {
                _ = link.settled.notified() => {}
                rung = alarm.after(seen) => {
                    seen = rung;
                    if Instant::now() >= plan.drain_limit {
                        link.session.borrow_mut().core.counters().drain_timeouts += 1;
                        break;
                    }
                }
            }
        }
        link.session.borrow_mut().core.finish(false)
    }
}

/// Serves one connection until the peer closes it.
pub async fn serve<S, F>(mut stream: S, duty: ServerDuty, framing: F)
where
    S: AsyncReadRent + AsyncWriteRent,
    F: Framing,
{
    let idle = duty.idle.clone();
    let mut server = ServerSide::new(duty, framing);
    loop {
        let space = ReadSpace::lend(&mut server.recv);
        // A read given up for silence keeps its buffer until the kernel cancels it; the
        // connection closes then anyway.
        let Some((result, space)) =
            within_idle(idle.as_ref(), stream.read(space), monoio::time::sleep).await
        else {
            break;
        };
        space.give_back(&mut server.recv);
        match result {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => {
                server.disconnected();
                break;
            }
        }
        if let Some(stall) = server.stall() {
            monoio::time::sleep(stall).await;
        }
        let corrupt = server.answer().is_err();
        if !server.out.is_empty() {
            let out = std::mem::take(&mut server.out);
            let (result, mut out) = stream.write_all(out).await;
            let written = match result {
                Ok(_) => stream.flush().await,
                Err(e) => Err(e),
            };
            if let Err(e) = written {
                server.send_failed(&e);
                break;
            }
            out.clear();
            server.out = out;
        }
        if corrupt {
            // The refusal is the last thing sent.
            let _ = stream.shutdown().await;
            break;
        }
        if server.peer_closed() {
            break;
        }
    }
}
