//! Typed column handles and what is built from them: conditions (RFC 7047
//! §5.1 `<condition>`) and mutations (`<mutation>`).
//!
//! `Column<T, V>` names a column of table `T` whose Rust type is `V`; the
//! compiler then rejects comparing `Logical_Switch.name` with an integer or
//! inserting a `RowId<LogicalRouterPort>` into `Logical_Switch.ports`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::marker::PhantomData;

use super::{Atomic, Datum};
pub use crate::operation::{Function, Mutator};
use crate::value::{Atom, Value};

/// A column of table `T` holding Rust values of type `V`.
pub struct Column<T, V> {
    name: &'static str,
    types: PhantomData<fn() -> (T, V)>,
}

impl<T, V> Column<T, V> {
    /// The handle for column `name` (generated code only).
    pub const fn new(name: &'static str) -> Self {
        Column {
            name,
            types: PhantomData,
        }
    }

    /// The column name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

impl<T, V> Clone for Column<T, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, V> Copy for Column<T, V> {}
impl<T, V> fmt::Debug for Column<T, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Column({})", self.name)
    }
}

/// One `[column, function, value]` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    /// Column name.
    pub column: &'static str,
    /// The function.
    pub function: Function,
    /// The value compared with.
    pub value: Value,
}

/// A condition on rows of `T`: clauses that must all hold.
pub struct Where<T> {
    clauses: Vec<Clause>,
    table: PhantomData<fn() -> T>,
}

impl<T> Where<T> {
    /// No clause: every row.
    pub fn all() -> Self {
        Where {
            clauses: Vec::new(),
            table: PhantomData,
        }
    }

    /// Adds the clauses of `other` (logical and).
    pub fn and(mut self, other: Where<T>) -> Self {
        self.clauses.extend(other.clauses);
        self
    }

    /// The clauses.
    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }

    /// Consumes into the clauses.
    pub fn into_clauses(self) -> Vec<Clause> {
        self.clauses
    }

    fn one(column: &'static str, function: Function, value: Value) -> Self {
        Where {
            clauses: vec![Clause {
                column,
                function,
                value,
            }],
            table: PhantomData,
        }
    }
}

impl<T> Clone for Where<T> {
    fn clone(&self) -> Self {
        Where {
            clauses: self.clauses.clone(),
            table: PhantomData,
        }
    }
}
impl<T> fmt::Debug for Where<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.clauses).finish()
    }
}

impl<T, V: Datum> Column<T, V> {
    /// `column == value`.
    pub fn eq(&self, value: impl Into<V>) -> Where<T> {
        Where::one(self.name, Function::Equal, value.into().to_value())
    }

    /// `column != value`.
    pub fn ne(&self, value: impl Into<V>) -> Where<T> {
        Where::one(self.name, Function::NotEqual, value.into().to_value())
    }

    /// `column includes value` (every element/pair of `value` is in the column).
    pub fn includes(&self, value: impl Into<V>) -> Where<T> {
        Where::one(self.name, Function::Includes, value.into().to_value())
    }

    /// `column excludes value` (no element/pair of `value` is in the column).
    pub fn excludes(&self, value: impl Into<V>) -> Where<T> {
        Where::one(self.name, Function::Excludes, value.into().to_value())
    }

    /// A `column = value` assignment for an update.
    pub fn to(&self, value: impl Into<V>) -> (&'static str, Value) {
        (self.name, value.into().to_value())
    }
}

impl<T> Column<T, i64> {
    /// `column < value`.
    pub fn lt(&self, value: i64) -> Where<T> {
        Where::one(self.name, Function::LessThan, Value::scalar(value))
    }
    /// `column <= value`.
    pub fn le(&self, value: i64) -> Where<T> {
        Where::one(self.name, Function::LessThanOrEqual, Value::scalar(value))
    }
    /// `column > value`.
    pub fn gt(&self, value: i64) -> Where<T> {
        Where::one(self.name, Function::GreaterThan, Value::scalar(value))
    }
    /// `column >= value`.
    pub fn ge(&self, value: i64) -> Where<T> {
        Where::one(
            self.name,
            Function::GreaterThanOrEqual,
            Value::scalar(value),
        )
    }
}

/// One `[column, mutator, value]` mutation.
#[derive(Debug, Clone, PartialEq)]
pub struct MutationSpec {
    /// Column name.
    pub column: &'static str,
    /// The mutator.
    pub mutator: Mutator,
    /// The operand.
    pub value: Value,
}

impl MutationSpec {
    fn new(column: &'static str, mutator: Mutator, value: Value) -> Self {
        MutationSpec {
            column,
            mutator,
            value,
        }
    }
}

fn set_value<A: Atomic>(elements: impl IntoIterator<Item = A>) -> Value {
    Value::Set(elements.into_iter().map(|a| a.to_atom()).collect())
}

impl<T, A: Atomic + Ord> Column<T, BTreeSet<A>> {
    /// Adds `elements` to the set.
    pub fn insert(&self, elements: impl IntoIterator<Item = A>) -> MutationSpec {
        MutationSpec::new(self.name, Mutator::Insert, set_value(elements))
    }
    /// Removes `elements` from the set.
    pub fn delete(&self, elements: impl IntoIterator<Item = A>) -> MutationSpec {
        MutationSpec::new(self.name, Mutator::Delete, set_value(elements))
    }
    /// `column includes {element}`.
    pub fn contains(&self, element: A) -> Where<T> {
        Where::one(self.name, Function::Includes, set_value([element]))
    }
}

impl<T, A: Atomic> Column<T, Option<A>> {
    /// Sets the optional value if it is empty (a set of at most one element).
    pub fn insert(&self, element: A) -> MutationSpec {
        MutationSpec::new(self.name, Mutator::Insert, set_value([element]))
    }
    /// Clears the optional value if it equals `element`.
    pub fn delete(&self, element: A) -> MutationSpec {
        MutationSpec::new(self.name, Mutator::Delete, set_value([element]))
    }
}

impl<T, K: Atomic + Ord, V: Atomic> Column<T, BTreeMap<K, V>> {
    /// Inserts pairs whose key is not in the map yet (OVSDB never overwrites on insert).
    pub fn insert(&self, pairs: impl IntoIterator<Item = (K, V)>) -> MutationSpec {
        let map = pairs
            .into_iter()
            .map(|(k, v)| (k.to_atom(), v.to_atom()))
            .collect();
        MutationSpec::new(self.name, Mutator::Insert, Value::Map(map))
    }
    /// Removes the pairs with these keys, whatever their value.
    pub fn delete_keys(&self, keys: impl IntoIterator<Item = K>) -> MutationSpec {
        MutationSpec::new(self.name, Mutator::Delete, set_value(keys))
    }
    /// Sets these pairs, replacing existing values: a key delete then an insert.
    pub fn set_keys(&self, pairs: impl IntoIterator<Item = (K, V)>) -> [MutationSpec; 2] {
        let pairs: Vec<(Atom, Atom)> = pairs
            .into_iter()
            .map(|(k, v)| (k.to_atom(), v.to_atom()))
            .collect();
        let keys = Value::Set(pairs.iter().map(|(k, _)| k.clone()).collect());
        [
            MutationSpec::new(self.name, Mutator::Delete, keys),
            MutationSpec::new(
                self.name,
                Mutator::Insert,
                Value::Map(pairs.into_iter().collect()),
            ),
        ]
    }
    /// `column includes {key: value}`.
    pub fn contains_pair(&self, key: K, value: V) -> Where<T> {
        let map = [(key.to_atom(), value.to_atom())].into_iter().collect();
        Where::one(self.name, Function::Includes, Value::Map(map))
    }
}

impl<T> Column<T, i64> {
    /// Adds `delta` to the integer.
    pub fn add(&self, delta: i64) -> MutationSpec {
        MutationSpec::new(self.name, Mutator::Add, Value::scalar(delta))
    }
}
