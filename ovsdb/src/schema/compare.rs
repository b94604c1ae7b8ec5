//! Comparing two schemas, e.g. the one a typed model was generated from with the one a
//! server reports.

use super::{BaseType, ColumnType, DatabaseSchema};

/// A column whose type differs in shape between two schemas.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMismatch {
    /// The table.
    pub table: String,
    /// The column.
    pub column: String,
    /// Its type in the first schema.
    pub left: ColumnType,
    /// Its type in the second schema.
    pub right: ColumnType,
}

/// The differences between two schemas (`left` and `right`, usually model and server).
///
/// Only differences that change how values are stored count as type mismatches: atomic
/// types, set versus map, scalar versus optional versus set, and `refTable`. Constraint
/// changes (a longer enum, a wider integer range, a larger `max`) are normal schema
/// evolution and are not reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaDiff {
    /// Tables only `left` has.
    pub tables_only_in_left: Vec<String>,
    /// Tables only `right` has.
    pub tables_only_in_right: Vec<String>,
    /// `(table, column)` pairs only `left` has (within tables both have).
    pub columns_only_in_left: Vec<(String, String)>,
    /// `(table, column)` pairs only `right` has (within tables both have).
    pub columns_only_in_right: Vec<(String, String)>,
    /// Columns both have, with types of a different shape.
    pub type_mismatches: Vec<ColumnMismatch>,
}

impl SchemaDiff {
    /// Whether the schemas agree on tables, columns and type shapes.
    pub fn is_empty(&self) -> bool {
        *self == SchemaDiff::default()
    }

    /// Whether everything `left` uses exists in `right` with the same shape (extra tables
    /// and columns in `right`, e.g. a newer server, are fine).
    pub fn left_fits_right(&self) -> bool {
        self.tables_only_in_left.is_empty()
            && self.columns_only_in_left.is_empty()
            && self.type_mismatches.is_empty()
    }
}

#[derive(PartialEq)]
enum Shape {
    Scalar,
    Optional,
    Set,
    Map,
}

fn shape(ty: &ColumnType) -> Shape {
    if ty.is_map() {
        Shape::Map
    } else if ty.is_scalar() {
        Shape::Scalar
    } else if ty.is_optional() {
        Shape::Optional
    } else {
        Shape::Set
    }
}

fn same_base(a: &BaseType, b: &BaseType) -> bool {
    a.atom_type == b.atom_type && a.ref_table == b.ref_table
}

fn same_shape(a: &ColumnType, b: &ColumnType) -> bool {
    shape(a) == shape(b)
        && same_base(&a.key, &b.key)
        && match (&a.value, &b.value) {
            (Some(x), Some(y)) => same_base(x, y),
            (None, None) => true,
            _ => false,
        }
}

impl DatabaseSchema {
    /// Lists what differs between `self` (left) and `other` (right).
    pub fn compare(&self, other: &DatabaseSchema) -> SchemaDiff {
        let mut diff = SchemaDiff::default();
        for (name, table) in &self.tables {
            let Some(other_table) = other.tables.get(name) else {
                diff.tables_only_in_left.push(name.clone());
                continue;
            };
            for (column, schema) in &table.columns {
                match other_table.columns.get(column) {
                    None => diff
                        .columns_only_in_left
                        .push((name.clone(), column.clone())),
                    Some(o) if !same_shape(&schema.type_, &o.type_) => {
                        diff.type_mismatches.push(ColumnMismatch {
                            table: name.clone(),
                            column: column.clone(),
                            left: schema.type_.clone(),
                            right: o.type_.clone(),
                        })
                    }
                    Some(_) => {}
                }
            }
            for column in other_table.columns.keys() {
                if !table.columns.contains_key(column) {
                    diff.columns_only_in_right
                        .push((name.clone(), column.clone()));
                }
            }
        }
        for name in other.tables.keys() {
            if !self.tables.contains_key(name) {
                diff.tables_only_in_right.push(name.clone());
            }
        }
        diff
    }
}
