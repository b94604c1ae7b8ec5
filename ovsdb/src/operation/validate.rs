//! Checking operations against a schema before sending them, so a bad table, column or
//! value is reported with its name instead of as a server-side "syntax error".

use super::{Condition, Function, Mutation, Mutator, Operation};
use crate::schema::{ColumnType, DatabaseSchema, TableSchema, ValidationError, ValueError};
use crate::value::{AtomType, Row, Value};

impl Operation {
    /// Checks tables, columns, values (type, enum, range, length, size), writes to
    /// read-only columns, and that mutators fit their column.
    pub fn validate(&self, schema: &DatabaseSchema) -> Result<(), ValidationError> {
        let Some(table) = self.table() else {
            return Ok(());
        };
        let table = schema.require_table(table)?;
        match self {
            Operation::Insert(op) => check_row(table, &op.row, false),
            Operation::Select(op) => {
                check_conditions(table, &op.conditions)?;
                op.columns
                    .iter()
                    .flatten()
                    .try_for_each(|c| known(table, c).map(drop))
            }
            Operation::Update(op) => {
                check_conditions(table, &op.conditions)?;
                check_row(table, &op.row, true)
            }
            Operation::Mutate(op) => {
                check_conditions(table, &op.conditions)?;
                op.mutations
                    .iter()
                    .try_for_each(|m| check_mutation(table, m))
            }
            Operation::Delete(op) => check_conditions(table, &op.conditions),
            Operation::Wait(op) => {
                check_conditions(table, &op.conditions)?;
                op.columns
                    .iter()
                    .try_for_each(|c| known(table, c).map(drop))?;
                op.rows.iter().try_for_each(|row| {
                    row.iter().try_for_each(|(column, value)| {
                        let ty = known(table, column)?;
                        ty.check_value(value)
                            .map_err(|e| table.invalid(column, value, e))
                    })
                })
            }
            _ => Ok(()),
        }
    }
}

/// Validates every operation; the error names the operation's index.
pub fn validate_all(
    ops: &[Operation],
    schema: &DatabaseSchema,
) -> Result<(), (usize, ValidationError)> {
    ops.iter()
        .enumerate()
        .try_for_each(|(i, op)| op.validate(schema).map_err(|e| (i, e)))
}

fn known<'a>(table: &'a TableSchema, column: &str) -> Result<&'a ColumnType, ValidationError> {
    table
        .column(column)
        .map(|c| &c.type_)
        .ok_or_else(|| ValidationError::UnknownColumn {
            table: table.name.to_string(),
            column: column.to_owned(),
        })
}

fn read_only(table: &TableSchema, column: &str) -> ValidationError {
    ValidationError::ReadOnlyColumn {
        table: table.name.to_string(),
        column: column.to_owned(),
    }
}

fn check_row(table: &TableSchema, row: &Row, is_update: bool) -> Result<(), ValidationError> {
    for (column, value) in row.iter() {
        let schema = table
            .column(column)
            .ok_or_else(|| ValidationError::UnknownColumn {
                table: table.name.to_string(),
                column: column.to_owned(),
            })?;
        if column.starts_with('_') || (is_update && !schema.mutable) {
            return Err(read_only(table, column));
        }
        schema
            .type_
            .check_value(value)
            .map_err(|e| table.invalid(column, value, e))?;
    }
    Ok(())
}

fn check_conditions(table: &TableSchema, conditions: &[Condition]) -> Result<(), ValidationError> {
    for condition in conditions {
        let Condition::Compare {
            column,
            function,
            value,
        } = condition
        else {
            continue;
        };
        let ty = known(table, column)?;
        let result = if function.is_ordering() {
            check_ordering(ty, *function, value)
        } else if matches!(function, Function::Equal | Function::NotEqual) {
            ty.check_value(value)
        } else {
            ty.check_atoms(value)
        };
        result.map_err(|e| table.invalid(column, value, e))?;
    }
    Ok(())
}

/// `<`, `<=`, `>`, `>=` need an integer or real column of at most one element and a
/// single-atom operand.
fn check_ordering(ty: &ColumnType, function: Function, value: &Value) -> Result<(), ValueError> {
    if ty.is_map()
        || !ty.is_single()
        || !matches!(ty.key.atom_type, AtomType::Integer | AtomType::Real)
    {
        return Err(not_applicable(function.as_str(), ty));
    }
    ty.check_atoms(value)?;
    if value.len() != 1 {
        return Err(ValueError::Size {
            length: value.len() as u64,
            min: 1,
            max: Some(1),
        });
    }
    Ok(())
}

fn check_mutation(table: &TableSchema, mutation: &Mutation) -> Result<(), ValidationError> {
    let Mutation {
        column,
        mutator,
        value,
    } = mutation;
    let schema = table
        .column(column)
        .ok_or_else(|| ValidationError::UnknownColumn {
            table: table.name.to_string(),
            column: column.clone(),
        })?;
    if column.starts_with('_') || !schema.mutable {
        return Err(read_only(table, column));
    }
    let ty = &schema.type_;
    let result = if mutator.is_arithmetic() {
        check_arithmetic(ty, *mutator, value)
    } else if *mutator == Mutator::Delete && ty.is_map() && value.as_set().is_some() {
        // Deleting from a map by keys: the operand is a set of keys.
        let keys = ColumnType {
            key: ty.key.clone(),
            value: None,
            min: 0,
            max: None,
        };
        keys.check_atoms(value)
    } else {
        ty.check_atoms(value)
    };
    result.map_err(|e| table.invalid(column, value, e))
}

fn not_applicable(operator: &'static str, ty: &ColumnType) -> ValueError {
    ValueError::NotApplicable {
        operator,
        column_type: crate::schema::json::column_type_to_json(ty).to_string(),
    }
}

/// Arithmetic applies to every element of an integer or real set (not maps); the operand
/// is one atom of the element type. Its range is not checked: only the result is.
fn check_arithmetic(ty: &ColumnType, mutator: Mutator, value: &Value) -> Result<(), ValueError> {
    let numeric = match ty.key.atom_type {
        AtomType::Integer => true,
        AtomType::Real => mutator != Mutator::Modulo,
        _ => false,
    };
    if ty.is_map() || !numeric {
        return Err(not_applicable(mutator.as_str(), ty));
    }
    match value.as_atom() {
        Some(atom) if atom.atom_type() == ty.key.atom_type => Ok(()),
        Some(atom) => Err(ValueError::TypeMismatch {
            expected: ty.key.atom_type,
            found: atom.to_string(),
        }),
        None => Err(ValueError::Size {
            length: value.len() as u64,
            min: 1,
            max: Some(1),
        }),
    }
}
