//! [`TypedClient`]: one database of a generated model over the networked
//! client — schema check at connect, a monitored replica with the model's
//! indexes, and transactions of [`TypedOp`]s.
//!
//! At connect the model's schema is compared with the server's
//! ([`super::compare_schemas`]); every model table the server has is monitored
//! (all columns), into a replica declaring the client-side indexes the caller
//! asks for. [`TypedClient::transact`] adapts the operations to the server's
//! schema, validates them against it (so an unknown column, a wrong type or a
//! value outside an enum is a typed error and nothing is sent), and sends them
//! as one transaction. The server sends the monitor update for a transaction
//! before its reply, so when `transact` returns the replica already shows it.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use super::{
    compare_schemas, Compat, CompatError, DecodeError, OpError, Stored, Table, TypedOp, TypedStore,
};
use crate::cache::{CacheError, IndexSpec, Writer};
use crate::client::{Client, Error as ClientError, Monitor, MonitorMethod, MonitorRequest};
use crate::operation::{validate_all, Operation, OperationResult, TransactErrorKind};
use crate::schema::{DatabaseSchema, ValidationError};
use crate::value::Uuid;

/// Why a typed database call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbError {
    /// The server's schema is incompatible with the model.
    #[error(transparent)]
    Compat(#[from] CompatError),
    /// An operation uses a table or column the server lacks.
    #[error(transparent)]
    NotOnServer(#[from] OpError),
    /// An operation breaks the server's schema; nothing was sent.
    #[error("operation {index} is invalid: {error}")]
    Invalid {
        /// Index of the operation in the transaction.
        index: usize,
        /// What is wrong (boxed: validation errors are large).
        #[source]
        error: Box<ValidationError>,
    },
    /// A client-side index could not be declared.
    #[error(transparent)]
    Index(#[from] CacheError),
    /// A replicated row does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The wait ran out of time.
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(Duration, String),
    /// A row the transaction writes to was deleted (by another client) before the
    /// server ran it: its [`super::row_exists`] guard failed and nothing was committed.
    #[error(
        "{table} row {uuid} no longer exists (operation {index} needed it); nothing was committed"
    )]
    RowGone {
        /// The row's table.
        table: &'static str,
        /// The row.
        uuid: Uuid,
        /// Index of the failed guard in the transaction.
        index: usize,
    },
    /// Connection trouble, or the server refused the transaction.
    #[error(transparent)]
    Client(#[from] ClientError),
}

impl DbError {
    /// Whether the connection dropped after the transaction was sent, so it may or may
    /// not have committed ([`ClientError::OutcomeUnknown`]): read the database back
    /// before retrying.
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, DbError::Client(ClientError::OutcomeUnknown { .. }))
    }

    /// The client error this wraps, if any (connection trouble or a refused transaction).
    pub fn client_error(&self) -> Option<&ClientError> {
        match self {
            DbError::Client(error) => Some(error),
            _ => None,
        }
    }

    /// Maps a refused transaction whose failing operation is a [`super::row_exists`]
    /// guard to [`DbError::RowGone`].
    fn from_transact(error: ClientError, guards: &[(usize, &'static str, Uuid)]) -> DbError {
        if let ClientError::Transact(refused) = &error {
            let guard = guards.iter().find(|(index, ..)| *index == refused.index);
            if let (Some(&(index, table, uuid)), TransactErrorKind::TimedOut, false) =
                (guard, &refused.kind, refused.at_commit)
            {
                return DbError::RowGone { table, uuid, index };
            }
        }
        DbError::Client(error)
    }
}

/// One database of a generated model, connected and replicated.
#[derive(Debug)]
pub struct TypedClient {
    client: Client,
    database: String,
    schema: Arc<DatabaseSchema>,
    compat: Compat,
    store: TypedStore,
    _monitor: Monitor,
}

impl TypedClient {
    /// Checks `client`'s `database` against the model schema `model_json`,
    /// then monitors the model's `tables` with the client-side `indexes`.
    pub async fn connect(
        client: Client,
        database: &str,
        model_json: &str,
        tables: &[&str],
        indexes: Vec<IndexSpec>,
    ) -> Result<TypedClient, DbError> {
        let schema = client.get_schema(database).await?;
        let compat = compare_schemas(model_json, &schema)?;
        let mut writer = Writer::new(schema.clone());
        for index in indexes {
            if compat.has_column(&index.table, index.column_name()) {
                writer.add_index(index)?;
            }
        }
        let requests: Vec<MonitorRequest> = tables
            .iter()
            .filter(|t| compat.has_table(t))
            .map(|t| MonitorRequest::table(*t))
            .collect();
        let monitor = client
            .monitor_with(database, requests, MonitorMethod::CondSince, writer)
            .await?;
        let store = TypedStore::new(monitor.store());
        tracing::debug!(
            database,
            missing = compat.missing_columns().count(),
            "typed client connected"
        );
        Ok(TypedClient {
            client,
            database: database.to_string(),
            schema,
            compat,
            store,
            _monitor: monitor,
        })
    }

    /// The replica.
    pub fn store(&self) -> &TypedStore {
        &self.store
    }

    /// What the server lacks compared with the model.
    pub fn compat(&self) -> &Compat {
        &self.compat
    }

    /// The server's schema.
    pub fn schema(&self) -> &Arc<DatabaseSchema> {
        &self.schema
    }

    /// The untyped client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The database name.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Adapts `ops` to the server and validates them (no I/O).
    pub fn prepare(&self, ops: Vec<TypedOp>) -> Result<Vec<Operation>, DbError> {
        let ops: Vec<Operation> = ops
            .into_iter()
            .map(|op| op.adapt(&self.compat).map(Operation::from))
            .collect::<Result<_, _>>()?;
        validate_all(&ops, &self.schema).map_err(|(index, error)| DbError::Invalid {
            index,
            error: Box::new(error),
        })?;
        Ok(ops)
    }

    /// Sends `ops` as one transaction; an empty list sends nothing. A failed
    /// [`super::row_exists`] guard is [`DbError::RowGone`].
    pub async fn transact(&self, ops: Vec<TypedOp>) -> Result<Vec<OperationResult>, DbError> {
        if ops.is_empty() {
            return Ok(Vec::new());
        }
        let guards: Vec<(usize, &'static str, Uuid)> = ops
            .iter()
            .enumerate()
            .filter_map(|(index, op)| match op {
                TypedOp::RowExists { table, uuid } => Some((index, *table, *uuid)),
                _ => None,
            })
            .collect();
        let ops = self.prepare(ops)?;
        self.client
            .transact(&self.database, &ops)
            .await
            .map_err(|error| DbError::from_transact(error, &guards))
    }

    /// Waits until a row of `T` satisfies `predicate` in the replica, up to `timeout`.
    pub async fn wait_for<T: Table>(
        &self,
        what: &str,
        timeout: Duration,
        mut predicate: impl FnMut(&T) -> bool,
    ) -> Result<Stored<T>, DbError> {
        self.wait_until(what, timeout, || {
            Ok(self.store.filter::<T>(&mut predicate)?.into_iter().next())
        })
        .await
    }

    /// Waits until no row of `T` satisfies `predicate` in the replica (for example,
    /// until a deleted port is gone), up to `timeout`. Returns at once if none does.
    pub async fn wait_gone<T: Table>(
        &self,
        what: &str,
        timeout: Duration,
        mut predicate: impl FnMut(&T) -> bool,
    ) -> Result<(), DbError> {
        self.wait_until(what, timeout, || {
            let left = self.store.filter::<T>(&mut predicate)?;
            Ok(left.is_empty().then_some(()))
        })
        .await
    }

    /// Re-runs `check` after every change to the replica until it gives a value, up to
    /// `timeout` ([`DbError::Timeout`] names `what`).
    async fn wait_until<R>(
        &self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut() -> Result<Option<R>, DbError>,
    ) -> Result<R, DbError> {
        let mut changes = self.store.raw().subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(found) = check()? {
                return Ok(found);
            }
            match tokio::time::timeout_at(deadline, changes.next()).await {
                Ok(Some(_)) => continue,
                Ok(None) => return Err(DbError::Client(ClientError::Closed)),
                Err(_) => return Err(DbError::Timeout(timeout, what.to_string())),
            }
        }
    }
}
