//! Errors of the northbound operations.

use ovsdb::typed::{DbError, DecodeError};
use ovsdb::{ClientError, Uuid};

/// Why a northbound operation could not be built or committed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NbError {
    /// A row to create exists already (and `may_exist` was not set), or another
    /// client created a switch, router or load balancer of that name after the
    /// replica was read (the commit failed then, and nothing was committed).
    #[error("{table} {name:?} already exists")]
    AlreadyExists {
        /// Table.
        table: &'static str,
        /// What identifies the row.
        name: String,
    },
    /// A row to use or delete does not exist (and `if_exists` was not set).
    #[error("{table} {name:?} not found")]
    NotFound {
        /// Table.
        table: &'static str,
        /// What identifies the row.
        name: String,
    },
    /// Several rows carry a name that must identify one.
    #[error("{count} rows of {table} are named {name:?}")]
    Ambiguous {
        /// Table.
        table: &'static str,
        /// The name.
        name: String,
        /// How many rows carry it.
        count: usize,
    },
    /// A port exists but belongs to another switch or router.
    #[error("{kind} {port:?} already exists in {owner:?}, not in {wanted:?}")]
    WrongOwner {
        /// `logical switch port` or `logical router port`.
        kind: &'static str,
        /// The port.
        port: String,
        /// Where it is.
        owner: String,
        /// Where it was asked for.
        wanted: String,
    },
    /// An argument is malformed (e.g. an IP prefix or a NAT type).
    #[error("invalid {what} {value:?}: {why}")]
    InvalidArgument {
        /// What the argument is.
        what: &'static str,
        /// The offending value.
        value: String,
        /// Why it is invalid.
        why: &'static str,
    },
    /// A row the transaction writes to was deleted by another client after the
    /// replica showed it: the transaction failed and nothing was committed.
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
    /// The replica holds a row the model cannot decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The database call failed: schema mismatch, invalid operation (nothing
    /// sent), connection trouble, or the server refused the transaction.
    #[error(transparent)]
    Db(DbError),
}

impl NbError {
    /// Whether the connection dropped after the transaction was sent, so it may or
    /// may not have committed: read the database back before retrying.
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, NbError::Db(db) if db.is_outcome_unknown())
    }
}

impl From<DbError> for NbError {
    /// A failed existence guard becomes [`NbError::RowGone`]; the rest is [`NbError::Db`].
    fn from(error: DbError) -> Self {
        match error {
            DbError::RowGone { table, uuid, .. } => NbError::RowGone {
                table,
                uuid,
                name: None,
            },
            other => NbError::Db(other),
        }
    }
}

impl From<ClientError> for NbError {
    fn from(error: ClientError) -> Self {
        NbError::Db(DbError::Client(error))
    }
}
