//! Typed reads from the replica cache ([`crate::cache::Store`]).
//!
//! Lookups by name go through client-side indexes declared when the monitor is
//! set up ([`name_index`] names them), so they never scan a table.

use std::sync::Arc;

use super::{DecodeError, RowId, Stored, Table};
use crate::cache::{IndexSpec, Store};
use crate::value::{Atom, Row, Uuid};

/// The name of the client-side index this module declares on `table.column`.
pub fn index_name(table: &str, column: &str) -> String {
    format!("{table}.{column}")
}

/// Client-side index on the `name` column of `T`.
pub fn name_index<T: Table>() -> IndexSpec {
    IndexSpec::column(index_name(T::TABLE_NAME, "name"), T::TABLE_NAME, "name")
}

/// Client-side index on `T.column`.
pub fn column_index<T: Table>(column: &str) -> IndexSpec {
    IndexSpec::column(index_name(T::TABLE_NAME, column), T::TABLE_NAME, column)
}

/// Typed view of a replica.
#[derive(Debug, Clone)]
pub struct TypedStore {
    store: Store,
}

fn decode<T: Table>(uuid: Uuid, row: &Row) -> Result<Stored<T>, DecodeError> {
    Ok(Stored {
        id: RowId::new(uuid),
        row: T::from_row(row)?,
    })
}

impl TypedStore {
    /// Wraps an untyped store.
    pub fn new(store: Store) -> Self {
        TypedStore { store }
    }

    /// The untyped store.
    pub fn raw(&self) -> &Store {
        &self.store
    }

    /// The row with uuid `id`, if replicated.
    pub fn get<T: Table>(&self, id: RowId<T>) -> Result<Option<T>, DecodeError> {
        self.store
            .get(T::TABLE_NAME, &id.uuid())
            .map(|row| T::from_row(&row))
            .transpose()
    }

    /// The untyped row with uuid `id`, if replicated.
    pub fn get_raw<T: Table>(&self, id: RowId<T>) -> Option<Arc<Row>> {
        self.store.get(T::TABLE_NAME, &id.uuid())
    }

    /// Whether a row with uuid `id` is replicated.
    pub fn contains<T: Table>(&self, id: RowId<T>) -> bool {
        self.store.get(T::TABLE_NAME, &id.uuid()).is_some()
    }

    /// Every row of `T`.
    pub fn rows<T: Table>(&self) -> Result<Vec<Stored<T>>, DecodeError> {
        self.store
            .rows(T::TABLE_NAME)
            .iter()
            .map(|(uuid, row)| decode(*uuid, row))
            .collect()
    }

    /// Number of rows of `T`.
    pub fn row_count<T: Table>(&self) -> usize {
        self.store.len(T::TABLE_NAME)
    }

    /// Ids of the rows of `T` whose indexed `column` equals `key` (client-side
    /// index declared with [`column_index`] or [`name_index`]).
    pub fn ids_by<T: Table>(&self, column: &str, key: impl Into<Atom>) -> Vec<RowId<T>> {
        self.store
            .find_by_index(T::TABLE_NAME, &index_name(T::TABLE_NAME, column), key)
            .into_iter()
            .map(RowId::new)
            .collect()
    }

    /// Rows of `T` whose indexed `column` equals `key`.
    pub fn find_by<T: Table>(
        &self,
        column: &str,
        key: impl Into<Atom>,
    ) -> Result<Vec<Stored<T>>, DecodeError> {
        let mut out = Vec::new();
        for id in self.ids_by::<T>(column, key) {
            if let Some(row) = self.store.get(T::TABLE_NAME, &id.uuid()) {
                out.push(decode(id.uuid(), &row)?);
            }
        }
        Ok(out)
    }

    /// Ids of the rows of `T` whose set column `column` holds `uuid` (e.g. the
    /// switch owning a port). A scan of `T` with a binary search per row:
    /// cheaper overall than a client-side index on a large set column, which
    /// the replica would re-key on every change of that set.
    pub fn ids_referencing<T: Table>(&self, column: &str, uuid: Uuid) -> Vec<RowId<T>> {
        let atom = Atom::Uuid(uuid);
        self.store
            .find(T::TABLE_NAME, |row| {
                row.get(column)
                    .and_then(|v| v.as_set())
                    .is_some_and(|set| set.contains(&atom))
            })
            .into_iter()
            .map(|(uuid, _)| RowId::new(uuid))
            .collect()
    }

    /// Rows of `T` named `name` (needs [`name_index`]).
    pub fn by_name<T: Table>(&self, name: &str) -> Result<Vec<Stored<T>>, DecodeError> {
        self.find_by("name", name)
    }

    /// Rows of `T` satisfying `predicate` (a scan: for small tables only).
    pub fn filter<T: Table>(
        &self,
        mut predicate: impl FnMut(&T) -> bool,
    ) -> Result<Vec<Stored<T>>, DecodeError> {
        let mut out = Vec::new();
        for stored in self.rows::<T>()? {
            if predicate(&stored.row) {
                out.push(stored);
            }
        }
        Ok(out)
    }
}
