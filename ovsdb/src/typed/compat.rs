//! Schema compatibility between a generated model and the server it talks to.
//!
//! Real clusters run other OVN/OVS versions than the schema a model was
//! generated from. At connect the client compares the two
//! ([`compare_schemas`]):
//!
//! - columns (and tables) the server lacks are left out of what is sent — an
//!   insert or update simply does not set them; a condition or mutation on
//!   them is an error, since leaving it out would change its meaning;
//! - columns the server adds are ignored (decoding skips unknown columns);
//! - a column whose type changed shape (atomic type, set vs map, scalar vs
//!   optional vs set, reference target) is a [`CompatError::TypeMismatch`].

use std::collections::BTreeSet;

use crate::schema::{ColumnType, DatabaseSchema, SchemaError};
use crate::value::Row;

/// One column whose type differs in shape between model and server.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeMismatch {
    /// Table.
    pub table: String,
    /// Column.
    pub column: String,
    /// Type in the model's schema.
    pub model: ColumnType,
    /// Type on the server.
    pub server: ColumnType,
}

/// Why a model cannot be used with a server.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompatError {
    /// The model's embedded schema does not parse (a generator bug).
    #[error("model schema is invalid: {0}")]
    ModelSchema(#[source] SchemaError),
    /// The server serves another database.
    #[error("model is for database {model:?} but the server schema is for {server:?}")]
    WrongDatabase {
        /// Database of the model.
        model: String,
        /// Database of the server schema.
        server: String,
    },
    /// Columns both have, with incompatible types.
    #[error("server schema {server_version} is incompatible with the model (schema {model_version}): {}", describe(.mismatches))]
    TypeMismatch {
        /// Version of the model's schema.
        model_version: String,
        /// Version of the server's schema.
        server_version: String,
        /// Every mismatching column.
        mismatches: Vec<TypeMismatch>,
    },
}

fn describe(mismatches: &[TypeMismatch]) -> String {
    mismatches
        .iter()
        .map(|m| format!("column {}.{} changed type", m.table, m.column))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the model may send to one server: the model's tables and columns the
/// server lacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compat {
    missing_tables: BTreeSet<String>,
    missing_columns: BTreeSet<(String, String)>,
    extra_columns: usize,
}

/// Compares the model's schema (`model_json`, the generated `SCHEMA_JSON`)
/// with the server's.
pub fn compare_schemas(model_json: &str, server: &DatabaseSchema) -> Result<Compat, CompatError> {
    let model = DatabaseSchema::from_json_str(model_json).map_err(CompatError::ModelSchema)?;
    if model.name != server.name {
        return Err(CompatError::WrongDatabase {
            model: model.name,
            server: server.name.clone(),
        });
    }
    let diff = model.compare(server);
    if !diff.type_mismatches.is_empty() {
        return Err(CompatError::TypeMismatch {
            model_version: model.version,
            server_version: server.version.clone(),
            mismatches: diff
                .type_mismatches
                .into_iter()
                .map(|m| TypeMismatch {
                    table: m.table,
                    column: m.column,
                    model: m.left,
                    server: m.right,
                })
                .collect(),
        });
    }
    Ok(Compat {
        missing_tables: diff.tables_only_in_left.into_iter().collect(),
        missing_columns: diff.columns_only_in_left.into_iter().collect(),
        extra_columns: diff.columns_only_in_right.len(),
    })
}

impl Compat {
    /// Model and server agree on everything the model has.
    pub fn identical() -> Self {
        Compat::default()
    }

    /// Whether the server has `table`.
    pub fn has_table(&self, table: &str) -> bool {
        !self.missing_tables.contains(table)
    }

    /// Whether the server has `table.column` (`_uuid`/`_version` always exist).
    pub fn has_column(&self, table: &str, column: &str) -> bool {
        self.has_table(table)
            && !self
                .missing_columns
                .contains(&(table.to_string(), column.to_string()))
    }

    /// `(table, column)` pairs of the model the server lacks.
    pub fn missing_columns(&self) -> impl Iterator<Item = (&str, &str)> {
        self.missing_columns
            .iter()
            .map(|(t, c)| (t.as_str(), c.as_str()))
    }

    /// Tables of the model the server lacks.
    pub fn missing_tables(&self) -> impl Iterator<Item = &str> {
        self.missing_tables.iter().map(String::as_str)
    }

    /// How many columns the server has that the model does not know (ignored).
    pub fn extra_column_count(&self) -> usize {
        self.extra_columns
    }

    /// `row` without the columns the server lacks.
    pub fn filter_row(&self, table: &str, row: Row) -> Row {
        if self.missing_columns.is_empty() {
            return row;
        }
        let mut row = row;
        let drop: Vec<String> = row
            .columns()
            .filter(|c| !self.has_column(table, c))
            .map(str::to_string)
            .collect();
        for column in drop {
            row.remove(&column);
        }
        row
    }
}
