//! Errors of the northbound operations.

use ovsdb::typed::{DbError, DecodeError};

/// Why a northbound operation could not be built or committed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NbError {
    /// A row to create exists already (and `may_exist` was not set).
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
    /// The replica holds a row the model cannot decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The database call failed: schema mismatch, invalid operation (nothing
    /// sent), connection trouble, or the server refused the transaction.
    #[error(transparent)]
    Db(#[from] DbError),
}
