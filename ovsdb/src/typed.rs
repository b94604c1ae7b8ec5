//! Run-time support for generated models: the [`Table`] trait, typed row ids,
//! typed column handles, and the conversions between Rust values and the
//! untyped [`Value`]s of the core.
//!
//! Everything generated code needs from the `ovsdb` crate goes through this
//! module, so the untyped core can change without regenerating.
//!
//! An `update` or `mutate` of a row by `_uuid` matches no row, and succeeds, when
//! another client deleted the row meanwhile (and a row inserted to be referenced
//! from it is garbage-collected at commit). Put a [`row_exists`] guard before such
//! writes: the transaction then fails as a whole, which `TypedClient::transact`
//! reports as `DbError::RowGone` naming the table and row.
//!
//! Conversions follow RFC 7047 §5.1: every column value is a set or a map; a
//! scalar column is a set of exactly one atom, an optional column a set of zero
//! or one. A column missing from a row (update2 `initial`/`insert` omit columns
//! holding their default) decodes to the Rust default, which matches OVSDB's
//! defaults (empty string, 0, false, empty set/map).

#[cfg(feature = "client")]
mod client;
mod column;
mod compat;
mod datum;
mod ops;
mod store;

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

pub use crate::value::{Atom, Row, Uuid, Value};
#[cfg(feature = "client")]
pub use client::{DbError, TypedClient};
pub use column::{Clause, Column, Function, MutationSpec, Mutator, Where};
pub use compat::{compare_schemas, Compat, CompatError, TypeMismatch};
pub use datum::{Atomic, Datum};
pub use ops::{
    delete, insert, mutate, row_exists, select, update, wait, Delete, Insert, Mutate, OpError,
    Select, TypedOp, Update, Wait,
};
pub use store::{column_index, index_name, name_index, TypedStore};

/// A table of a generated model.
///
/// Implemented by every generated row struct; converts to and from the core's
/// untyped [`Row`].
pub trait Table: Sized + Clone + fmt::Debug + Default + PartialEq + Send + Sync + 'static {
    /// The table name as the server spells it.
    const TABLE_NAME: &'static str;
    /// Whether the table is a root table (non-root rows nobody references are
    /// garbage-collected at commit).
    const IS_ROOT: bool;
    /// Names of the schema columns (without `_uuid`/`_version`).
    const COLUMNS: &'static [&'static str];
    /// Unique indexes of the schema.
    const INDEXES: &'static [&'static [&'static str]];
    /// The implicit `_uuid` column, for generic code (generated structs also
    /// have an inherent `ROW_UUID`).
    const ROW_UUID_COLUMN: Column<Self, RowId<Self>> = Column::new("_uuid");

    /// Every column with its value.
    fn to_columns(&self) -> ColumnValues;

    /// Decodes a row; missing columns take their default.
    fn from_columns(row: &ColumnSource<'_>) -> Result<Self, DecodeError>;

    /// The untyped row holding every column.
    fn to_row(&self) -> Row {
        self.to_columns().into_row()
    }

    /// Decodes an untyped row.
    fn from_row(row: &Row) -> Result<Self, DecodeError> {
        Self::from_columns(&ColumnSource::new(Self::TABLE_NAME, row))
    }
}

/// A row value did not have the type the model expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {table}.{column}: {reason}")]
pub struct DecodeError {
    /// Table of the offending column.
    pub table: &'static str,
    /// The offending column.
    pub column: &'static str,
    /// What was wrong with its value.
    pub reason: String,
}

/// The column values of one typed row, in the order the generated code pushes them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnValues {
    values: Vec<(&'static str, Value)>,
}

impl ColumnValues {
    /// An empty list with room for `n` columns.
    pub fn with_capacity(n: usize) -> Self {
        ColumnValues {
            values: Vec::with_capacity(n),
        }
    }

    /// Appends a column.
    pub fn push<V: Datum>(&mut self, column: &'static str, value: &V) {
        self.values.push((column, value.to_value()));
    }

    /// The columns and their values.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.values.iter().map(|(c, v)| (*c, v))
    }

    /// Drops the columns whose value is an empty set or map (their default).
    pub fn without_empty(mut self) -> Self {
        self.values.retain(|(_, value)| !value.is_empty());
        self
    }

    /// The untyped row.
    pub fn into_row(self) -> Row {
        self.values
            .into_iter()
            .map(|(c, v)| (Arc::<str>::from(c), v))
            .collect()
    }
}

/// A row being decoded: the untyped row plus its table name for error messages.
#[derive(Debug, Clone, Copy)]
pub struct ColumnSource<'a> {
    table: &'static str,
    row: &'a Row,
}

impl<'a> ColumnSource<'a> {
    /// Wraps `row` of `table`.
    pub fn new(table: &'static str, row: &'a Row) -> Self {
        ColumnSource { table, row }
    }

    /// Decodes `column`, or its default if the row lacks it.
    pub fn get<V: Datum + Default>(&self, column: &'static str) -> Result<V, DecodeError> {
        match self.row.get(column) {
            None => Ok(V::default()),
            Some(value) => V::from_value(value).map_err(|reason| DecodeError {
                table: self.table,
                column,
                reason,
            }),
        }
    }
}

/// The uuid of a row of table `T`: a uuid that cannot be mixed up with a row of
/// another table.
pub struct RowId<T> {
    uuid: Uuid,
    table: PhantomData<fn() -> T>,
}

impl<T> RowId<T> {
    /// Wraps a uuid known to name a row of `T`.
    pub const fn new(uuid: Uuid) -> Self {
        RowId {
            uuid,
            table: PhantomData,
        }
    }

    /// A fresh random id, for inserting a row under a caller-chosen uuid.
    pub fn random() -> Self {
        RowId::new(Uuid::new_random())
    }

    /// The uuid.
    pub const fn uuid(&self) -> Uuid {
        self.uuid
    }
}

impl<T> Clone for RowId<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for RowId<T> {}
impl<T> PartialEq for RowId<T> {
    fn eq(&self, other: &Self) -> bool {
        self.uuid == other.uuid
    }
}
impl<T> Eq for RowId<T> {}
impl<T> PartialOrd for RowId<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for RowId<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.uuid.cmp(&other.uuid)
    }
}
impl<T> std::hash::Hash for RowId<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.uuid.hash(state)
    }
}
impl<T> Default for RowId<T> {
    /// The nil uuid (a required reference not yet set).
    fn default() -> Self {
        RowId::new(Uuid::NIL)
    }
}
impl<T> fmt::Debug for RowId<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RowId({})", self.uuid)
    }
}
impl<T> fmt::Display for RowId<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.uuid, f)
    }
}
impl<T> From<Uuid> for RowId<T> {
    fn from(uuid: Uuid) -> Self {
        RowId::new(uuid)
    }
}

/// A typed row together with its uuid, as read from a cache or a select.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored<T> {
    /// The row's `_uuid`.
    pub id: RowId<T>,
    /// The column values.
    pub row: T,
}

impl<T> std::ops::Deref for Stored<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.row
    }
}

impl<T: Table> Stored<T> {
    /// Decodes an untyped row that carries its `_uuid` column.
    pub fn from_row(row: &Row) -> Result<Self, DecodeError> {
        let id = row.uuid().ok_or(DecodeError {
            table: T::TABLE_NAME,
            column: "_uuid",
            reason: "row has no _uuid".to_string(),
        })?;
        Ok(Stored {
            id: RowId::new(id),
            row: T::from_row(row)?,
        })
    }
}

/// Implements [`Atomic`] and [`Datum`] for a generated string enum that has
/// `as_str()` and `From<&str>`.
#[macro_export]
macro_rules! string_enum_datum {
    ($ty:ty) => {
        impl $crate::typed::Atomic for $ty {
            fn to_atom(&self) -> $crate::typed::Atom {
                $crate::typed::Atom::from(self.as_str())
            }
            fn from_atom(atom: &$crate::typed::Atom) -> ::std::result::Result<Self, String> {
                atom.as_str()
                    .map(<$ty>::from)
                    .ok_or_else(|| format!("expected a string, found {atom}"))
            }
        }
        impl $crate::typed::Datum for $ty {
            fn to_value(&self) -> $crate::typed::Value {
                $crate::typed::datum_scalar(self)
            }
            fn from_value(value: &$crate::typed::Value) -> ::std::result::Result<Self, String> {
                $crate::typed::datum_from_scalar(value)
            }
        }
        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

pub use datum::{datum_from_scalar, datum_scalar};

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::ColumnValues;

    #[test]
    fn without_empty_keeps_set_columns_and_scalars() {
        let mut columns = ColumnValues::with_capacity(4);
        columns.push("name", &"p1".to_string());
        columns.push("tag", &None::<i64>);
        columns.push("addresses", &BTreeSet::<String>::new());
        columns.push(
            "options",
            &BTreeMap::from([("k".to_string(), "v".to_string())]),
        );
        let row = columns.without_empty().into_row();
        let kept: Vec<&str> = row.columns().collect();
        assert_eq!(kept, ["name", "options"]);
    }
}
