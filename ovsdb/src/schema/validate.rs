//! Checking values and rows against a schema before they go to the server.
//!
//! The rules are those ovsdb-server applies (`lib/ovsdb-data.c`): the atomic type (a named
//! uuid counts as a uuid), enum membership, integer and real ranges, string length in
//! characters, and the number of elements of a set or map.

use super::{enum_allows, BaseType, ColumnType, DatabaseSchema, TableSchema};
use crate::value::{Atom, AtomType, Row, Value};

/// Why a value does not fit a column type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// An atom of the wrong type.
    #[error("expected {expected}, found {found}")]
    TypeMismatch {
        /// The column's atomic type.
        expected: AtomType,
        /// The offending atom (wire JSON).
        found: String,
    },
    /// A set where the column holds a map, or the other way round.
    #[error("expected a {expected}, found a {found}")]
    KindMismatch {
        /// `"map"` or `"set"`.
        expected: &'static str,
        /// `"map"` or `"set"`.
        found: &'static str,
    },
    /// An atom outside an enumeration.
    #[error("{value} is not one of the allowed values {allowed}")]
    NotInEnum {
        /// The offending atom (wire JSON).
        value: String,
        /// The enumeration (wire JSON).
        allowed: String,
    },
    /// An integer outside `minInteger..=maxInteger`.
    #[error("integer {value} is out of range {}..={}", bound(.min), bound(.max))]
    IntegerOutOfRange {
        /// The integer.
        value: i64,
        /// `minInteger`.
        min: Option<i64>,
        /// `maxInteger`.
        max: Option<i64>,
    },
    /// A real outside `minReal..=maxReal` (or not finite).
    #[error("real {value} is out of range {}..={}", bound(.min), bound(.max))]
    RealOutOfRange {
        /// The real.
        value: f64,
        /// `minReal`.
        min: Option<f64>,
        /// `maxReal`.
        max: Option<f64>,
    },
    /// A string whose length (in characters) is outside `minLength..=maxLength`.
    #[error("string {value:?} has length {length}, allowed {}..={}", bound(.min), bound(.max))]
    StringLength {
        /// The string.
        value: String,
        /// Its length in characters.
        length: u64,
        /// `minLength`.
        min: Option<u64>,
        /// `maxLength`.
        max: Option<u64>,
    },
    /// A condition function or mutator that does not apply to the column's type (ordering
    /// and arithmetic need integer or real columns).
    #[error("{operator} does not apply to a column of type {column_type}")]
    NotApplicable {
        /// The function or mutator, as on the wire.
        operator: &'static str,
        /// The column type (schema JSON).
        column_type: String,
    },
    /// A set or map with too few or too many elements.
    #[error("{length} elements, allowed {min}..={}", bound(.max))]
    Size {
        /// The number of elements.
        length: u64,
        /// The column's `min`.
        min: u64,
        /// The column's `max` (`None`: unlimited).
        max: Option<u64>,
    },
}

fn bound<T: std::fmt::Display>(b: &Option<T>) -> String {
    b.as_ref().map_or_else(String::new, ToString::to_string)
}

/// A value, row or operation that does not fit the schema; names table, column and value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// The schema has no such table.
    #[error("unknown table {table:?}")]
    UnknownTable {
        /// The table.
        table: String,
    },
    /// The table has no such column.
    #[error("table {table}: unknown column {column:?}")]
    UnknownColumn {
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
    /// A value that does not fit its column.
    #[error("table {table}, column {column}: invalid value {value}: {reason}")]
    InvalidValue {
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// The offending value (wire JSON).
        value: String,
        /// What is wrong with it (boxed to keep the error small).
        reason: Box<ValueError>,
    },
    /// A write to `_uuid`/`_version`, or an update/mutation of a column declared
    /// `"mutable": false`.
    #[error("table {table}: column {column} cannot be written")]
    ReadOnlyColumn {
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
}

impl BaseType {
    /// Checks one atom against this base type (type, enum, range, length).
    pub fn check_atom(&self, atom: &Atom) -> Result<(), ValueError> {
        if atom.atom_type() != self.atom_type {
            return Err(ValueError::TypeMismatch {
                expected: self.atom_type,
                found: atom.to_string(),
            });
        }
        if !enum_allows(self, atom) {
            let allowed = self
                .enum_values
                .as_ref()
                .map(|e| Value::Set(e.clone()).to_json());
            return Err(ValueError::NotInEnum {
                value: atom.to_string(),
                allowed: allowed.unwrap_or_default().to_string(),
            });
        }
        match atom {
            Atom::Integer(i)
                if self.min_integer.is_some_and(|min| *i < min)
                    || self.max_integer.is_some_and(|max| *i > max) =>
            {
                return Err(ValueError::IntegerOutOfRange {
                    value: *i,
                    min: self.min_integer,
                    max: self.max_integer,
                });
            }
            Atom::Real(r) => {
                let outside = !r.is_finite()
                    || self.min_real.is_some_and(|min| *r < min)
                    || self.max_real.is_some_and(|max| *r > max);
                if outside {
                    return Err(ValueError::RealOutOfRange {
                        value: *r,
                        min: self.min_real,
                        max: self.max_real,
                    });
                }
            }
            Atom::String(s) => {
                let length = s.chars().count() as u64;
                if self.min_length.is_some_and(|min| length < min)
                    || self.max_length.is_some_and(|max| length > max)
                {
                    return Err(ValueError::StringLength {
                        value: s.clone(),
                        length,
                        min: self.min_length,
                        max: self.max_length,
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl ColumnType {
    /// Checks a whole column value: kind (set/map), number of elements and every atom.
    pub fn check_value(&self, value: &Value) -> Result<(), ValueError> {
        self.check_atoms(value)?;
        let length = value.len() as u64;
        if length < self.min || self.max.is_some_and(|max| length > max) {
            return Err(ValueError::Size {
                length,
                min: self.min,
                max: self.max,
            });
        }
        Ok(())
    }

    /// Checks kind and atoms but not the number of elements: what a mutation's operand
    /// (`insert`/`delete` of some elements) must satisfy.
    pub fn check_atoms(&self, value: &Value) -> Result<(), ValueError> {
        match (value, &self.value) {
            (Value::Set(set), None) => set.iter().try_for_each(|a| self.key.check_atom(a)),
            (Value::Map(map), Some(value_type)) => map.iter().try_for_each(|(k, v)| {
                self.key.check_atom(k)?;
                value_type.check_atom(v)
            }),
            (Value::Set(_), Some(_)) => Err(ValueError::KindMismatch {
                expected: "map",
                found: "set",
            }),
            (Value::Map(_), None) => Err(ValueError::KindMismatch {
                expected: "set",
                found: "map",
            }),
        }
    }
}

impl TableSchema {
    /// Checks one column's value; `column` may be `_uuid`/`_version`.
    pub fn validate_value(&self, column: &str, value: &Value) -> Result<(), ValidationError> {
        let schema = self
            .column(column)
            .ok_or_else(|| ValidationError::UnknownColumn {
                table: self.name.to_string(),
                column: column.to_owned(),
            })?;
        schema
            .type_
            .check_value(value)
            .map_err(|reason| self.invalid(column, value, reason))
    }

    /// Checks every column of a row (columns left out are fine: they take defaults).
    pub fn validate_row(&self, row: &Row) -> Result<(), ValidationError> {
        row.iter()
            .try_for_each(|(column, value)| self.validate_value(column, value))
    }

    pub(crate) fn invalid(
        &self,
        column: &str,
        value: &Value,
        reason: ValueError,
    ) -> ValidationError {
        ValidationError::InvalidValue {
            table: self.name.to_string(),
            column: column.to_owned(),
            value: value.to_json().to_string(),
            reason: Box::new(reason),
        }
    }
}

impl DatabaseSchema {
    /// A table, or [`ValidationError::UnknownTable`].
    pub fn require_table(&self, table: &str) -> Result<&TableSchema, ValidationError> {
        self.table(table)
            .ok_or_else(|| ValidationError::UnknownTable {
                table: table.to_owned(),
            })
    }

    /// Checks a row of `table`.
    pub fn validate_row(&self, table: &str, row: &Row) -> Result<(), ValidationError> {
        self.require_table(table)?.validate_row(row)
    }

    /// Checks one value of `table.column`.
    pub fn validate_value(
        &self,
        table: &str,
        column: &str,
        value: &Value,
    ) -> Result<(), ValidationError> {
        self.require_table(table)?.validate_value(column, value)
    }
}
