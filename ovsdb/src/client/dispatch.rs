//! Request dispatch: the session state every incoming message may touch, how commands
//! from the handles go on the wire, and how replies, notifications and the server's
//! requests are routed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::sync::{broadcast, oneshot};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::conn::{Conn, Ended, Pending, UserCall};
use super::driver::Command;
use super::error::{Error, GaveUp};
use super::monitor::{Monitors, Started};
use super::server::{self, ServerWatch, SERVER_MONITOR_ID};
use super::{ClientOptions, Event};
use crate::rpc::{params_to_raw, Message, RpcError};

/// The session state every incoming message may touch.
#[derive(Debug)]
pub(crate) struct Core {
    pub options: Arc<ClientOptions>,
    pub ids: Arc<AtomicU64>,
    pub events: broadcast::Sender<Event>,
    pub monitors: Monitors,
    pub server: ServerWatch,
    /// Highest Raft index seen for the checked database (never go back in time).
    pub seen: server::Seen,
}

impl Core {
    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    pub(super) fn command(&mut self, conn: &mut Conn, command: Command) -> Result<(), Ended> {
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
        if let Some(Pending::User(UserCall {
            reply, transact, ..
        })) = conn.pending.remove(&id)
        {
            // The server cancels only a transaction blocked in `wait`; any other may have
            // committed already.
            let error = if transact {
                Error::OutcomeUnknown {
                    remote: conn.remote.to_string(),
                    why: GaveUp::Canceled,
                }
            } else {
                Error::Canceled { id }
            };
            let _ = reply.send(Err(error));
            // Only a session that set db-change-awareness gets a reply ("canceled") to
            // the canceled request; we have forgotten the id either way.
            conn.feed(&Message::notification("cancel", vec![json!(id)]));
        }
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    /// Routes one incoming message.
    pub(super) fn dispatch(&mut self, conn: &mut Conn, message: Message) -> Result<(), Ended> {
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
                let applied = match applied {
                    Ok(started) => {
                        self.after_start(conn, monitor, started);
                        Ok(())
                    }
                    Err(error) => {
                        if reply.is_none() {
                            // A reload nobody awaits failed: the monitor stops, loudly.
                            warn!(%error, "reloading a monitor failed; it is stopped");
                            if let Some(id) = self.monitors.current_id(monitor) {
                                let _ = self.events.send(Event::MonitorCanceled { monitor: id });
                            }
                        }
                        self.monitors.forget(monitor);
                        Err(error)
                    }
                };
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
            "update2" | "update3" => match self.monitors.on_update(method, params) {
                Ok(None) => Ok(()),
                Ok(Some(diverged)) => {
                    self.restart_monitor(conn, diverged);
                    Ok(())
                }
                // Undecodable: the session cannot be trusted. The monitor's transaction
                // id is forgotten, so the next connection reloads it from scratch.
                Err(error) => Err(Ended::Lost(format!(
                    "decoding {method} from {}: {error}",
                    conn.remote
                ))),
            },
            "update" => {
                // `monitor` (v1) is only used for `_Server`; requests for it through
                // `Client::request` are refused, so this is a stray we can ignore.
                debug!("ignoring an update notification for an unknown monitor");
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

    /// Tells subscribers about a finished resync, or starts one if the reply diverged.
    pub(super) fn after_start(&mut self, conn: &mut Conn, monitor: u64, started: Started) {
        if let Some((monitor, reason)) = started.resynced {
            let _ = self.events.send(Event::Resynced { monitor, reason });
        }
        if started.diverged {
            self.restart_monitor(conn, monitor);
        }
    }

    /// Reloads a monitor whose replica diverged, on the same connection: cancels it and
    /// starts it again without a transaction id, so the server sends the full contents
    /// (`found=false`), which replace the replica. Requests in flight are not disturbed.
    fn restart_monitor(&mut self, conn: &mut Conn, monitor: u64) {
        let Some(monitor_id) = self.monitors.current_id(monitor) else {
            return;
        };
        let id = self.next_id();
        conn.pending.insert(id, Pending::Ignore);
        conn.feed(&Message::request(
            id,
            "monitor_cancel",
            vec![json!(monitor_id)],
        ));
        // The server handles requests in order: the id is free again when this arrives.
        let (method, params) = self.monitors.start_request(monitor);
        let id = self.next_id();
        conn.pending.insert(
            id,
            Pending::MonitorStart {
                monitor,
                reply: None,
            },
        );
        conn.feed(&Message::Request {
            id: json!(id),
            method: method.to_owned(),
            params: params_to_raw(&params),
        });
    }

    /// `_Server.Database` changed: drop the connection if the server no longer qualifies
    /// (lost leadership or its majority).
    fn on_server_update(&mut self, params: &RawValue) -> Result<(), Ended> {
        let (_, updates): (Value, Value) = serde_json::from_str(params.get())
            .map_err(|e| Ended::Lost(format!("bad _Server update: {e}")))?;
        self.server.apply(&updates).map_err(Ended::Lost)?;
        if let Some(database) = &self.options.database {
            let row = self.server.row(database);
            server::check_server(row, database, self.options.leader_only, &mut self.seen)
                .map_err(Ended::Lost)?;
        }
        Ok(())
    }

    /// When to probe (or give up on an unanswered probe); far away when probing is off.
    pub(super) fn probe_deadline(&self, conn: &Conn) -> Instant {
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
    pub(super) fn probe(&mut self, conn: &mut Conn) -> Result<(), Ended> {
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
