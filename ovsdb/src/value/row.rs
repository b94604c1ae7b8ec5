//! Rows: column name to value, RFC 7047 `<row>`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Uuid, Value};

/// A row, or a subset of its columns: a JSON object from column name to value.
///
/// Column names are `Arc<str>` so that decoding many rows with a schema shares one
/// allocation per column name instead of one per row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Row {
    columns: BTreeMap<Arc<str>, Value>,
}

impl Row {
    /// An empty row.
    pub fn new() -> Self {
        Row::default()
    }

    /// Builder style [`Row::insert`].
    pub fn with(mut self, column: impl Into<Arc<str>>, value: impl Into<Value>) -> Self {
        self.insert(column, value);
        self
    }

    /// Sets a column; returns the previous value.
    pub fn insert(
        &mut self,
        column: impl Into<Arc<str>>,
        value: impl Into<Value>,
    ) -> Option<Value> {
        self.columns.insert(column.into(), value.into())
    }

    /// Removes a column; returns its value.
    pub fn remove(&mut self, column: &str) -> Option<Value> {
        self.columns.remove(column)
    }

    /// The value of a column.
    pub fn get(&self, column: &str) -> Option<&Value> {
        self.columns.get(column)
    }

    /// Mutable access to the value of a column.
    pub fn get_mut(&mut self, column: &str) -> Option<&mut Value> {
        self.columns.get_mut(column)
    }

    /// Whether the row has the column.
    pub fn contains(&self, column: &str) -> bool {
        self.columns.contains_key(column)
    }

    /// The implicit `_uuid` column, if present.
    pub fn uuid(&self) -> Option<Uuid> {
        self.get("_uuid").and_then(Value::as_uuid)
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.columns.len()
    }

    /// Whether the row has no column.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// Columns in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.columns.iter().map(|(k, v)| (&**k, v))
    }

    /// Column names in order.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.columns.keys().map(|k| &**k)
    }

    /// Encodes to a wire JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("an OVSDB row always encodes to JSON")
    }

    pub(crate) fn insert_arc(&mut self, column: Arc<str>, value: Value) {
        self.columns.insert(column, value);
    }
}

impl<K: Into<Arc<str>>, V: Into<Value>> FromIterator<(K, V)> for Row {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Row {
            columns: iter
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

impl<'a> IntoIterator for &'a Row {
    type Item = (&'a Arc<str>, &'a Value);
    type IntoIter = std::collections::btree_map::Iter<'a, Arc<str>, Value>;
    fn into_iter(self) -> Self::IntoIter {
        self.columns.iter()
    }
}
