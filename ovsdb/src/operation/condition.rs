//! Conditions (`where` clauses) and mutations (RFC 7047 sections 5.1 and 5.2.4).

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeTuple, Serializer};
use serde::{Deserialize, Serialize};

use crate::value::Value;

/// A condition function: `==`, `!=`, `includes`, `excludes`, `<`, `<=`, `>`, `>=`.
///
/// The ordering functions apply to integer and real columns with at most one element
/// (false if the column is empty); `includes`/`excludes` test for a subset / disjoint set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Function {
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
    /// `includes`
    Includes,
    /// `excludes`
    Excludes,
    /// `<`
    LessThan,
    /// `<=`
    LessThanOrEqual,
    /// `>`
    GreaterThan,
    /// `>=`
    GreaterThanOrEqual,
}

impl Function {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Function::Equal => "==",
            Function::NotEqual => "!=",
            Function::Includes => "includes",
            Function::Excludes => "excludes",
            Function::LessThan => "<",
            Function::LessThanOrEqual => "<=",
            Function::GreaterThan => ">",
            Function::GreaterThanOrEqual => ">=",
        }
    }

    /// Whether this is one of `<`, `<=`, `>`, `>=`.
    pub fn is_ordering(self) -> bool {
        matches!(
            self,
            Function::LessThan
                | Function::LessThanOrEqual
                | Function::GreaterThan
                | Function::GreaterThanOrEqual
        )
    }
}

/// A string that is not a condition function or mutator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {name:?}")]
pub struct UnknownName {
    /// `"function"` or `"mutator"`.
    pub kind: &'static str,
    /// The string.
    pub name: String,
}

impl FromStr for Function {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "==" => Function::Equal,
            "!=" => Function::NotEqual,
            "includes" => Function::Includes,
            "excludes" => Function::Excludes,
            "<" => Function::LessThan,
            "<=" => Function::LessThanOrEqual,
            ">" => Function::GreaterThan,
            ">=" => Function::GreaterThanOrEqual,
            _ => {
                return Err(UnknownName {
                    kind: "function",
                    name: s.to_owned(),
                })
            }
        })
    }
}

impl fmt::Display for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One clause of a `where`: `[column, function, value]`, or a bare `true`/`false`
/// (accepted by ovsdb-server, mostly useful in `monitor_cond` where-clauses).
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `[column, function, value]`.
    Compare {
        /// The column (may be `_uuid`).
        column: String,
        /// The function.
        function: Function,
        /// The operand.
        value: Value,
    },
    /// `true` (matches every row) or `false` (none).
    Constant(bool),
}

impl Condition {
    /// `[column, function, value]`.
    pub fn new(column: impl Into<String>, function: Function, value: impl Into<Value>) -> Self {
        Condition::Compare {
            column: column.into(),
            function,
            value: value.into(),
        }
    }
    /// `[column, "==", value]`; `Condition::eq("_uuid", uuid)` is the fast path of the server.
    pub fn eq(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Function::Equal, value)
    }
    /// `[column, "!=", value]`.
    pub fn ne(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Function::NotEqual, value)
    }
    /// `[column, "includes", value]`: the column contains all of `value`.
    pub fn includes(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Function::Includes, value)
    }
    /// `[column, "excludes", value]`: the column contains none of `value`.
    pub fn excludes(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Function::Excludes, value)
    }
    /// `[column, "<", value]`.
    pub fn lt(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Function::LessThan, value)
    }
    /// `[column, "<=", value]`.
    pub fn le(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Function::LessThanOrEqual, value)
    }
    /// `[column, ">", value]`.
    pub fn gt(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Function::GreaterThan, value)
    }
    /// `[column, ">=", value]`.
    pub fn ge(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Function::GreaterThanOrEqual, value)
    }
}

/// A mutator: `+=`, `-=`, `*=`, `/=`, `%=` (integers and reals; `%=` integers only) and
/// `insert`, `delete` (sets and maps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mutator {
    /// `+=`
    Add,
    /// `-=`
    Subtract,
    /// `*=`
    Multiply,
    /// `/=` (by zero: `domain error`)
    Divide,
    /// `%=` (by zero: `domain error`)
    Modulo,
    /// `insert`: add elements (for a map, pairs whose key is not there yet).
    Insert,
    /// `delete`: remove elements (for a map, pairs, or keys given as a set).
    Delete,
}

impl Mutator {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mutator::Add => "+=",
            Mutator::Subtract => "-=",
            Mutator::Multiply => "*=",
            Mutator::Divide => "/=",
            Mutator::Modulo => "%=",
            Mutator::Insert => "insert",
            Mutator::Delete => "delete",
        }
    }

    /// Whether this is an arithmetic mutator.
    pub fn is_arithmetic(self) -> bool {
        !matches!(self, Mutator::Insert | Mutator::Delete)
    }
}

impl FromStr for Mutator {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "+=" => Mutator::Add,
            "-=" => Mutator::Subtract,
            "*=" => Mutator::Multiply,
            "/=" => Mutator::Divide,
            "%=" => Mutator::Modulo,
            "insert" => Mutator::Insert,
            "delete" => Mutator::Delete,
            _ => {
                return Err(UnknownName {
                    kind: "mutator",
                    name: s.to_owned(),
                })
            }
        })
    }
}

impl fmt::Display for Mutator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One mutation: `[column, mutator, value]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutation {
    /// The column.
    pub column: String,
    /// The mutator.
    pub mutator: Mutator,
    /// The operand.
    pub value: Value,
}

impl Mutation {
    /// `[column, mutator, value]`.
    pub fn new(column: impl Into<String>, mutator: Mutator, value: impl Into<Value>) -> Self {
        Mutation {
            column: column.into(),
            mutator,
            value: value.into(),
        }
    }
    /// `[column, "insert", value]`, e.g. add a port uuid to `Logical_Switch.ports`.
    pub fn insert(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Mutator::Insert, value)
    }
    /// `[column, "delete", value]`.
    pub fn delete(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Mutator::Delete, value)
    }
    /// `[column, "+=", value]`.
    pub fn add(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Mutator::Add, value)
    }
    /// `[column, "-=", value]`.
    pub fn subtract(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Mutator::Subtract, value)
    }
    /// `[column, "*=", value]`.
    pub fn multiply(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Mutator::Multiply, value)
    }
    /// `[column, "/=", value]`.
    pub fn divide(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Mutator::Divide, value)
    }
    /// `[column, "%=", value]`.
    pub fn modulo(column: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(column, Mutator::Modulo, value)
    }
}

fn triple<S: Serializer>(s: S, column: &str, op: &str, value: &Value) -> Result<S::Ok, S::Error> {
    let mut t = s.serialize_tuple(3)?;
    t.serialize_element(column)?;
    t.serialize_element(op)?;
    t.serialize_element(value)?;
    t.end()
}

impl Serialize for Condition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Condition::Compare {
                column,
                function,
                value,
            } => triple(s, column, function.as_str(), value),
            Condition::Constant(b) => s.serialize_bool(*b),
        }
    }
}

impl Serialize for Mutation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        triple(s, &self.column, self.mutator.as_str(), &self.value)
    }
}

/// Reads `[column, name, value]` (untyped value).
struct TripleVisitor;

impl<'de> Visitor<'de> for TripleVisitor {
    type Value = (String, String, Value);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[column, function or mutator, value]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let column: String = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let name: String = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        let value: Value = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(2, &self))?;
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(4, &self));
        }
        Ok((column, name, value))
    }
}

struct ConditionVisitor;

impl<'de> Visitor<'de> for ConditionVisitor {
    type Value = Condition;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a condition: [column, function, value] or a boolean")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Condition, E> {
        Ok(Condition::Constant(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Condition, A::Error> {
        let (column, function, value) = TripleVisitor.visit_seq(seq)?;
        let function = function.parse().map_err(de::Error::custom)?;
        Ok(Condition::Compare {
            column,
            function,
            value,
        })
    }
}

impl<'de> Deserialize<'de> for Condition {
    /// Untyped decode (values as in [`Value`]'s `Deserialize`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ConditionVisitor)
    }
}

impl<'de> Deserialize<'de> for Mutation {
    /// Untyped decode (values as in [`Value`]'s `Deserialize`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (column, mutator, value) = d.deserialize_seq(TripleVisitor)?;
        let mutator = mutator.parse().map_err(de::Error::custom)?;
        Ok(Mutation {
            column,
            mutator,
            value,
        })
    }
}
