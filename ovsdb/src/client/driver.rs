//! The client's background task: it owns the connection's life. It connects (with
//! backoff, to the next remote; see `setup.rs`), serves the live connection (reads and
//! dispatches incoming messages, see `dispatch.rs`; writes queued requests; sends our own
//! inactivity probes), and ends the connection when it fails or the server stops
//! qualifying. Callers share the session with it (see `session.rs`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use serde_json::value::RawValue;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::{sleep_until, Instant, Sleep};
use tracing::warn;

use super::conn::{Conn, Ended, UserCall};
use super::dispatch::Core;
use super::error::Error;
use super::session::{drain, read_some, Shared};
use super::{ClientOptions, Event};

/// Commands taken per pass.
const COMMAND_BUDGET: usize = 256;
/// Passes over all sources in one poll of the connection task before it yields.
const PASSES: usize = 8;

/// A request from a client handle to the background task.
#[derive(Debug)]
pub(crate) enum Command {
    Call {
        id: u64,
        /// The whole request, already encoded by the caller.
        frame: Vec<u8>,
        call: UserCall,
    },
    Notify {
        method: String,
        params: Box<RawValue>,
    },
    /// Forget a request and ask the server to cancel it (`cancel` notification).
    Cancel {
        id: u64,
        reply: Option<oneshot::Sender<()>>,
    },
    /// Start a registered monitor on the current connection.
    StartMonitor {
        monitor: u64,
        reply: oneshot::Sender<Result<(), Error>>,
    },
    /// Stop resuming a monitor after reconnects.
    ForgetMonitor { monitor: u64 },
}

/// The connection task.
#[derive(Debug)]
pub(crate) struct Driver {
    pub options: Arc<ClientOptions>,
    pub shared: Arc<Shared>,
    pub commands: mpsc::UnboundedReceiver<Command>,
    pub ids: Arc<AtomicU64>,
    /// Index into `options.remotes` of the remote to try next.
    pub next_remote: usize,
    /// The remote of the live connection, shared with the handles.
    pub current: Arc<std::sync::Mutex<Option<String>>>,
    /// Locks the handles asked for and did not release (asked for again on reconnect).
    pub locks: Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// Opens connections; keeps passive remotes' listeners.
    pub connector: super::transport::Connector,
}

impl Driver {
    pub(super) fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Makes `conn` the live connection.
    pub fn publish(&self, conn: Conn) {
        let mut session = self.shared.lock();
        session.broken = None;
        session.conn = Some(conn);
    }

    /// Runs until every client handle is dropped; starts with the published connection.
    pub async fn run(mut self) {
        loop {
            if self.shared.lock().conn.is_none() {
                match self.reconnect().await {
                    Some(conn) => self.publish(conn),
                    None => return,
                }
            }
            let ended = self.serve().await;
            let conn = {
                let mut session = self.shared.lock();
                session.broken = None;
                session.conn.take()
            };
            self.set_current(None);
            let Some(mut conn) = conn else { continue };
            conn.fail_pending();
            match ended {
                Ended::Shutdown => return,
                Ended::Lost(reason) => {
                    warn!(remote = %conn.remote, %reason, "ovsdb connection lost");
                    let _ = self.events().send(Event::Disconnected {
                        remote: conn.remote.to_string(),
                        reason,
                    });
                }
            }
        }
    }

    pub(super) fn events(&self) -> broadcast::Sender<Event> {
        self.shared.lock().core.events.clone()
    }

    pub(super) fn set_current(&self, remote: Option<String>) {
        *self
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = remote;
    }

    /// Serves the published connection until it ends.
    async fn serve(&mut self) -> Ended {
        // One timer per connection, re-armed only when it fires: traffic only ever moves
        // the probe deadline later, so resetting a timer on every message (a timer-wheel
        // update per request) is not needed. No probing, no timer at all.
        let mut probe_timer = match self.options.probe_interval {
            None => None,
            Some(_) => {
                let session = self.shared.lock();
                match &session.conn {
                    Some(conn) => Some(Box::pin(sleep_until(session.core.probe_deadline(conn)))),
                    None => return Ended::Lost("no connection to serve".to_owned()),
                }
            }
        };
        std::future::poll_fn(|cx| self.poll_serve(cx, &mut probe_timer)).await
    }

    /// One turn of the connection task: incoming messages first (they are what callers
    /// wait for), then queued commands, then writing (beside reading, never instead of
    /// it: a server that stops reading our requests until we read its replies must not
    /// deadlock a pipeline of big transactions), then the probe timer. Returns once a
    /// pass finds nothing to do (every source has registered this task's waker).
    fn poll_serve(
        &mut self,
        cx: &mut Context<'_>,
        probe_timer: &mut Option<Pin<Box<Sleep>>>,
    ) -> Poll<Ended> {
        let shared = self.shared.clone();
        shared.driver.register(cx.waker());
        let mut guard = shared.lock();
        let session = &mut *guard;
        if !session
            .driver
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            session.driver = Some(cx.waker().clone());
        }
        for _ in 0..PASSES {
            if let Some(reason) = session.broken.take() {
                return Poll::Ready(Ended::Lost(reason));
            }
            let Some(conn) = session.conn.as_mut() else {
                return Poll::Ready(Ended::Lost("no connection to serve".to_owned()));
            };
            let core = &mut session.core;
            match self.pass(conn, core, cx, probe_timer) {
                Ok(true) => {}
                Ok(false) => return Poll::Pending,
                Err(ended) => return Poll::Ready(ended),
            }
        }
        // Still busy: let other tasks (callers waiting on replies) run first.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// One pass over every source of work; `true` if any made progress.
    fn pass(
        &mut self,
        conn: &mut Conn,
        core: &mut Core,
        cx: &mut Context<'_>,
        probe_timer: &mut Option<Pin<Box<Sleep>>>,
    ) -> Result<bool, Ended> {
        let mut progressed = read_some(conn, core, cx, None)? > 0;
        for _ in 0..COMMAND_BUDGET {
            match self.commands.poll_recv(cx) {
                Poll::Ready(Some(command)) => {
                    self.shared.unqueue_one();
                    core.command(conn, command)?;
                    progressed = true;
                }
                Poll::Ready(None) => return Err(Ended::Shutdown),
                Poll::Pending => break,
            }
        }
        progressed |= drain(conn, cx)?;
        if let Some(timer) = probe_timer {
            if timer.as_mut().poll(cx).is_ready() {
                if Instant::now() >= core.probe_deadline(conn) {
                    core.probe(conn)?;
                }
                timer.as_mut().reset(core.probe_deadline(conn));
                progressed = true;
            }
        }
        Ok(progressed)
    }
}
