//! [`Client`]: the handle callers use, and [`PendingRequest`], a cancellable reply.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::{sleep, timeout_at, Instant};

use super::conn::{Conn, UserCall};
use super::dispatch::Core;
use super::driver::{Command, Driver};
use super::error::{Error, GaveUp, Rejection};
use super::monitor::Monitors;
use super::server::ServerWatch;
use super::session::Shared;
use super::transport::Connector;
use super::{ClientOptions, Event};
use crate::operation::{Operation, OperationResult, TransactReply};
use crate::rpc::{encode_request, params_to_raw};
use crate::schema::DatabaseSchema;

/// A connection to an OVSDB server (or cluster); cheap to clone. The session ends when
/// the last clone is dropped.
#[derive(Debug, Clone)]
pub struct Client {
    pub(super) inner: Arc<Inner>,
    /// How long this handle's calls wait for their reply (see
    /// [`Client::with_request_timeout`]).
    timeout: Option<Duration>,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub commands: mpsc::UnboundedSender<Command>,
    pub shared: Arc<Shared>,
    pub ids: Arc<AtomicU64>,
    pub events: broadcast::Sender<Event>,
    pub schemas: Mutex<HashMap<String, Arc<DatabaseSchema>>>,
    pub monitors: Monitors,
    pub options: Arc<ClientOptions>,
    pub current: Arc<Mutex<Option<String>>>,
    /// Locks asked for and not released, asked for again on every new connection.
    pub locks: Arc<Mutex<BTreeSet<String>>>,
}

impl Client {
    /// Connects to a comma-separated list of remotes with default options.
    pub async fn connect(remotes: &str) -> Result<Client, Error> {
        Client::connect_with(ClientOptions::new([remotes])?).await
    }

    /// Connects with explicit options: tries the remotes in turn (with backoff) until one
    /// is accepted or [`ClientOptions::connect_timeout`] has passed.
    pub async fn connect_with(options: ClientOptions) -> Result<Client, Error> {
        let options = Arc::new(options);
        let (commands, receiver) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(256);
        let ids = Arc::new(AtomicU64::new(1));
        let monitors = Monitors::default();
        let shared = Arc::new(Shared::new(Core {
            options: options.clone(),
            ids: ids.clone(),
            events: events.clone(),
            monitors: monitors.clone(),
            server: ServerWatch::default(),
            seen: Default::default(),
        }));
        let mut driver = Driver {
            options: options.clone(),
            shared: shared.clone(),
            commands: receiver,
            ids: ids.clone(),
            next_remote: 0,
            current: Arc::new(Mutex::new(None)),
            locks: Arc::default(),
            connector: Connector::new(options.tls.clone()),
        };
        let current = driver.current.clone();
        let locks = driver.locks.clone();
        let conn = first_connection(&mut driver).await?;
        driver.publish(conn);
        tokio::spawn(driver.run());
        Ok(Client {
            inner: Arc::new(Inner {
                commands,
                shared,
                ids,
                events,
                schemas: Mutex::new(HashMap::new()),
                monitors,
                options,
                current,
                locks,
            }),
            timeout: None,
        })
    }

    /// A handle on the same session whose calls ([`Client::transact`], [`Client::call`],
    /// [`Client::echo`], ...; not the raw [`PendingRequest`] of [`Client::request`]) give
    /// up after `timeout` (`None`: wait as long as it takes, the default). A `transact`
    /// that times out fails with [`Error::OutcomeUnknown`] (it may still commit: see
    /// there how to settle it), any other call with [`Error::TimedOut`]; either way the
    /// server is sent a `cancel`.
    pub fn with_request_timeout(&self, timeout: Option<Duration>) -> Client {
        Client {
            inner: self.inner.clone(),
            timeout,
        }
    }

    /// This handle's request timeout ([`Client::with_request_timeout`]).
    pub fn request_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The options this client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// The remote of the live connection, `None` while reconnecting.
    pub fn current_remote(&self) -> Option<String> {
        self.inner
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// Session events: connects, disconnects, lock grants and steals, canceled monitors.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    pub(super) fn next_id(&self) -> u64 {
        self.inner.ids.fetch_add(1, Ordering::Relaxed)
    }

    pub(super) fn send(&self, command: Command) -> Result<(), Error> {
        send_command(&self.inner.commands, &self.inner.shared, command)
    }

    /// Sends any request (escape hatch for methods without a wrapper) and returns a
    /// future for its raw result. `params` is written as given (always an array).
    ///
    /// Starting a monitor (`monitor`, `monitor_cond`, `monitor_cond_since`) this way is
    /// refused with [`Error::UseMonitorApi`]: its updates would have no replica to go to.
    pub fn request<P: serde::Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> PendingRequest {
        if matches!(method, "monitor" | "monitor_cond" | "monitor_cond_since") {
            return PendingRequest::failed(Error::UseMonitorApi {
                method: method.to_owned(),
            });
        }
        self.request_encoded(method, params, method == "transact")
    }

    /// Sends a request and waits for its reply, within this handle's timeout.
    async fn ask<P: serde::Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Box<RawValue>, Error> {
        self.reply_of(self.request(method, params), method).await
    }

    /// Waits for `pending`, within this handle's timeout.
    async fn reply_of(
        &self,
        pending: PendingRequest,
        method: &str,
    ) -> Result<Box<RawValue>, Error> {
        let Some(after) = self.timeout else {
            return pending.await;
        };
        match tokio::time::timeout(after, pending).await {
            Ok(outcome) => outcome,
            // The pending request is dropped: the server is sent a `cancel`.
            Err(_) if method == "transact" => Err(Error::OutcomeUnknown {
                remote: self.current_remote().unwrap_or_default(),
                why: GaveUp::TimedOut(after),
            }),
            Err(_) => Err(Error::TimedOut {
                method: method.to_owned(),
                after,
            }),
        }
    }

    /// Numbers the request and encodes it here, on the caller's task. On an idle
    /// connection the caller writes it and reads the reply itself (see
    /// [`PendingRequest`]); otherwise the connection task copies the finished bytes into
    /// its write buffer.
    fn request_encoded<P: serde::Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        transact: bool,
    ) -> PendingRequest {
        let id = self.next_id();
        let mut frame = Vec::with_capacity(128);
        encode_request(&mut frame, id, method, params);
        let (reply, rx) = oneshot::channel();
        let method = match method {
            "transact" => Cow::Borrowed("transact"),
            other => Cow::Owned(other.to_owned()),
        };
        let mut call = UserCall {
            method,
            transact,
            reply,
        };
        let shared = &self.inner.shared;
        let session = shared.nothing_queued().then(|| shared.try_lock()).flatten();
        if let Some(mut session) = session {
            match session.send_inline(id, call, &frame) {
                Ok(()) => {
                    return PendingRequest {
                        id,
                        rx,
                        link: Some(self.link()),
                        inline: true,
                        reading: false,
                        done: false,
                    }
                }
                Err(refused) => call = refused,
            }
        }
        let sent = self.send(Command::Call { id, frame, call });
        PendingRequest {
            id,
            rx,
            link: sent.is_ok().then(|| self.link()),
            inline: false,
            reading: false,
            done: false,
        }
    }

    fn link(&self) -> Link {
        Link {
            commands: self.inner.commands.clone(),
            shared: self.inner.shared.clone(),
        }
    }

    /// Calls `method` and parses its result as JSON.
    pub async fn call(&self, method: &str, params: Vec<Value>) -> Result<Value, Error> {
        let raw = self.ask(method, &params).await?;
        serde_json::from_str(raw.get()).map_err(|e| Error::bad_reply(method, e))
    }

    /// Sends a notification (a request with `"id": null`; no reply).
    pub fn notify(&self, method: &str, params: Vec<Value>) -> Result<(), Error> {
        self.send(Command::Notify {
            method: method.to_owned(),
            params: params_to_raw(&params),
        })
    }

    /// Cancels a pending request: its future resolves to [`Error::Canceled`] (for a
    /// `transact`, [`Error::OutcomeUnknown`]: it may have committed already) and the
    /// server gets a `cancel` notification. Dropping a [`PendingRequest`] does the same.
    pub async fn cancel(&self, id: u64) -> Result<(), Error> {
        let (done, rx) = oneshot::channel();
        self.send(Command::Cancel {
            id,
            reply: Some(done),
        })?;
        rx.await.map_err(|_| Error::Closed)
    }

    /// `list_dbs`: the databases the server serves (always including `_Server`).
    pub async fn list_dbs(&self) -> Result<Vec<String>, Error> {
        let raw = self.ask("list_dbs", &json!([])).await?;
        serde_json::from_str(raw.get()).map_err(|e| Error::bad_reply("list_dbs", e))
    }

    /// `get_schema`: the schema of `database`, fetched once per client and cached.
    pub async fn get_schema(&self, database: &str) -> Result<Arc<DatabaseSchema>, Error> {
        if let Some(schema) = self.cached_schema(database) {
            return Ok(schema);
        }
        let raw = self.ask("get_schema", &json!([database])).await?;
        let schema = DatabaseSchema::from_json_str(raw.get())
            .map_err(|e| Error::bad_reply("get_schema", e))?;
        let schema = Arc::new(schema);
        self.lock_schemas()
            .insert(database.to_owned(), schema.clone());
        Ok(schema)
    }

    fn cached_schema(&self, database: &str) -> Option<Arc<DatabaseSchema>> {
        self.lock_schemas().get(database).cloned()
    }

    fn lock_schemas(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<DatabaseSchema>>> {
        self.inner
            .schemas
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `transact`: runs `operations` atomically on `database`.
    ///
    /// Returns one result per operation, or [`Error::Transact`] naming the failed
    /// operation (or the commit) and the server's error. If the connection drops before
    /// the reply, or this handle's timeout passes, the result is
    /// [`Error::OutcomeUnknown`]; the transaction is not re-sent.
    /// When it returns `Ok`, monitors of this client already reflect the transaction.
    pub async fn transact(
        &self,
        database: &str,
        operations: &[Operation],
    ) -> Result<Vec<OperationResult>, Error> {
        let schema = self.get_schema(database).await?;
        let pending = self.transact_request(database, operations);
        let raw = self.reply_of(pending, "transact").await?;
        let reply = TransactReply::from_str(raw.get(), operations, Some(&schema))
            .map_err(|e| Error::bad_reply("transact", e))?;
        Ok(reply.into_result()?)
    }

    /// Sends a `transact` and returns the pending raw reply, whose [`PendingRequest::id`]
    /// can be given to [`Client::cancel`] (useful for a blocking `wait`). Decode the
    /// result with [`TransactReply::from_str`].
    pub fn transact_request(&self, database: &str, operations: &[Operation]) -> PendingRequest {
        self.request_encoded(
            "transact",
            &TransactParams {
                database,
                operations,
            },
            true,
        )
    }

    /// `echo`: the server returns `params` unchanged.
    pub async fn echo(&self, params: Vec<Value>) -> Result<Vec<Value>, Error> {
        let raw = self.ask("echo", &params).await?;
        serde_json::from_str(raw.get()).map_err(|e| Error::bad_reply("echo", e))
    }

    /// `set_db_change_aware` for the current session. The client already sends
    /// `true` on each connection unless [`ClientOptions::db_change_aware`] is off.
    pub async fn set_db_change_aware(&self, aware: bool) -> Result<(), Error> {
        self.ask("set_db_change_aware", &json!([aware]))
            .await
            .map(drop)
    }

    /// `lock`: `true` if the lock was granted now; otherwise the server queues the
    /// request and later sends `locked` ([`Event::Locked`]).
    ///
    /// A session's locks end with its connection. Until [`Client::unlock`], the client
    /// asks for the lock again (`lock`, never `steal`) on every new connection, and
    /// reports [`Event::Locked`] when it holds it again: after an [`Event::Disconnected`],
    /// act as the owner only once that event has come.
    pub async fn lock(&self, lock: &str) -> Result<bool, Error> {
        self.lock_method("lock", lock).await
    }

    /// `steal`: takes the lock from its owner (which gets `stolen`); always `true`.
    pub async fn steal(&self, lock: &str) -> Result<bool, Error> {
        self.lock_method("steal", lock).await
    }

    /// `unlock`: releases the lock or drops the queued request; it is no longer asked
    /// for after reconnects.
    pub async fn unlock(&self, lock: &str) -> Result<(), Error> {
        self.lock_names().remove(lock);
        self.ask("unlock", &json!([lock])).await.map(drop)
    }

    fn lock_names(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.inner
            .locks
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn lock_method(&self, method: &str, lock: &str) -> Result<bool, Error> {
        // Recorded first: a reconnect while the request is out asks for it again.
        self.lock_names().insert(lock.to_owned());
        let raw = self.ask(method, &json!([lock])).await?;
        #[derive(serde::Deserialize)]
        struct Locked {
            locked: bool,
        }
        let reply: Locked =
            serde_json::from_str(raw.get()).map_err(|e| Error::bad_reply(method, e))?;
        Ok(reply.locked)
    }
}

/// `[database, op, op, ...]` without copying the operations into a `Vec<Value>`.
struct TransactParams<'a> {
    database: &'a str,
    operations: &'a [Operation],
}

impl serde::Serialize for TransactParams<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.operations.len() + 1))?;
        seq.serialize_element(self.database)?;
        for op in self.operations {
            seq.serialize_element(op)?;
        }
        seq.end()
    }
}

/// The reason given for a remote the first connection never got to.
const NOT_TRIED: &str = "not tried before the deadline";

/// Tries the remotes in turn (with backoff between rounds) until one is accepted or
/// [`ClientOptions::connect_timeout`] has passed; each attempt is also bounded by
/// [`ClientOptions::remote_timeout`].
async fn first_connection(driver: &mut Driver) -> Result<Conn, Error> {
    let deadline = Instant::now() + driver.options.connect_timeout;
    let mut backoff = driver.options.backoff_min;
    let remotes = &driver.options.remotes;
    let mut rejected: Vec<Rejection> = remotes
        .iter()
        .map(|remote| Rejection {
            remote: remote.to_string(),
            reason: NOT_TRIED.to_owned(),
        })
        .collect();
    let mut last_reason = String::new();
    loop {
        for _ in 0..driver.options.remotes.len() {
            let slot = driver.next_remote % driver.options.remotes.len();
            match timeout_at(deadline, driver.connect_next()).await {
                Ok(Ok(conn)) => return Ok(conn),
                Ok(Err(rejection)) => {
                    last_reason.clone_from(&rejection.reason);
                    rejected[slot] = rejection;
                }
                // Cut short by the deadline: a reason from an earlier round says more.
                Err(_) if rejected[slot].reason != NOT_TRIED => {}
                Err(_) => {
                    let reason = format!(
                        "still trying when the {:?} deadline passed",
                        driver.options.connect_timeout
                    );
                    last_reason.clone_from(&reason);
                    rejected[slot].reason = reason;
                }
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        if Instant::now() + backoff > deadline {
            let remotes: Vec<String> = driver
                .options
                .remotes
                .iter()
                .map(ToString::to_string)
                .collect();
            return Err(Error::NoServer {
                remotes: remotes.join(","),
                last_reason,
                rejected,
            });
        }
        sleep(backoff).await;
        backoff = (backoff * 2).min(driver.options.backoff_max);
    }
}

/// Gives reading back to the connection task after a caller read the socket: directly
/// if the session is free, otherwise by waking the task, which reads (and so registers
/// itself with the reactor) as soon as the current holder lets go.
fn hand_back(shared: &Shared) {
    match shared.try_lock() {
        Some(mut session) => session.hand_back(),
        None => shared.wake_driver(),
    }
}

/// Sends `command` to the connection task, counted while it waits in the queue.
fn send_command(
    commands: &mpsc::UnboundedSender<Command>,
    shared: &Shared,
    command: Command,
) -> Result<(), Error> {
    shared.queue_one();
    commands.send(command).map_err(|_| {
        shared.unqueue_one();
        Error::Closed
    })
}

/// A pending request's way to the connection: its queue (which also keeps the task
/// alive while the request is out) and the shared session.
#[derive(Debug)]
struct Link {
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
}

/// The reply to a request in flight. Resolves to the raw JSON result; dropping it before
/// it resolves cancels the request (see [`Client::cancel`]).
///
/// A request made while the connection was idle was written at once by the caller,
/// and polling it reads the socket on the caller's task: when the reply arrives the
/// reactor wakes the caller directly, not the connection task, which then would have to
/// wake the caller in turn. Whatever else arrives meanwhile (monitor updates, the
/// server's `echo`) is handled there in order, exactly as the task would. When the
/// request resolves or is dropped, reading goes back to the connection task.
#[derive(Debug)]
pub struct PendingRequest {
    id: u64,
    rx: oneshot::Receiver<Result<Box<RawValue>, Error>>,
    /// `None` when the client's task was gone before the request could be sent.
    link: Option<Link>,
    /// Written by the caller, which reads its reply too.
    inline: bool,
    /// This request's task is the one the reactor wakes for the socket.
    reading: bool,
    done: bool,
}

impl PendingRequest {
    /// A request refused before it was sent: resolves to `error` at once.
    fn failed(error: Error) -> PendingRequest {
        let (reply, rx) = oneshot::channel();
        let _ = reply.send(Err(error));
        PendingRequest {
            id: 0,
            rx,
            link: None,
            inline: false,
            reading: false,
            done: false,
        }
    }

    /// The JSON-RPC id of the request.
    pub fn id(&self) -> u64 {
        self.id
    }

    fn finish(
        &mut self,
        outcome: Result<Result<Box<RawValue>, Error>, oneshot::error::RecvError>,
    ) -> Poll<Result<Box<RawValue>, Error>> {
        self.done = true;
        self.stop_reading();
        Poll::Ready(outcome.unwrap_or(Err(Error::Closed)))
    }

    fn stop_reading(&mut self) {
        if std::mem::take(&mut self.reading) {
            if let Some(link) = &self.link {
                hand_back(&link.shared);
            }
        }
    }
}

impl Future for PendingRequest {
    type Output = Result<Box<RawValue>, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(link) = &this.link else {
            // Refused before it was sent, or the client's task was already gone.
            this.done = true;
            return Poll::Ready(this.rx.try_recv().unwrap_or(Err(Error::Closed)));
        };
        if !this.inline {
            return match Pin::new(&mut this.rx).poll(cx) {
                Poll::Ready(outcome) => this.finish(outcome),
                Poll::Pending => Poll::Pending,
            };
        }
        let Some(mut session) = link.shared.try_lock() else {
            // Someone holds the session. The connection task is woken to read once it is
            // free (the holder may not be reading, and the reactor's wake-up this poll
            // may have been the one for our reply); the reply comes through the channel.
            link.shared.wake_driver();
            return match Pin::new(&mut this.rx).poll(cx) {
                Poll::Ready(outcome) => this.finish(outcome),
                Poll::Pending => Poll::Pending,
            };
        };
        // If this task reads its own reply below, handing it over through the channel
        // must not wake this very task: that wake-up would cost the runtime one more
        // turn (and a zero-timeout `epoll_wait`) per request. So the channel holds a
        // no-op waker while we read, and this task's waker again before we return
        // `Pending`. Whoever else delivers the reply meanwhile is seen by the last poll.
        let mut quiet = Context::from_waker(Waker::noop());
        let mut outcome = Pin::new(&mut this.rx).poll(&mut quiet);
        if outcome.is_pending() {
            session.poll_inline(cx, Some(this.id));
            this.reading = true;
            outcome = Pin::new(&mut this.rx).poll(cx);
        }
        match outcome {
            Poll::Ready(outcome) => {
                this.done = true;
                if std::mem::take(&mut this.reading) {
                    session.hand_back();
                }
                Poll::Ready(outcome.unwrap_or(Err(Error::Closed)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for PendingRequest {
    fn drop(&mut self) {
        self.stop_reading();
        if !self.done {
            if let Some(link) = &self.link {
                let _ = send_command(
                    &link.commands,
                    &link.shared,
                    Command::Cancel {
                        id: self.id,
                        reply: None,
                    },
                );
            }
        }
    }
}
