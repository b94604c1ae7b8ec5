//! The networked OVSDB client (tokio): unix, TCP and TLS remotes (active, or passive
//! where the server connects to us), a list of remotes,
//! request multiplexing, monitors feeding the replica [`crate::cache`], locks, echo
//! probes and reconnection to the leader of a cluster.
//!
//! # Model
//!
//! A [`Client`] is a cheap, cloneable handle. One background task owns the connection's
//! life: it connects, writes queued requests (numbered with integer ids, many in flight
//! at once), routes replies back to the callers, answers the server's `echo` probes,
//! sends its own when the server has been silent for [`ClientOptions::probe_interval`],
//! and applies monitor updates to their caches **before** it delivers any later reply.
//! Because ovsdb-server sends the updates caused by a transaction before the
//! transaction's reply, a [`Client::transact`] that returns `Ok` has already been
//! reflected in every cache monitoring the touched tables.
//!
//! # I/O
//!
//! Callers encode their request to bytes on their own task. A request made while the
//! connection is idle (up, nothing in flight, nothing queued ahead of it) is written by
//! its caller, and the caller's task reads the socket until its reply arrives, handling
//! whatever comes first (monitor updates, the server's `echo`) exactly as the connection
//! task would, then hands reading back to that task. A sequential caller thus costs one
//! task wake-up per round trip instead of three (caller to connection task, reactor to
//! connection task, connection task to caller). Otherwise the connection task copies the
//! bytes into its outgoing buffer and writes that buffer *beside* reading (a server that
//! waits for us to read its replies before reading more requests must not deadlock a
//! pipeline of large transactions). Requests and notifications leave in the order they
//! were made either way. The socket is registered with the reactor for readability;
//! requests are written through a second handle, registered for writability while a
//! write would block and, for requests written by their caller, to be woken when the
//! server reads them (which on small VMs keeps the client's vCPU awake until the reply;
//! see `plain.rs`). The inactivity probe uses one timer per connection, re-armed when
//! it fires rather than on every message. TLS connections (`ssl:`, `pssl:`, see
//! [`TlsConfig`]) go through tokio-rustls instead, which registers both directions with
//! the reactor; a write there ends with a flush of the records rustls still holds.
//! Passive remotes (`punix:`, `ptcp:`, `pssl:`) bind their listener on first use and
//! keep it for the client's life, so a server reconnecting finds it.
//!
//! # Reconnection and clusters
//!
//! When the connection drops, or the server stops qualifying (see
//! [`ClientOptions::database`]: leader, connected, current Raft index), the task moves to
//! the next remote with exponential backoff, re-runs the `_Server` check and resumes
//! every monitor with `monitor_cond_since` from the last transaction id it saw. A
//! clustered server answers `found=true` and sends only what changed; a standalone
//! server always answers `found=false` with a zero id, and the cache is rebuilt from the
//! full initial contents.
//!
//! A request written on a connection that then dropped is **never re-sent**: a
//! `transact` fails with [`Error::OutcomeUnknown`], anything else with
//! [`Error::ConnectionLost`]. Requests issued while disconnected wait for the next
//! connection. Dropping a pending request's future, canceling it, or its timeout passing
//! ([`Client::with_request_timeout`]) forgets it and sends the server a `cancel`
//! notification. A read-only request then fails with [`Error::Canceled`] (or
//! [`Error::TimedOut`]); a `transact` with [`Error::OutcomeUnknown`], because
//! ovsdb-server cancels only a transaction still blocked in `wait` and may already have
//! committed it: settle it by reading the database back (the replica of a monitor, or a
//! `select`) before retrying.
//!
//! Locks taken with [`Client::lock`] or [`Client::steal`] belong to a connection; after a
//! reconnect the client asks for each again and reports [`Event::Locked`] once it holds
//! it.

mod conn;
mod dispatch;
mod driver;
mod error;
mod handle;
mod monitor;
mod monitor_handle;
mod oneshot;
mod plain;
mod remote;
mod server;
mod session;
mod setup;
mod tls;
mod tls_v1;
mod transport;

use std::time::Duration;

pub use error::{Error, GaveUp, Rejection};
pub use handle::{Client, PendingRequest};
pub use monitor::{MonitorMethod, MonitorRequest};
pub use monitor_handle::Monitor;
pub use oneshot::{connect_cluster, ClusterOptions, Deadline, OneshotConnection, OneshotError};
pub use remote::{InvalidRemote, Remote};
pub use server::Seen;
pub use tls::{TlsConfig, TlsError, TlsFile};

/// How a [`Client`] connects and behaves; build with [`ClientOptions::new`] and its
/// `with_*` methods, then [`Client::connect_with`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Servers to use, tried in order; the client stays on one until it fails.
    pub remotes: Vec<Remote>,
    /// The database whose `_Server.Database` row decides whether a server is usable
    /// (leader, connected, schema present, Raft index not going backwards). `None`
    /// accepts any server that answers. The typed clients (`NbClient`, `SbClient`,
    /// `VsClient`) set their own database here unless it is set already.
    pub database: Option<String>,
    /// Use only the cluster leader (the default). `false` allows followers, which serve
    /// reads and monitors locally but forward every write to the leader (slow under load).
    pub leader_only: bool,
    /// Send `set_db_change_aware(true)` on each connection (the default), so that
    /// canceled requests are answered and schema conversions do not drop the session.
    pub db_change_aware: bool,
    /// Send an `echo` after this much silence from the server, and reconnect if that is
    /// not answered within the same time. `None` disables probing.
    pub probe_interval: Option<Duration>,
    /// First delay between rounds of reconnection attempts; doubles up to `backoff_max`.
    pub backoff_min: Duration,
    /// Largest delay between rounds of reconnection attempts.
    pub backoff_max: Duration,
    /// Deadline for [`Client::connect_with`] to find a usable server, over every remote
    /// and round of backoff; it then fails with [`Error::NoServer`]. (Once connected, the
    /// client keeps reconnecting without a deadline.)
    pub connect_timeout: Duration,
    /// Bound on one attempt at one remote: connecting the socket, the `_Server` check and
    /// resuming monitors there. A remote that does not answer is left for the next one
    /// after this long, at connect time and when reconnecting.
    pub remote_timeout: Duration,
    /// Largest message accepted from the server.
    pub max_message_len: usize,
    /// Private key, certificate and CA certificate for `ssl:` and `pssl:` remotes.
    pub tls: Option<TlsConfig>,
}

impl ClientOptions {
    /// Options for a list of remotes (`unix:PATH`, `tcp:HOST:PORT`, `ssl:HOST:PORT`,
    /// `punix:PATH`, `ptcp:PORT[:IP]`, `pssl:PORT[:IP]`) with the defaults:
    /// leader only, db-change-aware, 5 s probes, backoff 100 ms..5 s, 5 s to connect,
    /// 5 s per remote, 64 MiB messages.
    pub fn new<S: AsRef<str>>(remotes: impl IntoIterator<Item = S>) -> Result<Self, InvalidRemote> {
        let mut parsed = Vec::new();
        for remote in remotes {
            parsed.extend(Remote::parse_list(remote.as_ref())?);
        }
        if parsed.is_empty() {
            return Err(InvalidRemote {
                remote: String::new(),
                reason: "no remote given",
            });
        }
        Ok(ClientOptions {
            remotes: parsed,
            database: None,
            leader_only: true,
            db_change_aware: true,
            probe_interval: Some(Duration::from_secs(5)),
            backoff_min: Duration::from_millis(100),
            backoff_max: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            remote_timeout: Duration::from_secs(5),
            max_message_len: crate::codec::DEFAULT_MAX_MESSAGE_LEN,
            tls: None,
        })
    }

    /// Checks servers through `_Server.Database` for `database`.
    pub fn with_database(mut self, database: impl Into<String>) -> Self {
        self.database = Some(database.into());
        self
    }

    /// Allows (`false`) or forbids (`true`, default) cluster followers.
    pub fn with_leader_only(mut self, leader_only: bool) -> Self {
        self.leader_only = leader_only;
        self
    }

    /// Whether to declare db-change-awareness on each connection.
    pub fn with_db_change_aware(mut self, aware: bool) -> Self {
        self.db_change_aware = aware;
        self
    }

    /// Sets or disables the inactivity probe.
    pub fn with_probe_interval(mut self, interval: Option<Duration>) -> Self {
        self.probe_interval = interval;
        self
    }

    /// Sets the reconnection backoff range.
    pub fn with_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff_min = min;
        self.backoff_max = max.max(min);
        self
    }

    /// Sets the deadline for the first connection over all remotes
    /// ([`ClientOptions::connect_timeout`]).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the bound on one attempt at one remote ([`ClientOptions::remote_timeout`]).
    pub fn with_remote_timeout(mut self, timeout: Duration) -> Self {
        self.remote_timeout = timeout;
        self
    }

    /// Authenticates `ssl:` and `pssl:` remotes with these files (as `ovn-nbctl -p -c
    /// -C`); see [`TlsConfig`] for what is verified.
    pub fn with_tls(mut self, tls: TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Sets the largest accepted message.
    pub fn with_max_message_len(mut self, len: usize) -> Self {
        self.max_message_len = len;
        self
    }
}

/// Something that happened on the session, for observers ([`Client::events`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A connection was set up and accepted (monitors already resumed).
    Connected {
        /// The remote, e.g. `tcp:127.0.0.1:6641`.
        remote: String,
    },
    /// The connection was lost or abandoned; the client reconnects.
    Disconnected {
        /// The remote.
        remote: String,
        /// Why.
        reason: String,
    },
    /// The server granted a lock we had been waiting for (`locked` notification).
    Locked {
        /// The lock's name.
        lock: String,
    },
    /// Another session stole a lock we held (`stolen` notification).
    Stolen {
        /// The lock's name.
        lock: String,
    },
    /// A monitor's replica was reloaded from scratch because an update did not apply to
    /// it (it had diverged from the server, e.g. an update named a row it never had):
    /// the replica now holds the server's full contents. Anything derived from the
    /// replica incrementally should be rebuilt.
    Resynced {
        /// The monitor id.
        monitor: String,
        /// What did not apply.
        reason: String,
    },
    /// The server canceled a monitor (`monitor_canceled`, e.g. its database was removed).
    MonitorCanceled {
        /// The monitor id.
        monitor: String,
    },
}
