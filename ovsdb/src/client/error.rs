//! The client's error type.

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
    /// No remote was usable (refused, not leader, not connected, stale, ...).
    #[error("no usable ovsdb server among {remotes}: {last_reason}")]
    NoServer {
        /// The remotes tried, comma-separated.
        remotes: String,
        /// Why the last attempt was rejected.
        last_reason: String,
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
    /// The connection dropped after a `transact` was written but before its reply: the
    /// transaction may or may not have committed. It is never replayed automatically;
    /// the caller decides (for example, by reading the database back).
    #[error("connection to {remote} lost after sending a transaction: its outcome is unknown")]
    OutcomeUnknown {
        /// The server it was sent to.
        remote: String,
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
    /// The request was canceled by the caller.
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
            Error::ConnectionLost { .. } | Error::OutcomeUnknown { .. } | Error::Closed
        )
    }
}
