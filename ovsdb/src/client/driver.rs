//! The client's background task and the state it shares with callers.
//!
//! The task owns the connection's life: it connects (with backoff, to the next remote),
//! sets the session up, writes queued requests, answers the server's `echo`, sends our
//! own inactivity probes, and ends the connection when it fails or the server stops
//! qualifying. Everything an incoming message touches (the connection's pending
//! requests, monitors, the `_Server` watch) lives in one [`Session`] behind a mutex that
//! is never held across an `await`, so that a caller whose request finds the connection
//! idle can write it and read the reply on its own task (see `handle.rs`): one task wake
//! per round trip instead of three.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::task::AtomicWaker;
use futures::Stream as _;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::{sleep, sleep_until, Instant, Sleep};
use tracing::{debug, info, warn};

use super::conn::{Conn, Ended, Pending, UserCall};
use super::error::Error;
use super::monitor::Monitors;
use super::server::{self, ServerWatch, SERVER_MONITOR_ID};
use super::transport::Connector;
use super::{ClientOptions, Event};
use crate::rpc::{params_to_raw, Message, RpcError};

/// Messages read per pass before the reader yields to the other sources of work.
const READ_BUDGET: usize = 64;
/// Commands taken per pass.
const COMMAND_BUDGET: usize = 256;
/// Largest request written by its caller for which the client asks to be woken when
/// the server reads it (see `StreamWriter::keep_awake`).
const KEEP_AWAKE_MAX_REQUEST: usize = 4096;
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

/// What the connection task and the client handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    session: Mutex<Session>,
    /// Wakes the connection task without taking the session's lock.
    driver: AtomicWaker,
    /// Commands sent to the task and not yet taken by it. A request is written by its
    /// caller only when none is queued, so requests and notifications leave in the
    /// order they were made.
    queued: AtomicUsize,
}

impl Shared {
    pub fn new(core: Core) -> Shared {
        Shared {
            session: Mutex::new(Session {
                conn: None,
                core,
                driver: None,
                broken: None,
            }),
            driver: AtomicWaker::new(),
            queued: AtomicUsize::new(0),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Session> {
        self.session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The session if nobody holds it. Callers never wait for the lock: its holder may
    /// be the connection task applying a large monitor update, and blocking a runtime
    /// thread for that long would stall unrelated tasks.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, Session>> {
        match self.session.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Wakes the connection task (to take over reading, for one).
    pub fn wake_driver(&self) {
        self.driver.wake();
    }

    /// Counts a command about to be sent to the task.
    pub fn queue_one(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// Takes back the count of a command that could not be sent.
    pub fn unqueue_one(&self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }

    /// Nothing is queued ahead of a new request.
    pub fn nothing_queued(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0
    }
}

/// The live connection (if any) and the state incoming messages update.
#[derive(Debug)]
pub(crate) struct Session {
    /// Present while the connection is being served; absent while (re)connecting, when
    /// requests wait in the task's queue.
    conn: Option<Conn>,
    core: Core,
    /// Wakes the connection task; a caller that read the socket itself registers this
    /// waker with the reactor again when it is done, so the task hears the next message.
    driver: Option<Waker>,
    /// Why a caller found the connection broken; the task ends the connection.
    broken: Option<String>,
}

impl Session {
    /// Puts `frame` (request `id`) on the live connection for a caller that will read
    /// the reply itself, if the connection is idle: up, no reply awaited, nothing
    /// waiting to be written. Gives the call back otherwise.
    pub fn send_inline(&mut self, id: u64, call: UserCall, frame: &[u8]) -> Result<(), UserCall> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(call);
        };
        if self.broken.is_some() || !conn.pending.is_empty() || !conn.out.is_empty() {
            return Err(call);
        }
        conn.pending.insert(id, Pending::User(call));
        // Only short round trips gain from staying awake; the server reads a large
        // request in many pieces, and each would wake us.
        conn.out.keep_awake(frame.len() <= KEEP_AWAKE_MAX_REQUEST);
        conn.feed_encoded(frame);
        // Write now, as the task would: a request is on the wire before its future is
        // first polled. A small request to an idle socket does not block; if it does,
        // the task finishes the write.
        let waker = Waker::noop();
        match conn.out.poll_drain(&mut Context::from_waker(waker)) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => {
                let reason = conn.write_failed(e);
                self.end(reason);
            }
            Poll::Pending => self.wake_driver(),
        }
        Ok(())
    }

    /// Reads and handles whatever has arrived (up to the reply to `until`), on the
    /// caller's task, and writes what that produced (answers to `echo`). The caller's
    /// waker is now the one the reactor wakes for the socket: it must call
    /// [`Session::hand_back`] when it stops polling.
    pub fn poll_inline(&mut self, cx: &mut Context<'_>, until: Option<u64>) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        if self.broken.is_some() {
            return;
        }
        let outcome = match read_some(conn, &mut self.core, cx, until) {
            Ok(_) => drain(conn, cx).map(drop),
            Err(ended) => Err(ended),
        };
        if let Err(ended) = outcome {
            self.end(ended);
        }
    }

    /// Returns the socket to the connection task after [`Session::poll_inline`]: reads
    /// what is there and registers the task's waker for what comes next.
    pub fn hand_back(&mut self) {
        let Some(waker) = self.driver.clone() else {
            // The task has not run yet; its first poll registers it.
            return;
        };
        self.poll_inline(&mut Context::from_waker(&waker), None);
    }

    /// Marks the connection broken and wakes the task to end it.
    fn end(&mut self, ended: Ended) {
        let reason = match ended {
            Ended::Lost(reason) => reason,
            Ended::Shutdown => "client shut down".to_owned(),
        };
        self.broken.get_or_insert(reason);
        self.wake_driver();
    }

    fn wake_driver(&self) {
        if let Some(waker) = &self.driver {
            waker.wake_by_ref();
        }
    }
}

/// Reads and handles up to [`READ_BUDGET`] messages; returns how many.
/// With `until`, stops right after the reply to that request: its caller returns at once
/// and [`Session::hand_back`] reads the rest.
fn read_some(
    conn: &mut Conn,
    core: &mut Core,
    cx: &mut Context<'_>,
    until: Option<u64>,
) -> Result<usize, Ended> {
    let mut handled = 0;
    while handled < READ_BUDGET {
        match Pin::new(&mut conn.reader).poll_next(cx) {
            Poll::Ready(next) => {
                let message = conn.received(next)?;
                let last = until.is_some()
                    && matches!(&message, Message::Reply { id, .. } | Message::Error { id, .. }
                        if id.as_u64() == until);
                core.dispatch(conn, message)?;
                handled += 1;
                if last {
                    return Ok(handled);
                }
            }
            Poll::Pending => return Ok(handled),
        }
    }
    // More may be waiting: come back after the other work.
    cx.waker().wake_by_ref();
    Ok(handled)
}

/// Writes what is queued, beside reading; `true` if it all went out.
fn drain(conn: &mut Conn, cx: &mut Context<'_>) -> Result<bool, Ended> {
    if conn.out.is_empty() {
        return Ok(false);
    }
    match conn.out.poll_drain(cx) {
        Poll::Ready(Ok(())) => Ok(true),
        Poll::Ready(Err(e)) => Err(conn.write_failed(e)),
        Poll::Pending => Ok(false),
    }
}

/// The session state every incoming message may touch.
#[derive(Debug)]
pub(crate) struct Core {
    pub options: Arc<ClientOptions>,
    pub ids: Arc<AtomicU64>,
    pub events: broadcast::Sender<Event>,
    pub monitors: Monitors,
    pub server: ServerWatch,
    /// Highest Raft index seen for the checked database (never go back in time).
    pub min_index: i64,
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
    /// Opens connections; keeps passive remotes' listeners.
    pub connector: Connector,
}

impl Driver {
    fn next_id(&self) -> u64 {
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

    fn events(&self) -> broadcast::Sender<Event> {
        self.shared.lock().core.events.clone()
    }

    fn set_current(&self, remote: Option<String>) {
        *self
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = remote;
    }

    /// Tries the remotes in turn, with exponential backoff after each full round,
    /// until one is accepted. `None` once every client handle is gone.
    pub async fn reconnect(&mut self) -> Option<Conn> {
        let mut backoff = self.options.backoff_min;
        loop {
            for _ in 0..self.options.remotes.len() {
                if self.commands.is_closed() {
                    return None;
                }
                match self.connect_next().await {
                    Ok(conn) => return Some(conn),
                    Err(reason) => debug!(%reason, "ovsdb remote rejected"),
                }
            }
            sleep(backoff).await;
            backoff = (backoff * 2).min(self.options.backoff_max);
        }
    }

    /// Connects to the next remote, checks it and resumes monitors on it.
    pub async fn connect_next(&mut self) -> Result<Conn, String> {
        let remote = self.options.remotes[self.next_remote % self.options.remotes.len()].clone();
        self.next_remote = (self.next_remote + 1) % self.options.remotes.len();
        let mut conn = Conn::open(
            &mut self.connector,
            &remote,
            self.options.max_message_len,
            self.options.connect_timeout,
        )
        .await?;
        let setup = tokio::time::timeout(self.options.connect_timeout, self.set_up(&mut conn));
        match setup.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(format!("{remote}: {e}")),
            Err(_) => return Err(format!("{remote}: setting up the session timed out")),
        }
        // Stay on this remote next time unless it fails.
        self.next_remote =
            (self.next_remote + self.options.remotes.len() - 1) % self.options.remotes.len();
        info!(%remote, "ovsdb connected");
        self.set_current(Some(remote.to_string()));
        let _ = self.events().send(Event::Connected {
            remote: remote.to_string(),
        });
        Ok(conn)
    }

    /// Session set-up on a fresh connection (not yet published, so every request
    /// waits in the queue meanwhile): db-change-awareness, the `_Server` check, then
    /// every registered monitor (resumed from its last transaction id).
    async fn set_up(&mut self, conn: &mut Conn) -> Result<(), Error> {
        if self.options.db_change_aware {
            self.call_inline(conn, "set_db_change_aware", &json!([true]))
                .await?;
        }
        if let Some(database) = self.options.database.clone() {
            self.shared.lock().core.server = ServerWatch::default();
            let reply = self
                .call_inline(conn, "monitor", &server::monitor_params())
                .await?;
            let updates: Value =
                serde_json::from_str(reply.get()).map_err(|e| Error::bad_reply("monitor", e))?;
            let mut session = self.shared.lock();
            let core = &mut session.core;
            core.server
                .apply(&updates)
                .map_err(|e| Error::bad_reply("monitor", e))?;
            server::check_server(
                core.server.row(&database),
                &database,
                self.options.leader_only,
                &mut core.min_index,
            )
            .map_err(|reason| Error::NoServer {
                remotes: conn.remote.to_string(),
                last_reason: reason,
            })?;
        }
        let monitors = self.shared.lock().core.monitors.clone();
        for monitor in monitors.keys() {
            let (method, params) = monitors.start_request(monitor);
            let reply = self.call_inline(conn, method, &params).await?;
            monitors.on_start_reply(monitor, &reply)?;
        }
        Ok(())
    }

    /// Sends one request and handles incoming traffic until its reply arrives.
    async fn call_inline<P: serde::Serialize + ?Sized>(
        &mut self,
        conn: &mut Conn,
        method: &str,
        params: &P,
    ) -> Result<Box<RawValue>, Error> {
        let id = self.next_id();
        let remote = conn.remote.to_string();
        let lost = |e: Ended| match e {
            Ended::Shutdown => Error::Closed,
            Ended::Lost(reason) => Error::NoServer {
                remotes: remote.clone(),
                last_reason: reason,
            },
        };
        let request = Message::Request {
            id: json!(id),
            method: method.to_owned(),
            params: params_to_raw(params),
        };
        conn.send(&request).await.map_err(lost)?;
        loop {
            let message = conn.receive().await.map_err(lost)?;
            match message {
                Message::Reply {
                    id: ref got,
                    result,
                } if got.as_u64() == Some(id) => return Ok(result),
                Message::Error { id: ref got, error } if got.as_u64() == Some(id) => {
                    return Err(Error::Rpc {
                        method: method.to_owned(),
                        error,
                    })
                }
                other => {
                    let dispatched = self.shared.lock().core.dispatch(conn, other);
                    dispatched.map_err(lost)?;
                    if !conn.out.is_empty() {
                        conn.flush().await.map_err(lost)?;
                    }
                }
            }
        }
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

impl Core {
    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    fn command(&mut self, conn: &mut Conn, command: Command) -> Result<(), Ended> {
        match command {
            Command::Call { id, frame, call } => {
                if call.reply.is_closed() {
                    // Dropped before it was sent: nothing to send, nothing to cancel.
                    return Ok(());
                }
                conn.pending.insert(id, Pending::User(call));
                conn.out.keep_awake(false);
                conn.feed_encoded(&frame);
                Ok(())
            }
            Command::Notify { method, params } => {
                conn.feed(&Message::Notification { method, params });
                Ok(())
            }
            Command::Cancel { id, reply } => {
                self.cancel(conn, id, reply);
                Ok(())
            }
            Command::StartMonitor { monitor, reply } => {
                let (method, params) = self.monitors.start_request(monitor);
                let id = self.next_id();
                conn.pending.insert(
                    id,
                    Pending::MonitorStart {
                        monitor,
                        reply: Some(reply),
                    },
                );
                conn.feed(&Message::Request {
                    id: json!(id),
                    method: method.to_owned(),
                    params: params_to_raw(&params),
                });
                Ok(())
            }
            Command::ForgetMonitor { monitor } => {
                let Some(monitor_id) = self.monitors.current_id(monitor) else {
                    return Ok(());
                };
                self.monitors.forget(monitor);
                let id = self.next_id();
                conn.pending.insert(id, Pending::Ignore);
                conn.feed(&Message::request(
                    id,
                    "monitor_cancel",
                    vec![json!(monitor_id)],
                ));
                Ok(())
            }
        }
    }

    fn cancel(&mut self, conn: &mut Conn, id: u64, done: Option<oneshot::Sender<()>>) {
        if let Some(Pending::User(UserCall { reply, .. })) = conn.pending.remove(&id) {
            let _ = reply.send(Err(Error::Canceled { id }));
            // Only a session that set db-change-awareness gets a reply ("canceled") to
            // the canceled request; we have forgotten the id either way.
            conn.feed(&Message::notification("cancel", vec![json!(id)]));
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Routes one incoming message.
    fn dispatch(&mut self, conn: &mut Conn, message: Message) -> Result<(), Ended> {
        match message {
            Message::Reply { id, result } => self.on_reply(conn, &id, Ok(result)),
            Message::Error { id, error } => self.on_reply(conn, &id, Err(error)),
            Message::Request { id, method, params } if method == "echo" => {
                // The server's inactivity probe: answer with the same params.
                conn.feed(&Message::Reply { id, result: params });
                Ok(())
            }
            Message::Request { id, method, .. } => {
                warn!(%method, "ovsdb server sent an unknown request");
                let error = RpcError {
                    error: "unknown method".into(),
                    details: Some(method),
                    syntax: None,
                };
                conn.feed(&Message::Error { id, error });
                Ok(())
            }
            Message::Notification { method, params } => {
                self.on_notification(conn, &method, &params)
            }
        }
    }

    fn on_reply(
        &mut self,
        conn: &mut Conn,
        id: &Value,
        outcome: Result<Box<RawValue>, RpcError>,
    ) -> Result<(), Ended> {
        let Some(pending) = id.as_u64().and_then(|id| conn.pending.remove(&id)) else {
            // A reply to a canceled request, or to an echo we did not number.
            return Ok(());
        };
        match pending {
            Pending::User(UserCall { method, reply, .. }) => {
                let _ = reply.send(outcome.map_err(|error| Error::Rpc {
                    method: method.into_owned(),
                    error,
                }));
            }
            Pending::MonitorStart { monitor, reply } => {
                let applied = match outcome {
                    Ok(result) => self.monitors.on_start_reply(monitor, &result),
                    Err(error) => Err(Error::Rpc {
                        method: self.monitors.start_request(monitor).0.to_owned(),
                        error,
                    }),
                };
                if applied.is_err() {
                    self.monitors.forget(monitor);
                }
                if let Some(reply) = reply {
                    let _ = reply.send(applied);
                }
            }
            Pending::Probe | Pending::Ignore => {}
        }
        Ok(())
    }

    fn on_notification(
        &mut self,
        conn: &mut Conn,
        method: &str,
        params: &RawValue,
    ) -> Result<(), Ended> {
        match method {
            "update"
                if params
                    .get()
                    .starts_with(&format!("[\"{SERVER_MONITOR_ID}\"")) =>
            {
                self.on_server_update(params)
            }
            "update" | "update2" | "update3" => {
                if let Err(error) = self.monitors.on_update(method, params) {
                    // The replica can no longer be trusted: resync from scratch.
                    return Err(Ended::Lost(format!(
                        "applying {method} from {}: {error}",
                        conn.remote
                    )));
                }
                Ok(())
            }
            "locked" | "stolen" | "monitor_canceled" => {
                let first: Option<(String,)> = serde_json::from_str(params.get()).ok();
                let name = first.map(|(s,)| s).unwrap_or_default();
                let event = match method {
                    "locked" => Event::Locked { lock: name },
                    "stolen" => Event::Stolen { lock: name },
                    _ => {
                        self.monitors.on_canceled(&name);
                        Event::MonitorCanceled { monitor: name }
                    }
                };
                let _ = self.events.send(event);
                Ok(())
            }
            other => {
                debug!(method = other, "ignoring ovsdb notification");
                Ok(())
            }
        }
    }

    /// `_Server.Database` changed: drop the connection if the server no longer qualifies
    /// (lost leadership or its majority).
    fn on_server_update(&mut self, params: &RawValue) -> Result<(), Ended> {
        let (_, updates): (Value, Value) = serde_json::from_str(params.get())
            .map_err(|e| Ended::Lost(format!("bad _Server update: {e}")))?;
        self.server.apply(&updates).map_err(Ended::Lost)?;
        if let Some(database) = &self.options.database {
            let row = self.server.row(database);
            server::check_server(row, database, self.options.leader_only, &mut self.min_index)
                .map_err(Ended::Lost)?;
        }
        Ok(())
    }

    /// When to probe (or give up on an unanswered probe); far away when probing is off.
    fn probe_deadline(&self, conn: &Conn) -> Instant {
        match self.options.probe_interval {
            None => conn.last_rx + Duration::from_secs(3600),
            Some(interval) => match conn.probe_sent {
                Some(sent) => sent + interval,
                None => conn.last_rx + interval,
            },
        }
    }

    /// Nothing arrived for a probe interval: send an `echo`; if a probe is already out
    /// and unanswered for another interval, the peer is gone.
    fn probe(&mut self, conn: &mut Conn) -> Result<(), Ended> {
        if conn.probe_sent.is_some() {
            return Err(Ended::Lost(format!(
                "no reply to inactivity probe from {}",
                conn.remote
            )));
        }
        let id = self.next_id();
        conn.pending.insert(id, Pending::Probe);
        conn.probe_sent = Some(Instant::now());
        conn.feed(&Message::request(id, "echo", vec![]));
        Ok(())
    }
}
