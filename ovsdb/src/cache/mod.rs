//! A replica of monitored tables, fed by monitor updates (sans-I/O).
//!
//! Modeled on kube-runtime's reflector: a [`Writer`] applies `update`/`update2`/`update3`
//! batches (the networked client owns it), and any number of cheap, cloneable [`Store`]
//! handles read rows by uuid, through the schema's unique indexes, or through client-side
//! indexes the caller declares ([`IndexSpec`]: by a column such as `name`, or by a map key
//! such as `external_ids:iface-id`). After each applied batch, subscribers receive the
//! per-row [`RowEvent`]s of that batch over an unbounded `futures-channel` (usable from
//! any runtime, or synchronously with `try_next`).
//!
//! Rows are stored as decoded from `update2`: a column holding its default value may be
//! absent; index keys treat an absent column as its default.
//!
//! ```
//! use std::sync::Arc;
//! use ovsdb::cache::{IndexSpec, Writer};
//! use ovsdb::schema::DatabaseSchema;
//! use ovsdb::update::TableUpdates2;
//!
//! let schema = Arc::new(DatabaseSchema::server());
//! let mut writer = Writer::new(schema.clone());
//! writer.add_index(IndexSpec::column("by_name", "Database", "name")).unwrap();
//! let store = writer.store();
//! let initial = r#"{"Database":{"5e9d8e3a-3b6c-4f0e-9f57-9b2fd0e1c1aa":
//!     {"initial":{"name":"OVN_Northbound","model":"standalone","leader":true,"connected":true}}}}"#;
//! writer.apply_update2(TableUpdates2::from_str(initial, &schema).unwrap()).unwrap();
//! let found = store.find_by_index("Database", "by_name", "OVN_Northbound");
//! assert_eq!(found.len(), 1);
//! assert_eq!(store.get("Database", &found[0]).unwrap().get("leader").unwrap().as_bool(), Some(true));
//! ```

mod apply;
mod index;
pub mod order;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};

use futures_channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};

pub use index::{IndexKey, IndexSpec};

use crate::schema::{DatabaseSchema, TableSchema};
use crate::value::{Atom, Row, Uuid, Value};
use index::{ClientIndex, UniqueIndex};

/// A change to one row, delivered to subscribers after its batch is applied.
#[derive(Debug, Clone, PartialEq)]
pub enum RowEvent {
    /// A row appeared.
    Insert {
        /// The table.
        table: Arc<str>,
        /// The row.
        uuid: Uuid,
        /// Its columns.
        new: Arc<Row>,
    },
    /// A row changed.
    Update {
        /// The table.
        table: Arc<str>,
        /// The row.
        uuid: Uuid,
        /// Its columns before.
        old: Arc<Row>,
        /// Its columns after.
        new: Arc<Row>,
    },
    /// A row went away.
    Delete {
        /// The table.
        table: Arc<str>,
        /// The row.
        uuid: Uuid,
        /// Its last columns.
        old: Arc<Row>,
    },
}

impl RowEvent {
    /// The table of the changed row.
    pub fn table(&self) -> &str {
        match self {
            RowEvent::Insert { table, .. }
            | RowEvent::Update { table, .. }
            | RowEvent::Delete { table, .. } => table,
        }
    }

    /// The uuid of the changed row.
    pub fn uuid(&self) -> Uuid {
        match self {
            RowEvent::Insert { uuid, .. }
            | RowEvent::Update { uuid, .. }
            | RowEvent::Delete { uuid, .. } => *uuid,
        }
    }
}

/// The row events of one applied batch.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChangeBatch {
    /// The events, in the order the rows were applied.
    pub events: Vec<RowEvent>,
    /// The transaction id the batch brought the replica to, if known (`update3`).
    pub last_txn_id: Option<Uuid>,
}

/// A problem found while applying updates or declaring indexes. Applying goes on past
/// such problems (the server is the authority); the first one is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// An index names a table the schema lacks.
    #[error("index {index}: unknown table {table:?}")]
    UnknownTable {
        /// The index.
        index: String,
        /// The table.
        table: String,
    },
    /// An index names a column the table lacks.
    #[error("index {index}: table {table} has no column {column:?}")]
    UnknownColumn {
        /// The index.
        index: String,
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
    /// An index of that name exists on the table.
    #[error("index {index} is already declared on table {table}")]
    DuplicateIndex {
        /// The index.
        index: String,
        /// The table.
        table: String,
    },
    /// A `modify` or `delete` for a row the replica does not have.
    #[error("table {table}: update for unknown row {uuid}")]
    UnknownRow {
        /// The table.
        table: String,
        /// The row.
        uuid: Uuid,
    },
    /// Two rows hold the same value of a schema unique index after a batch.
    #[error("table {table}: rows {existing} and {new} both have {columns:?} = {key}")]
    UniqueViolation {
        /// The table.
        table: String,
        /// The index columns.
        columns: Vec<String>,
        /// The clashing value (wire JSON).
        key: String,
        /// The row that held it.
        existing: Uuid,
        /// The row that now holds it.
        new: Uuid,
    },
}

#[derive(Debug, Default)]
struct TableState {
    schema: Option<TableSchema>,
    rows: HashMap<Uuid, Arc<Row>>,
    unique: Vec<UniqueIndex>,
    client: Vec<ClientIndex>,
}

#[derive(Debug, Default)]
struct State {
    tables: HashMap<Arc<str>, TableState>,
    last_txn_id: Option<Uuid>,
}

#[derive(Debug)]
struct Shared {
    state: RwLock<State>,
    subscribers: Mutex<Vec<UnboundedSender<Arc<ChangeBatch>>>>,
    schema: Arc<DatabaseSchema>,
}

/// The writing side of the replica; owned by whatever receives monitor updates.
#[derive(Debug)]
pub struct Writer {
    shared: Arc<Shared>,
}

/// A cheap, cloneable read handle on the replica.
#[derive(Debug, Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

impl Writer {
    /// An empty replica of a database with `schema`; the schema's unique indexes are set up
    /// for every table.
    pub fn new(schema: Arc<DatabaseSchema>) -> Writer {
        let mut state = State::default();
        for table in schema.tables.values() {
            let unique = table
                .indexes
                .iter()
                .map(|cols| UniqueIndex::new(cols.clone()))
                .collect();
            let entry = TableState {
                schema: Some(table.clone()),
                unique,
                ..TableState::default()
            };
            state.tables.insert(table.name.clone(), entry);
        }
        let shared = Shared {
            state: RwLock::new(state),
            subscribers: Mutex::new(Vec::new()),
            schema,
        };
        Writer {
            shared: Arc::new(shared),
        }
    }

    /// A read handle.
    pub fn store(&self) -> Store {
        Store {
            shared: self.shared.clone(),
        }
    }

    /// Declares a client-side index and fills it from the rows already present.
    pub fn add_index(&mut self, spec: IndexSpec) -> Result<(), CacheError> {
        let schema =
            self.shared
                .schema
                .table(&spec.table)
                .ok_or_else(|| CacheError::UnknownTable {
                    index: spec.name.clone(),
                    table: spec.table.clone(),
                })?;
        if schema.column(spec.column_name()).is_none() {
            return Err(CacheError::UnknownColumn {
                index: spec.name.clone(),
                table: spec.table.clone(),
                column: spec.column_name().to_owned(),
            });
        }
        let mut state = self.shared.write();
        let table = state
            .tables
            .get_mut(spec.table.as_str())
            .expect("every schema table has a state");
        if table
            .client
            .iter()
            .any(|i| i.spec.as_ref().is_some_and(|s| s.name == spec.name))
        {
            return Err(CacheError::DuplicateIndex {
                index: spec.name,
                table: spec.table,
            });
        }
        let mut index = ClientIndex::new(spec);
        for (uuid, row) in &table.rows {
            index.insert(*uuid, row, table.schema.as_ref());
        }
        table.client.push(index);
        Ok(())
    }
}

impl Shared {
    fn read(&self) -> RwLockReadGuard<'_, State> {
        // A panic while holding the lock leaves at worst a half-applied batch; reading it
        // is still better than poisoning every reader.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, batch: ChangeBatch) {
        let mut subscribers = self
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if subscribers.is_empty() || batch.events.is_empty() {
            return;
        }
        let batch = Arc::new(batch);
        subscribers.retain(|tx| tx.unbounded_send(batch.clone()).is_ok());
    }

    fn has_subscribers(&self) -> bool {
        !self
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }
}

impl Store {
    /// The schema the replica was made for.
    pub fn schema(&self) -> &Arc<DatabaseSchema> {
        &self.shared.schema
    }

    /// A row by uuid.
    pub fn get(&self, table: &str, uuid: &Uuid) -> Option<Arc<Row>> {
        self.shared
            .read()
            .tables
            .get(table)?
            .rows
            .get(uuid)
            .cloned()
    }

    /// Number of rows of a table.
    pub fn len(&self, table: &str) -> usize {
        self.shared
            .read()
            .tables
            .get(table)
            .map_or(0, |t| t.rows.len())
    }

    /// Whether the replica holds no row at all.
    pub fn is_empty(&self) -> bool {
        self.shared
            .read()
            .tables
            .values()
            .all(|t| t.rows.is_empty())
    }

    /// A snapshot of a table's rows, sorted by uuid.
    pub fn rows(&self, table: &str) -> Vec<(Uuid, Arc<Row>)> {
        let state = self.shared.read();
        let mut rows: Vec<_> = state
            .tables
            .get(table)
            .into_iter()
            .flat_map(|t| t.rows.iter().map(|(u, r)| (*u, r.clone())))
            .collect();
        rows.sort_unstable_by_key(|(u, _)| *u);
        rows
    }

    /// The rows of a table for which `predicate` holds, sorted by uuid.
    pub fn find(
        &self,
        table: &str,
        mut predicate: impl FnMut(&Row) -> bool,
    ) -> Vec<(Uuid, Arc<Row>)> {
        let state = self.shared.read();
        let mut rows: Vec<_> = state
            .tables
            .get(table)
            .into_iter()
            .flat_map(|t| t.rows.iter())
            .filter(|(_, r)| predicate(r))
            .map(|(u, r)| (*u, r.clone()))
            .collect();
        rows.sort_unstable_by_key(|(u, _)| *u);
        rows
    }

    /// The rows found under `key` in the client-side index `index` of `table`, sorted (empty
    /// if there is no such index or row).
    pub fn find_by_index(&self, table: &str, index: &str, key: impl Into<Atom>) -> Vec<Uuid> {
        let key = key.into();
        let state = self.shared.read();
        let Some(table) = state.tables.get(table) else {
            return Vec::new();
        };
        table
            .client
            .iter()
            .find(|i| i.spec.as_ref().is_some_and(|s| s.name == index))
            .map(|i| i.find(&key))
            .unwrap_or_default()
    }

    /// The row holding `key` in the schema's unique index on `columns` of `table` (e.g.
    /// `find_unique("Logical_Switch_Port", &["name"], &["p0".into()])`).
    pub fn find_unique(&self, table: &str, columns: &[&str], key: &[Value]) -> Option<Uuid> {
        let state = self.shared.read();
        let index = state.tables.get(table)?.unique.iter().find(|i| {
            i.columns
                .iter()
                .map(String::as_str)
                .eq(columns.iter().copied())
        })?;
        index.find(key)
    }

    /// The transaction id of the last applied `update3` or `monitor_cond_since` reply.
    pub fn last_txn_id(&self) -> Option<Uuid> {
        self.shared.read().last_txn_id
    }

    /// Receives the events of every batch applied from now on; dropped receivers are
    /// forgotten at the next batch.
    pub fn subscribe(&self) -> UnboundedReceiver<Arc<ChangeBatch>> {
        let (tx, rx) = unbounded();
        self.shared
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(tx);
        rx
    }
}

#[cfg(test)]
mod tests;
