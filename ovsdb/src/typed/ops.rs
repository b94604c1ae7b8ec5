//! Typed operation builders (RFC 7047 §5.2): `insert`, `update`, `mutate`,
//! `delete`, `wait` and `select` on a table of a generated model.
//!
//! Builders are plain values; nothing here does I/O. Each converts into a
//! [`TypedOp`], a table-erased operation that the client turns into a wire
//! operation, leaving out the columns the server lacks (see [`super::Compat`]).
//!
//! Inserts get a caller-chosen uuid (`"uuid"` member of the insert, OVS >=
//! 2.13), so a row inserted earlier in the same transaction is referenced by
//! its plain [`RowId`] — no named-uuid bookkeeping.

use std::marker::PhantomData;

use super::{Clause, Compat, MutationSpec, RowId, Table, Where};
use crate::operation::{self, Condition, Mutation, Operation, WaitUntil};
use crate::value::{Row, Uuid, Value};

/// A typed operation could not be sent to the connected server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// The server's schema has no such table.
    #[error("table {table} does not exist on the server")]
    TableNotOnServer {
        /// The table.
        table: String,
    },
    /// A condition or mutation names a column the server's schema lacks.
    #[error("column {table}.{column} does not exist on the server")]
    ColumnNotOnServer {
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
}

/// A table-erased operation built by the typed builders.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TypedOp {
    /// `insert` of `row` under the caller-chosen `uuid`.
    Insert {
        /// Table.
        table: &'static str,
        /// The new row's uuid.
        uuid: Uuid,
        /// Column values.
        row: Row,
    },
    /// `update` of the rows matching `clauses`.
    Update {
        /// Table.
        table: &'static str,
        /// Which rows.
        clauses: Vec<Clause>,
        /// New column values.
        row: Row,
    },
    /// `mutate` of the rows matching `clauses`.
    Mutate {
        /// Table.
        table: &'static str,
        /// Which rows.
        clauses: Vec<Clause>,
        /// The mutations, applied in order.
        mutations: Vec<MutationSpec>,
    },
    /// `delete` of the rows matching `clauses`.
    Delete {
        /// Table.
        table: &'static str,
        /// Which rows.
        clauses: Vec<Clause>,
    },
    /// `wait` until the rows matching `clauses`, projected on `columns`, are
    /// (`until_equal`) or are not exactly `rows`.
    Wait {
        /// Table.
        table: &'static str,
        /// Which rows.
        clauses: Vec<Clause>,
        /// Projected columns.
        columns: Vec<&'static str>,
        /// Expected rows.
        rows: Vec<Row>,
        /// `==` (true) or `!=` (false).
        until_equal: bool,
        /// Milliseconds to wait; `Some(0)` fails at once.
        timeout_ms: Option<u64>,
    },
    /// A guard: a `wait` (timeout 0) that fails the transaction when row `uuid` of `table`
    /// no longer exists, so a write addressed to that row cannot silently match nothing.
    /// [`super::TypedClient::transact`] reports its failure as [`super::DbError::RowGone`].
    RowExists {
        /// Table.
        table: &'static str,
        /// The row that must exist.
        uuid: Uuid,
    },
    /// `select` of `columns` (all if empty) of the rows matching `clauses`.
    Select {
        /// Table.
        table: &'static str,
        /// Which rows.
        clauses: Vec<Clause>,
        /// Projected columns.
        columns: Vec<&'static str>,
    },
}

impl TypedOp {
    /// The table the operation works on.
    pub fn table(&self) -> &'static str {
        match self {
            TypedOp::Insert { table, .. }
            | TypedOp::Update { table, .. }
            | TypedOp::Mutate { table, .. }
            | TypedOp::Delete { table, .. }
            | TypedOp::Wait { table, .. }
            | TypedOp::RowExists { table, .. }
            | TypedOp::Select { table, .. } => table,
        }
    }

    /// Adapts the operation to what the server has: columns it lacks are left
    /// out of inserted/updated rows; conditions, mutations and projections on
    /// them are errors.
    pub fn adapt(self, compat: &Compat) -> Result<TypedOp, OpError> {
        let table = self.table();
        if !compat.has_table(table) {
            return Err(OpError::TableNotOnServer {
                table: table.to_string(),
            });
        }
        let check = |column: &str| {
            if compat.has_column(table, column) || column.starts_with('_') {
                Ok(())
            } else {
                Err(OpError::ColumnNotOnServer {
                    table: table.to_string(),
                    column: column.to_string(),
                })
            }
        };
        let check_clauses = |clauses: &[Clause]| clauses.iter().try_for_each(|c| check(c.column));
        Ok(match self {
            TypedOp::Insert { table, uuid, row } => TypedOp::Insert {
                table,
                uuid,
                row: compat.filter_row(table, row),
            },
            TypedOp::Update {
                table,
                clauses,
                row,
            } => {
                check_clauses(&clauses)?;
                TypedOp::Update {
                    table,
                    clauses,
                    row: compat.filter_row(table, row),
                }
            }
            TypedOp::Mutate {
                table,
                clauses,
                mutations,
            } => {
                check_clauses(&clauses)?;
                mutations.iter().try_for_each(|m| check(m.column))?;
                TypedOp::Mutate {
                    table,
                    clauses,
                    mutations,
                }
            }
            TypedOp::Wait {
                ref clauses,
                ref columns,
                ..
            }
            | TypedOp::Select {
                ref clauses,
                ref columns,
                ..
            } => {
                check_clauses(clauses)?;
                columns.iter().try_for_each(|c| check(c))?;
                self
            }
            TypedOp::Delete { ref clauses, .. } => {
                check_clauses(clauses)?;
                self
            }
            TypedOp::RowExists { .. } => self,
        })
    }
}

fn conditions(clauses: Vec<Clause>) -> Vec<Condition> {
    clauses
        .into_iter()
        .map(|c| Condition::new(c.column, c.function, c.value))
        .collect()
}

impl From<TypedOp> for Operation {
    /// The wire operation (without schema adaptation; see [`TypedOp::adapt`]).
    fn from(op: TypedOp) -> Operation {
        match op {
            TypedOp::Insert { table, uuid, row } => {
                Operation::insert(table, row).with_uuid(uuid).into()
            }
            TypedOp::Update {
                table,
                clauses,
                row,
            } => Operation::update(table, row)
                .with_conditions(conditions(clauses))
                .into(),
            TypedOp::Mutate {
                table,
                clauses,
                mutations,
            } => operation::Mutate {
                table: table.to_string(),
                conditions: conditions(clauses),
                mutations: mutations
                    .into_iter()
                    .map(|m| Mutation::new(m.column, m.mutator, m.value))
                    .collect(),
            }
            .into(),
            TypedOp::Delete { table, clauses } => Operation::delete(table)
                .with_conditions(conditions(clauses))
                .into(),
            TypedOp::Wait {
                table,
                clauses,
                columns,
                rows,
                until_equal,
                timeout_ms,
            } => {
                let until = if until_equal {
                    WaitUntil::Equal
                } else {
                    WaitUntil::NotEqual
                };
                let mut wait = Operation::wait(table, columns, until, rows)
                    .with_conditions(conditions(clauses));
                wait.timeout = timeout_ms;
                wait.into()
            }
            TypedOp::RowExists { table, uuid } => {
                let row = Row::new().with("_uuid", uuid);
                let mut wait = Operation::wait(table, ["_uuid"], WaitUntil::Equal, vec![row])
                    .with_conditions([Condition::new("_uuid", operation::Function::Equal, uuid)]);
                wait.timeout = Some(0);
                wait.into()
            }
            TypedOp::Select {
                table,
                clauses,
                columns,
            } => {
                let select = Operation::select(table).with_conditions(conditions(clauses));
                if columns.is_empty() {
                    select.into()
                } else {
                    select.with_columns(columns).into()
                }
            }
        }
    }
}

/// Builds an `insert` of `row` under a fresh random uuid.
///
/// Columns holding an empty set or map are left out: that is their default, so the
/// stored row is the same, while the request (and the server's parsing of it) shrinks to
/// the columns actually set — most of a typical row's columns are empty.
pub fn insert<T: Table>(row: &T) -> Insert<T> {
    Insert {
        id: RowId::random(),
        row: row.to_columns().without_empty().into_row(),
    }
}

/// An `insert` being built.
#[derive(Debug, Clone)]
pub struct Insert<T> {
    id: RowId<T>,
    row: Row,
}

impl<T: Table> Insert<T> {
    /// Inserts under `id` instead of a random uuid.
    pub fn with_id(mut self, id: RowId<T>) -> Self {
        self.id = id;
        self
    }

    /// The uuid the row will have.
    pub fn id(&self) -> RowId<T> {
        self.id
    }
}

impl<T: Table> From<Insert<T>> for TypedOp {
    fn from(op: Insert<T>) -> TypedOp {
        TypedOp::Insert {
            table: T::TABLE_NAME,
            uuid: op.id.uuid(),
            row: op.row,
        }
    }
}

/// Builds an `update` of the rows matching `filter`.
pub fn update<T: Table>(filter: Where<T>) -> Update<T> {
    Update {
        filter,
        row: Row::new(),
    }
}

/// An `update` being built.
#[derive(Debug, Clone)]
pub struct Update<T> {
    filter: Where<T>,
    row: Row,
}

impl<T: Table> Update<T> {
    /// Sets one column; build the pair with [`super::Column::to`].
    pub fn set(mut self, (column, value): (&'static str, Value)) -> Self {
        self.row.insert(column, value);
        self
    }

    /// Sets every column to the values of `row`.
    pub fn set_all(mut self, row: &T) -> Self {
        for (column, value) in row.to_columns().iter() {
            self.row.insert(column, value.clone());
        }
        self
    }
}

impl<T: Table> From<Update<T>> for TypedOp {
    fn from(op: Update<T>) -> TypedOp {
        TypedOp::Update {
            table: T::TABLE_NAME,
            clauses: op.filter.into_clauses(),
            row: op.row,
        }
    }
}

/// Builds a `mutate` of the rows matching `filter`.
pub fn mutate<T: Table>(filter: Where<T>) -> Mutate<T> {
    Mutate {
        filter,
        mutations: Vec::new(),
    }
}

/// A `mutate` being built.
#[derive(Debug, Clone)]
pub struct Mutate<T> {
    filter: Where<T>,
    mutations: Vec<MutationSpec>,
}

impl<T: Table> Mutate<T> {
    /// Adds mutations (one, or the pair from `set_keys`).
    pub fn with(mut self, mutations: impl IntoIterator<Item = MutationSpec>) -> Self {
        self.mutations.extend(mutations);
        self
    }

    /// Whether no mutation was added.
    pub fn is_empty(&self) -> bool {
        self.mutations.is_empty()
    }
}

impl<T: Table> From<Mutate<T>> for TypedOp {
    fn from(op: Mutate<T>) -> TypedOp {
        TypedOp::Mutate {
            table: T::TABLE_NAME,
            clauses: op.filter.into_clauses(),
            mutations: op.mutations,
        }
    }
}

/// Builds a `delete` of the rows matching `filter`.
pub fn delete<T: Table>(filter: Where<T>) -> Delete<T> {
    Delete { filter }
}

/// A `delete` being built.
#[derive(Debug, Clone)]
pub struct Delete<T> {
    filter: Where<T>,
}

impl<T: Table> From<Delete<T>> for TypedOp {
    fn from(op: Delete<T>) -> TypedOp {
        TypedOp::Delete {
            table: T::TABLE_NAME,
            clauses: op.filter.into_clauses(),
        }
    }
}

/// Builds a `wait` on the rows matching `filter`; by default it asserts, without
/// waiting, that no row matches (the guard for "create if absent").
pub fn wait<T: Table>(filter: Where<T>) -> Wait<T> {
    Wait {
        filter,
        columns: vec!["_uuid"],
        rows: Vec::new(),
        until_equal: true,
        timeout_ms: Some(0),
    }
}

/// A `wait` being built.
#[derive(Debug, Clone)]
pub struct Wait<T> {
    filter: Where<T>,
    columns: Vec<&'static str>,
    rows: Vec<Row>,
    until_equal: bool,
    timeout_ms: Option<u64>,
}

impl<T: Table> Wait<T> {
    /// Asserts the matching rows are exactly the rows with these uuids.
    pub fn rows_are(mut self, ids: impl IntoIterator<Item = RowId<T>>) -> Self {
        self.columns = vec!["_uuid"];
        self.rows = ids
            .into_iter()
            .map(|id| Row::new().with("_uuid", id.uuid()))
            .collect();
        self
    }

    /// Waits up to `ms` milliseconds (None: forever) instead of failing at once.
    pub fn timeout_ms(mut self, ms: Option<u64>) -> Self {
        self.timeout_ms = ms;
        self
    }
}

impl<T: Table> From<Wait<T>> for TypedOp {
    fn from(op: Wait<T>) -> TypedOp {
        TypedOp::Wait {
            table: T::TABLE_NAME,
            clauses: op.filter.into_clauses(),
            columns: op.columns,
            rows: op.rows,
            until_equal: op.until_equal,
            timeout_ms: op.timeout_ms,
        }
    }
}

/// A guard that fails the transaction, with nothing committed, when row `id` is gone
/// by the time the server runs it (see [`TypedOp::RowExists`]). Put it before an
/// `update` or `mutate` of a row that another client may delete: those operations
/// alone match no row and succeed, and a row inserted for the occasion (a port added
/// to a deleted switch) is garbage-collected at commit.
pub fn row_exists<T: Table>(id: RowId<T>) -> TypedOp {
    TypedOp::RowExists {
        table: T::TABLE_NAME,
        uuid: id.uuid(),
    }
}

/// Builds a `select` of the rows matching `filter` (all columns).
pub fn select<T: Table>(filter: Where<T>) -> Select<T> {
    Select {
        filter,
        table: PhantomData,
    }
}

/// A `select` being built.
#[derive(Debug, Clone)]
pub struct Select<T> {
    filter: Where<T>,
    table: PhantomData<fn() -> T>,
}

impl<T: Table> From<Select<T>> for TypedOp {
    fn from(op: Select<T>) -> TypedOp {
        TypedOp::Select {
            table: T::TABLE_NAME,
            clauses: op.filter.into_clauses(),
            columns: Vec::new(),
        }
    }
}
