//! What the guards of a transaction protect, so that a guard failing at the server
//! becomes a typed error naming the row instead of an anonymous "timed out".

use std::collections::HashMap;

use ovsdb::operation::TransactErrorKind;
use ovsdb::typed::DbError;
use ovsdb::{ClientError, Uuid};

use crate::VsError;

/// The guards of one transaction.
#[derive(Debug, Default)]
pub(crate) struct Guards {
    /// Replicated rows guarded by a `row_exists`, with their names if they have one.
    pub(crate) rows: HashMap<Uuid, Option<String>>,
    /// "No row of this table has this name" guards, by operation index.
    pub(crate) names_free: HashMap<usize, (&'static str, String)>,
}

impl Guards {
    /// The typed error for a failed commit: a failed guard names what it protected.
    pub(crate) fn explain(&self, error: DbError) -> VsError {
        match error {
            DbError::RowGone { table, uuid, .. } => VsError::RowGone {
                table,
                uuid,
                name: self.rows.get(&uuid).cloned().flatten(),
            },
            DbError::Client(ClientError::Transact(refused))
                if refused.kind == TransactErrorKind::TimedOut && !refused.at_commit =>
            {
                match self.names_free.get(&refused.index) {
                    Some((table, name)) => VsError::AlreadyExists {
                        table,
                        name: name.clone(),
                    },
                    None => VsError::from(DbError::Client(ClientError::Transact(refused))),
                }
            }
            other => VsError::from(other),
        }
    }
}
