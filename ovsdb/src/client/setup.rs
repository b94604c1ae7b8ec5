//! Reconnection and session set-up: trying the remotes in turn with backoff, and on a
//! fresh connection db-change-awareness, the `_Server` check and resuming monitors.

use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::time::sleep;
use tracing::{debug, info};

use super::conn::{Conn, Ended};
use super::driver::Driver;
use super::error::{Error, Rejection};
use super::server::{self, ServerWatch};
use super::Event;
use crate::rpc::{params_to_raw, Message};

impl Driver {
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
                    Err(rejection) => debug!(%rejection, "ovsdb remote rejected"),
                }
            }
            sleep(backoff).await;
            backoff = (backoff * 2).min(self.options.backoff_max);
        }
    }

    /// Connects to the next remote, checks it and resumes monitors on it, all within
    /// [`ClientOptions::remote_timeout`](super::ClientOptions::remote_timeout).
    pub async fn connect_next(&mut self) -> Result<Conn, Rejection> {
        let remote = self.options.remotes[self.next_remote % self.options.remotes.len()].clone();
        self.next_remote = (self.next_remote + 1) % self.options.remotes.len();
        let rejected = |reason: String| Rejection {
            remote: remote.to_string(),
            reason,
        };
        let timeout = self.options.remote_timeout;
        let mut conn = Conn::open(
            &mut self.connector,
            &remote,
            self.options.max_message_len,
            timeout,
        )
        .await
        .map_err(rejected)?;
        let later = match tokio::time::timeout(timeout, self.set_up(&mut conn)).await {
            Ok(Ok(later)) => later,
            // The server check says why in its own words; the remote is named once, by
            // the rejection.
            Ok(Err(Error::NoServer { last_reason, .. })) => return Err(rejected(last_reason)),
            Ok(Err(e)) => return Err(rejected(e.to_string())),
            Err(_) => {
                return Err(rejected(format!(
                    "setting up the session took longer than {timeout:?}"
                )))
            }
        };
        // Stay on this remote next time unless it fails.
        self.next_remote =
            (self.next_remote + self.options.remotes.len() - 1) % self.options.remotes.len();
        info!(%remote, "ovsdb connected");
        self.set_current(Some(remote.to_string()));
        let events = self.events();
        let _ = events.send(Event::Connected {
            remote: remote.to_string(),
        });
        for event in later {
            let _ = events.send(event);
        }
        Ok(conn)
    }

    /// Session set-up on a fresh connection (not yet published, so every request
    /// waits in the queue meanwhile): db-change-awareness, the `_Server` check, then
    /// the locks the handles hold or wait for, then every registered monitor (resumed
    /// from its last transaction id). Returns the events to report once connected
    /// (locks granted again, monitors reloaded from scratch).
    async fn set_up(&mut self, conn: &mut Conn) -> Result<Vec<Event>, Error> {
        let mut later = Vec::new();
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
                &mut core.seen,
            )
            .map_err(|reason| Error::NoServer {
                remotes: conn.remote.to_string(),
                last_reason: reason,
                rejected: Vec::new(),
            })?;
        }
        let locks: Vec<String> = {
            let locks = self.locks.lock();
            locks
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned()
                .collect()
        };
        for lock in locks {
            // Not granted now: the server queues it and sends `locked` later.
            let reply = self.call_inline(conn, "lock", &[&lock]).await?;
            let granted: Value =
                serde_json::from_str(reply.get()).map_err(|e| Error::bad_reply("lock", e))?;
            if granted.get("locked") == Some(&Value::Bool(true)) {
                later.push(Event::Locked { lock });
            }
        }
        let monitors = self.shared.lock().core.monitors.clone();
        for monitor in monitors.keys() {
            let (method, params) = monitors.start_request(monitor);
            let reply = self.call_inline(conn, method, &params).await?;
            let mut started = monitors.on_start_reply(monitor, &reply)?;
            if started.diverged {
                // The delta did not apply: reload from scratch (the transaction id is
                // forgotten, so this start asks for the full contents).
                if let Some(id) = monitors.current_id(monitor) {
                    self.call_inline(conn, "monitor_cancel", &[id]).await?;
                }
                let (method, params) = monitors.start_request(monitor);
                let reply = self.call_inline(conn, method, &params).await?;
                started = monitors.on_start_reply(monitor, &reply)?;
            }
            if let Some((monitor, reason)) = started.resynced {
                later.push(Event::Resynced { monitor, reason });
            }
        }
        Ok(later)
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
                rejected: Vec::new(),
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
}
