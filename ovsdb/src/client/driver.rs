//! The client's background task: owns the connection, multiplexes requests by id,
//! answers the server's `echo`, sends our own inactivity probes, feeds monitors, and
//! reconnects (with backoff, to the next remote) when the connection or the server's
//! suitability is lost.

use std::borrow::Cow;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::{sleep, sleep_until, Instant, Sleep};
use tracing::{debug, info, warn};

use super::conn::{Conn, Ended, Pending};
use super::error::Error;
use super::monitor::Monitors;
use super::server::{self, ServerWatch, SERVER_MONITOR_ID};
use super::{ClientOptions, Event};
use crate::rpc::{params_to_raw, Message, RpcError};

/// A request from a client handle to the background task.
#[derive(Debug)]
pub(crate) enum Command {
    Call {
        id: u64,
        method: Cow<'static, str>,
        /// The whole request, already encoded by the caller.
        frame: Vec<u8>,
        transact: bool,
        reply: oneshot::Sender<Result<Box<RawValue>, Error>>,
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

#[derive(Debug)]
pub(crate) struct Driver {
    pub options: Arc<ClientOptions>,
    pub commands: mpsc::UnboundedReceiver<Command>,
    pub ids: Arc<AtomicU64>,
    pub events: broadcast::Sender<Event>,
    pub monitors: Monitors,
    pub server: ServerWatch,
    /// Highest Raft index seen for the checked database (never go back in time).
    pub min_index: i64,
    /// Index into `options.remotes` of the remote to try next.
    pub next_remote: usize,
    /// The remote of the live connection, shared with the handles.
    pub current: Arc<std::sync::Mutex<Option<String>>>,
}

impl Driver {
    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Runs until every client handle is dropped.
    pub async fn run(mut self, first: Conn) {
        let mut conn = Some(first);
        loop {
            let mut current = match conn.take() {
                Some(c) => c,
                None => match self.reconnect().await {
                    Some(c) => c,
                    None => return,
                },
            };
            let ended = self.serve(&mut current).await;
            current.fail_pending();
            self.set_current(None);
            match ended {
                Ended::Shutdown => return,
                Ended::Lost(reason) => {
                    warn!(remote = %current.remote, %reason, "ovsdb connection lost");
                    let _ = self.events.send(Event::Disconnected {
                        remote: current.remote.to_string(),
                        reason,
                    });
                }
            }
        }
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
        let _ = self.events.send(Event::Connected {
            remote: remote.to_string(),
        });
        Ok(conn)
    }

    /// Session set-up on a fresh connection: db-change-awareness, the `_Server` check,
    /// then every registered monitor (resumed from its last transaction id).
    async fn set_up(&mut self, conn: &mut Conn) -> Result<(), Error> {
        if self.options.db_change_aware {
            self.call_inline(conn, "set_db_change_aware", &json!([true]))
                .await?;
        }
        if let Some(database) = self.options.database.clone() {
            self.server = ServerWatch::default();
            let reply = self
                .call_inline(conn, "monitor", &server::monitor_params())
                .await?;
            let updates: Value =
                serde_json::from_str(reply.get()).map_err(|e| Error::bad_reply("monitor", e))?;
            self.server
                .apply(&updates)
                .map_err(|e| Error::bad_reply("monitor", e))?;
            server::check_server(
                self.server.row(&database),
                &database,
                self.options.leader_only,
                &mut self.min_index,
            )
            .map_err(|reason| Error::NoServer {
                remotes: conn.remote.to_string(),
                last_reason: reason,
            })?;
        }
        for monitor in self.monitors.keys() {
            let (method, params) = self.monitors.start_request(monitor);
            let reply = self.call_inline(conn, method, &params).await?;
            self.monitors.on_start_reply(monitor, &reply)?;
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
                    self.dispatch(conn, other).await.map_err(lost)?;
                    if !conn.out.is_empty() {
                        conn.flush().await.map_err(lost)?;
                    }
                }
            }
        }
    }

    /// Serves one connection until it ends.
    async fn serve(&mut self, conn: &mut Conn) -> Ended {
        // One timer per connection, re-armed only when it fires: traffic only ever moves
        // the probe deadline later, so resetting a timer on every message (a timer-wheel
        // update per request) is not needed. No probing, no timer at all.
        let mut probe_timer = self
            .options
            .probe_interval
            .map(|_| Box::pin(sleep_until(self.probe_deadline(conn))));
        loop {
            let step = tokio::select! {
                biased;
                next = conn.reader.next() => match conn.received(next) {
                    Ok(message) => self.dispatch(conn, message).await,
                    Err(ended) => Err(ended),
                },
                // Writing goes on beside reading, never instead of it.
                written = conn.out.drain(), if !conn.out.is_empty() => {
                    written.map_err(|e| conn.write_failed(e))
                }
                command = self.commands.recv() => match command {
                    Some(command) => self.commands_batch(conn, command).await,
                    None => Err(Ended::Shutdown),
                },
                () = fired(&mut probe_timer) => {
                    let step = if Instant::now() >= self.probe_deadline(conn) {
                        self.probe(conn).await
                    } else {
                        Ok(())
                    };
                    if let Some(timer) = &mut probe_timer {
                        timer.as_mut().reset(self.probe_deadline(conn));
                    }
                    step
                }
            };
            if let Err(ended) = step {
                return ended;
            }
        }
    }

    /// Handles `first` and every command already queued, then flushes once, so that
    /// pipelined requests leave in few writes.
    async fn commands_batch(&mut self, conn: &mut Conn, first: Command) -> Result<(), Ended> {
        self.command(conn, first).await?;
        let mut budget = 256;
        while budget > 0 {
            match self.commands.try_recv() {
                Ok(command) => self.command(conn, command).await?,
                Err(_) => break,
            }
            budget -= 1;
        }
        // The queued requests are written by `serve`'s write branch.
        Ok(())
    }

    async fn command(&mut self, conn: &mut Conn, command: Command) -> Result<(), Ended> {
        match command {
            Command::Call {
                id,
                method,
                frame,
                transact,
                reply,
            } => {
                if reply.is_closed() {
                    // Dropped before it was sent: nothing to send, nothing to cancel.
                    return Ok(());
                }
                conn.pending.insert(
                    id,
                    Pending::User {
                        method,
                        transact,
                        reply,
                    },
                );
                conn.feed_encoded(&frame);
                Ok(())
            }
            Command::Notify { method, params } => {
                conn.feed(&Message::Notification { method, params });
                Ok(())
            }
            Command::Cancel { id, reply } => self.cancel(conn, id, reply).await,
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

    async fn cancel(
        &mut self,
        conn: &mut Conn,
        id: u64,
        done: Option<oneshot::Sender<()>>,
    ) -> Result<(), Ended> {
        if let Some(Pending::User { reply, .. }) = conn.pending.remove(&id) {
            let _ = reply.send(Err(Error::Canceled { id }));
            // Only a session that set db-change-awareness gets a reply ("canceled") to
            // the canceled request; we have forgotten the id either way.
            conn.feed(&Message::notification("cancel", vec![json!(id)]));
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
        Ok(())
    }

    /// Routes one incoming message.
    async fn dispatch(&mut self, conn: &mut Conn, message: Message) -> Result<(), Ended> {
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
            Pending::User { method, reply, .. } => {
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
    async fn probe(&mut self, conn: &mut Conn) -> Result<(), Ended> {
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

/// Completes when the probe timer fires; never when there is none.
async fn fired(timer: &mut Option<Pin<Box<Sleep>>>) {
    match timer {
        Some(timer) => timer.as_mut().await,
        None => std::future::pending().await,
    }
}
