//! Errors of the `Open_vSwitch` operations.

use ovsdb::typed::{DbError, DecodeError};
use ovsdb::{ClientError, Uuid};

/// Why an `Open_vSwitch` operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VsError {
    /// The row to create exists (and `may_exist` was not set), or another client
    /// created a bridge or port of that name after the replica was read (the
    /// commit failed then, and nothing was committed).
    #[error("{table} {name:?} already exists")]
    AlreadyExists {
        /// Table.
        table: &'static str,
        /// Name.
        name: String,
    },
    /// The row to use or delete does not exist (and `if_exists` was not set).
    #[error("{table} {name:?} not found")]
    NotFound {
        /// Table.
        table: &'static str,
        /// Name.
        name: String,
    },
    /// The port exists on another bridge.
    #[error("port {port:?} exists on another bridge than {wanted:?}")]
    WrongBridge {
        /// Port.
        port: String,
        /// Bridge asked for.
        wanted: String,
    },
    /// A row the transaction writes to (a bridge a port is added to, ...) was
    /// deleted by another client after the replica showed it: the transaction
    /// failed and nothing was committed.
    #[error(
        "{table} {}{uuid} was deleted before the transaction committed; nothing was committed",
        name.as_ref().map(|n| format!("{n:?} ")).unwrap_or_default()
    )]
    RowGone {
        /// Table.
        table: &'static str,
        /// The row.
        uuid: Uuid,
        /// Its name, if it has one and the transaction was built from a replica showing it.
        name: Option<String>,
    },
    /// A replicated row does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The database call failed (schema, validation, connection, server).
    #[error(transparent)]
    Db(DbError),
}

impl VsError {
    /// Whether the connection dropped after the transaction was sent, so it may or
    /// may not have committed: read the database back before retrying.
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, VsError::Db(db) if db.is_outcome_unknown())
    }
}

impl From<DbError> for VsError {
    /// A failed existence guard becomes [`VsError::RowGone`]; the rest is [`VsError::Db`].
    fn from(error: DbError) -> Self {
        match error {
            DbError::RowGone { table, uuid, .. } => VsError::RowGone {
                table,
                uuid,
                name: None,
            },
            other => VsError::Db(other),
        }
    }
}

impl From<ClientError> for VsError {
    fn from(error: ClientError) -> Self {
        VsError::Db(DbError::Client(error))
    }
}
