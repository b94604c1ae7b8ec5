//! The client's error type.

use std::time::Duration;

use crate::operation::TransactError;
use crate::rpc::RpcError;

use super::remote::InvalidRemote;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A remote string could not be parsed.
    #[error(transparent)]
    InvalidRemote(#[from] InvalidRemote),
    /// No remote was usable (refused, not leader, not connected, stale, ...) before the
    /// deadline. Each remote's own latest reason is in `rejected`.
    #[error(
        "no usable ovsdb server among {remotes}: {}",
        Rejection::list(rejected)
    )]
    NoServer {
        /// The remotes tried, comma-separated.
        remotes: String,
        /// Why the last attempt was rejected.
        last_reason: String,
        /// Why each remote was last rejected, in the order of the remotes.
        rejected: Vec<Rejection>,
    },
    /// The connection dropped before the reply to a read-only or session request came.
    /// Nothing is retried automatically.
    #[error("connection to {remote} lost before the reply to {method:?}")]
    ConnectionLost {
        /// The request's method.
        method: String,
        /// The server it was sent to.
        remote: String,
    },
    /// A `transact` was written but its reply will never be seen: the connection dropped,
    /// the caller canceled it (or dropped its future), or its timeout passed. The
    /// transaction may or may not have committed: ovsdb-server cancels only transactions
    /// still blocked in a `wait`, and may have committed this one before the `cancel`
    /// arrived. It is never replayed automatically; the caller settles it by reading the
    /// database back (through a monitor's replica, which shows every committed
    /// transaction once the connection is up again, or with a `select`) and retrying only
    /// what is missing.
    #[error("transaction sent to {remote} was given up ({why}): its outcome is unknown")]
    OutcomeUnknown {
        /// The server it was sent to.
        remote: String,
        /// Why its reply will never be seen.
        why: GaveUp,
    },
    /// A request other than `transact` got no reply within its timeout
    /// ([`Client::with_request_timeout`](super::Client::with_request_timeout)).
    #[error("no reply to {method:?} within {after:?}")]
    TimedOut {
        /// The request's method.
        method: String,
        /// The timeout that passed.
        after: Duration,
    },
    /// A monitor was requested through [`Client::request`](super::Client::request): its
    /// updates would have nowhere to go. Use [`Client::monitor`](super::Client::monitor)
    /// or [`Client::monitor_with`](super::Client::monitor_with), which keep a replica and
    /// resume it after reconnects.
    #[error(
        "{method:?} must go through Client::monitor or Client::monitor_with, not Client::request"
    )]
    UseMonitorApi {
        /// The refused method.
        method: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("ovsdb server rejected {method:?}: {error}")]
    Rpc {
        /// The request's method.
        method: String,
        /// The error as sent.
        #[source]
        error: RpcError,
    },
    /// The transaction reached the server and failed there (an operation or the commit).
    #[error(transparent)]
    Transact(#[from] TransactError),
    /// The request (not a `transact`, see [`Error::OutcomeUnknown`]) was canceled by the
    /// caller.
    #[error("request {id} was canceled")]
    Canceled {
        /// The request id.
        id: u64,
    },
    /// A reply did not have the shape its method promises.
    #[error("malformed reply to {method:?}: {reason}")]
    BadReply {
        /// The request's method.
        method: String,
        /// What was wrong.
        reason: String,
    },
    /// The monitor was canceled by the server (`monitor_canceled`, e.g. the database
    /// was removed) or by the caller.
    #[error("monitor {monitor} is no longer active")]
    MonitorGone {
        /// The monitor id.
        monitor: String,
    },
    /// The client's background task has stopped.
    #[error("the ovsdb client has shut down")]
    Closed,
}

/// Why the reply to a `transact` will never be seen ([`Error::OutcomeUnknown`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GaveUp {
    /// The connection dropped.
    ConnectionLost,
    /// The caller canceled the request or dropped its future.
    Canceled,
    /// Its timeout passed.
    TimedOut(Duration),
}

impl std::fmt::Display for GaveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GaveUp::ConnectionLost => f.write_str("connection lost"),
            GaveUp::Canceled => f.write_str("canceled"),
            GaveUp::TimedOut(after) => write!(f, "no reply within {after:?}"),
        }
    }
}

/// Why one remote was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rejection {
    /// The remote, e.g. `tcp:127.0.0.1:6641`.
    pub remote: String,
    /// Why it was not used (without the remote's name).
    pub reason: String,
}

impl Rejection {
    fn list(rejected: &[Rejection]) -> String {
        let parts: Vec<String> = rejected.iter().map(ToString::to_string).collect();
        parts.join("; ")
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.remote, self.reason)
    }
}

impl Error {
    pub(crate) fn bad_reply(method: &str, reason: impl ToString) -> Self {
        Error::BadReply {
            method: method.to_owned(),
            reason: reason.to_string(),
        }
    }

    /// True when the failure says nothing about the database itself: the connection
    /// dropped (outcome unknown or not), or the client stopped.
    pub fn is_connection_error(&self) -> bool {
        matches!(
            self,
            Error::ConnectionLost { .. }
                | Error::OutcomeUnknown { .. }
                | Error::TimedOut { .. }
                | Error::Closed
        )
    }
}
