//! Database schemas: the `.ovsschema` documents of RFC 7047 section 3.2, plus the Open
//! vSwitch extensions (`indexes`, `isRoot`, `ephemeral`, `mutable`).
//!
//! ```text
//! <database-schema>  {"name", "version", "cksum"?, "tables": {<table-name>: <table-schema>}}
//! <table-schema>     {"columns": {<id>: <column-schema>}, "maxRows"?, "isRoot"?, "indexes"?: [[<column>...]...]}
//! <column-schema>    {"type": <type>, "ephemeral"?, "mutable"?}
//! <type>             <atomic-type> | {"key": <base-type>, "value"?: <base-type>, "min"?: 0|1, "max"?: <n>|"unlimited"}
//! <base-type>        <atomic-type> | {"type": <atomic-type>, "enum"?: <value>,
//!                                     "minInteger"?, "maxInteger"?, "minReal"?, "maxReal"?,
//!                                     "minLength"?, "maxLength"?, "refTable"?, "refType"?: "strong"|"weak"}
//! ```
//!
//! Every table also has the implicit columns `_uuid` and `_version` (scalar uuids); they are
//! not listed in `columns` but [`TableSchema::column`] knows them.

mod compare;
pub(crate) mod json;
mod server;
mod validate;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use crate::value::{Atom, AtomType, Set, Value};

pub use compare::{ColumnMismatch, SchemaDiff};
pub use json::SchemaError;
pub use server::SERVER_SCHEMA_JSON;
pub use validate::{ValidationError, ValueError};

/// Strong references keep their target alive and must not dangle; weak references are
/// silently removed when their target goes away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RefType {
    /// `"strong"` (the default).
    #[default]
    Strong,
    /// `"weak"`.
    Weak,
}

/// An atomic type with its constraints (`<base-type>`).
#[derive(Debug, Clone, PartialEq)]
pub struct BaseType {
    /// The atomic type.
    pub atom_type: AtomType,
    /// The allowed values, if the type is an enumeration.
    pub enum_values: Option<Set>,
    /// Inclusive lower bound of an integer.
    pub min_integer: Option<i64>,
    /// Inclusive upper bound of an integer.
    pub max_integer: Option<i64>,
    /// Inclusive lower bound of a real.
    pub min_real: Option<f64>,
    /// Inclusive upper bound of a real.
    pub max_real: Option<f64>,
    /// Minimum string length in bytes.
    pub min_length: Option<u64>,
    /// Maximum string length in bytes.
    pub max_length: Option<u64>,
    /// The table a uuid refers to.
    pub ref_table: Option<String>,
    /// Strength of the reference (meaningful only with `ref_table`).
    pub ref_type: RefType,
}

impl BaseType {
    /// An unconstrained base type.
    pub fn new(atom_type: AtomType) -> Self {
        BaseType {
            atom_type,
            enum_values: None,
            min_integer: None,
            max_integer: None,
            min_real: None,
            max_real: None,
            min_length: None,
            max_length: None,
            ref_table: None,
            ref_type: RefType::Strong,
        }
    }

    /// Whether the type has no constraint at all (and so is written as a bare type name).
    pub fn is_plain(&self) -> bool {
        *self == BaseType::new(self.atom_type)
    }
}

/// The type of a column (`<type>`): a set of `min..=max` atoms of `key`, or with `value` a
/// map of that many pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnType {
    /// The element type of a set, or the key type of a map.
    pub key: BaseType,
    /// The value type of a map; `None` for a set.
    pub value: Option<BaseType>,
    /// Minimum number of elements: 0 or 1.
    pub min: u64,
    /// Maximum number of elements; `None` means `"unlimited"`.
    pub max: Option<u64>,
}

impl ColumnType {
    /// A scalar of `atom_type` (exactly one element).
    pub fn scalar(atom_type: AtomType) -> Self {
        ColumnType {
            key: BaseType::new(atom_type),
            value: None,
            min: 1,
            max: Some(1),
        }
    }

    /// Whether this is a map type.
    pub fn is_map(&self) -> bool {
        self.value.is_some()
    }

    /// Whether this is a set of exactly one element.
    pub fn is_scalar(&self) -> bool {
        self.value.is_none() && self.min == 1 && self.max == Some(1)
    }

    /// Whether this is a set of zero or one element.
    pub fn is_optional(&self) -> bool {
        self.value.is_none() && self.min == 0 && self.max == Some(1)
    }

    /// Whether at most one element is allowed (`max` is 1).
    pub fn is_single(&self) -> bool {
        self.max == Some(1)
    }

    /// The empty value of this type: the empty map for a map column, else the empty set
    /// (what `clear` writes).
    pub fn empty_value(&self) -> Value {
        if self.is_map() {
            Value::empty_map()
        } else {
            Value::empty_set()
        }
    }

    /// The default value of a column of this type: the empty set or map, or for a scalar
    /// the type's default atom (0, 0.0, false, "", the nil uuid). An `update2`
    /// `initial`/`insert` row leaves out columns that hold their default.
    pub fn default_value(&self) -> Value {
        if self.is_map() {
            Value::empty_map()
        } else if self.min == 1 {
            Value::scalar(self.key.atom_type.default_atom())
        } else {
            Value::empty_set()
        }
    }
}

/// A column of a table (`<column-schema>`).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSchema {
    /// The column's name (shared with decoded rows).
    pub name: Arc<str>,
    /// The column's type.
    pub type_: ColumnType,
    /// Whether the column is not persisted (`"ephemeral": true`).
    pub ephemeral: bool,
    /// Whether the column may change after insert (`"mutable"`, default true).
    pub mutable: bool,
}

impl ColumnSchema {
    /// A mutable, persistent column.
    pub fn new(name: impl Into<Arc<str>>, type_: ColumnType) -> Self {
        ColumnSchema {
            name: name.into(),
            type_,
            ephemeral: false,
            mutable: true,
        }
    }
}

static UUID_COLUMN: LazyLock<ColumnSchema> = LazyLock::new(|| ColumnSchema {
    mutable: false,
    ..ColumnSchema::new("_uuid", ColumnType::scalar(AtomType::Uuid))
});
static VERSION_COLUMN: LazyLock<ColumnSchema> = LazyLock::new(|| ColumnSchema {
    mutable: false,
    ..ColumnSchema::new("_version", ColumnType::scalar(AtomType::Uuid))
});

/// A table (`<table-schema>`).
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    /// The table's name.
    pub name: Arc<str>,
    /// The declared columns (without `_uuid` and `_version`).
    pub columns: BTreeMap<String, ColumnSchema>,
    /// Maximum number of rows (`"maxRows"`).
    pub max_rows: Option<u64>,
    /// Whether rows survive without being referenced (`"isRoot"`, default false).
    pub is_root: bool,
    /// Sets of columns whose combined values must be unique across rows.
    pub indexes: Vec<Vec<String>>,
}

impl TableSchema {
    /// A declared or implicit (`_uuid`, `_version`) column.
    pub fn column(&self, name: &str) -> Option<&ColumnSchema> {
        match name {
            "_uuid" => Some(&UUID_COLUMN),
            "_version" => Some(&VERSION_COLUMN),
            _ => self.columns.get(name),
        }
    }
}

/// A database schema (`<database-schema>`).
#[derive(Debug, Clone, PartialEq)]
pub struct DatabaseSchema {
    /// The database name, e.g. `OVN_Northbound`.
    pub name: String,
    /// The schema version, `x.y.z`.
    pub version: String,
    /// The checksum comment Open vSwitch keeps in its schemas.
    pub cksum: Option<String>,
    /// Tables by name.
    pub tables: BTreeMap<String, TableSchema>,
}

impl DatabaseSchema {
    /// A table by name.
    pub fn table(&self, name: &str) -> Option<&TableSchema> {
        self.tables.get(name)
    }

    /// The `_Server` database schema built into ovsdb-server (see [`SERVER_SCHEMA_JSON`]).
    pub fn server() -> DatabaseSchema {
        DatabaseSchema::from_json_str(SERVER_SCHEMA_JSON)
            .expect("the embedded _Server schema parses")
    }
}

/// Whether `atom` is one of the values of an enumerated base type (true if not an enum).
pub(crate) fn enum_allows(base: &BaseType, atom: &Atom) -> bool {
    base.enum_values.as_ref().is_none_or(|e| e.contains(atom))
}

#[cfg(test)]
mod tests;
