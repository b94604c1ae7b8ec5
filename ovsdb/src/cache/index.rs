//! The cache's indexes: the schema's unique indexes and the caller's non-unique ones.

use std::collections::{HashMap, HashSet};

use crate::schema::TableSchema;
use crate::value::{Atom, Row, Set, Uuid, Value};

/// What a client-side index is keyed by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IndexKey {
    /// Every element of a set column (for a scalar such as `name`, its one value): a row
    /// is found under each element, so a set column indexes "which rows contain X".
    Column(String),
    /// The value stored under `key` in a map column, e.g. `external_ids:iface-id`; rows
    /// without that key are not indexed.
    MapKey {
        /// The map column.
        column: String,
        /// The key looked up in it.
        key: Atom,
    },
}

/// A client-side, non-unique index the caller declares on a table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IndexSpec {
    /// The name lookups use.
    pub name: String,
    /// The table.
    pub table: String,
    /// What rows are keyed by.
    pub key: IndexKey,
}

impl IndexSpec {
    /// Indexes `table` by the elements of `column`.
    pub fn column(
        name: impl Into<String>,
        table: impl Into<String>,
        column: impl Into<String>,
    ) -> Self {
        IndexSpec {
            name: name.into(),
            table: table.into(),
            key: IndexKey::Column(column.into()),
        }
    }

    /// Indexes `table` by the value under `key` of the map column `column`.
    pub fn map_key(
        name: impl Into<String>,
        table: impl Into<String>,
        column: impl Into<String>,
        key: impl Into<Atom>,
    ) -> Self {
        IndexSpec {
            name: name.into(),
            table: table.into(),
            key: IndexKey::MapKey {
                column: column.into(),
                key: key.into(),
            },
        }
    }

    /// The column the index reads.
    pub fn column_name(&self) -> &str {
        match &self.key {
            IndexKey::Column(c) | IndexKey::MapKey { column: c, .. } => c,
        }
    }
}

/// The value of `column` in `row`, or the column's default when the row leaves it out
/// (as `update2` does for default values).
pub(crate) fn column_value(row: &Row, column: &str, table: Option<&TableSchema>) -> Option<Value> {
    match row.get(column) {
        Some(v) => Some(v.clone()),
        None => table
            .and_then(|t| t.column(column))
            .map(|c| c.type_.default_value()),
    }
}

/// A client-side index: key atom to the rows holding it.
#[derive(Debug, Default)]
pub(crate) struct ClientIndex {
    pub(crate) spec: Option<IndexSpec>,
    entries: HashMap<Atom, HashSet<Uuid>>,
}

impl ClientIndex {
    pub(crate) fn new(spec: IndexSpec) -> Self {
        ClientIndex {
            spec: Some(spec),
            entries: HashMap::new(),
        }
    }

    fn keys(&self, row: &Row, table: Option<&TableSchema>) -> Vec<Atom> {
        let Some(spec) = &self.spec else {
            return Vec::new();
        };
        match &spec.key {
            IndexKey::Column(column) => match column_value(row, column, table) {
                Some(Value::Set(set)) => set.into_vec(),
                _ => Vec::new(),
            },
            IndexKey::MapKey { column, key } => match row.get(column) {
                Some(Value::Map(map)) => map.get(key).cloned().into_iter().collect(),
                _ => Vec::new(),
            },
        }
    }

    pub(crate) fn insert(&mut self, uuid: Uuid, row: &Row, table: Option<&TableSchema>) {
        for key in self.keys(row, table) {
            self.entries.entry(key).or_default().insert(uuid);
        }
    }

    pub(crate) fn remove(&mut self, uuid: Uuid, row: &Row, table: Option<&TableSchema>) {
        for key in self.keys(row, table) {
            if let Some(uuids) = self.entries.get_mut(&key) {
                uuids.remove(&uuid);
                if uuids.is_empty() {
                    self.entries.remove(&key);
                }
            }
        }
    }

    /// Applies a symmetric-difference diff of an indexed set column: each element of
    /// `diff` now in `new` was added, every other one removed.
    pub(crate) fn apply_set_diff(&mut self, uuid: Uuid, diff: &Set, new: Option<&Set>) {
        for atom in diff.iter() {
            if new.is_some_and(|set| set.contains(atom)) {
                self.entries.entry(atom.clone()).or_default().insert(uuid);
            } else if let Some(uuids) = self.entries.get_mut(atom) {
                uuids.remove(&uuid);
                if uuids.is_empty() {
                    self.entries.remove(atom);
                }
            }
        }
    }

    pub(crate) fn find(&self, key: &Atom) -> Vec<Uuid> {
        let mut found: Vec<Uuid> = self
            .entries
            .get(key)
            .into_iter()
            .flatten()
            .copied()
            .collect();
        found.sort_unstable();
        found
    }
}

/// A unique index of the schema (`indexes`): the combined values of its columns to the
/// one row holding them.
#[derive(Debug)]
pub(crate) struct UniqueIndex {
    pub(crate) columns: Vec<String>,
    entries: HashMap<Vec<Value>, Uuid>,
}

impl UniqueIndex {
    pub(crate) fn new(columns: Vec<String>) -> Self {
        UniqueIndex {
            columns,
            entries: HashMap::new(),
        }
    }

    fn key(&self, row: &Row, table: Option<&TableSchema>) -> Vec<Value> {
        self.columns
            .iter()
            .map(|c| column_value(row, c, table).unwrap_or_default())
            .collect()
    }

    /// Adds a row; on a clash returns the key and the row already holding it (the newer
    /// row then takes the slot, mirroring what the server says is there).
    pub(crate) fn insert(
        &mut self,
        uuid: Uuid,
        row: &Row,
        table: Option<&TableSchema>,
    ) -> Option<(Vec<Value>, Uuid)> {
        let key = self.key(row, table);
        match self.entries.insert(key.clone(), uuid) {
            Some(previous) if previous != uuid => Some((key, previous)),
            _ => None,
        }
    }

    pub(crate) fn remove(&mut self, uuid: Uuid, row: &Row, table: Option<&TableSchema>) {
        let key = self.key(row, table);
        if self.entries.get(&key) == Some(&uuid) {
            self.entries.remove(&key);
        }
    }

    pub(crate) fn find(&self, key: &[Value]) -> Option<Uuid> {
        self.entries.get(key).copied()
    }
}
