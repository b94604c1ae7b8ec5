//! Rust value <-> OVSDB [`Value`] conversions for column types.

use std::collections::{BTreeMap, BTreeSet};

use super::RowId;
use crate::value::{Atom, Map, Set, Uuid, Value};

/// A Rust type that is one OVSDB atom.
pub trait Atomic: Sized {
    /// The atom.
    fn to_atom(&self) -> Atom;
    /// Decodes an atom; the error says what was found instead.
    fn from_atom(atom: &Atom) -> Result<Self, String>;
}

/// A Rust type that is a whole column value (a set or a map).
pub trait Datum: Sized {
    /// The OVSDB value.
    fn to_value(&self) -> Value;
    /// Decodes a value; the error says what was wrong.
    fn from_value(value: &Value) -> Result<Self, String>;
}

fn mismatch(expected: &str, atom: &Atom) -> String {
    format!("expected {expected}, found {atom}")
}

impl Atomic for String {
    fn to_atom(&self) -> Atom {
        Atom::String(self.clone())
    }
    fn from_atom(atom: &Atom) -> Result<Self, String> {
        atom.as_str()
            .map(str::to_string)
            .ok_or_else(|| mismatch("a string", atom))
    }
}

impl Atomic for i64 {
    fn to_atom(&self) -> Atom {
        Atom::Integer(*self)
    }
    fn from_atom(atom: &Atom) -> Result<Self, String> {
        atom.as_integer()
            .ok_or_else(|| mismatch("an integer", atom))
    }
}

impl Atomic for f64 {
    fn to_atom(&self) -> Atom {
        Atom::Real(*self)
    }
    fn from_atom(atom: &Atom) -> Result<Self, String> {
        match atom {
            Atom::Real(r) => Ok(*r),
            Atom::Integer(i) => Ok(*i as f64),
            other => Err(mismatch("a real", other)),
        }
    }
}

impl Atomic for bool {
    fn to_atom(&self) -> Atom {
        Atom::Boolean(*self)
    }
    fn from_atom(atom: &Atom) -> Result<Self, String> {
        atom.as_bool().ok_or_else(|| mismatch("a boolean", atom))
    }
}

impl Atomic for Uuid {
    fn to_atom(&self) -> Atom {
        Atom::Uuid(*self)
    }
    fn from_atom(atom: &Atom) -> Result<Self, String> {
        atom.as_uuid().ok_or_else(|| mismatch("a uuid", atom))
    }
}

impl<T> Atomic for RowId<T> {
    fn to_atom(&self) -> Atom {
        Atom::Uuid(self.uuid())
    }
    fn from_atom(atom: &Atom) -> Result<Self, String> {
        atom.as_uuid()
            .map(RowId::new)
            .ok_or_else(|| mismatch("a uuid", atom))
    }
}

/// A scalar column: a set of exactly one atom.
pub fn datum_scalar<A: Atomic>(atom: &A) -> Value {
    Value::scalar(atom.to_atom())
}

/// Decodes a scalar column: a set of exactly one atom.
pub fn datum_from_scalar<A: Atomic>(value: &Value) -> Result<A, String> {
    match value {
        Value::Set(set) if set.len() == 1 => A::from_atom(&set.as_slice()[0]),
        Value::Set(set) => Err(format!("expected exactly one element, found {}", set.len())),
        Value::Map(_) => Err("expected a scalar, found a map".to_string()),
    }
}

macro_rules! scalar_datum {
    ($($t:ty),*) => {$(
        impl Datum for $t {
            fn to_value(&self) -> Value {
                datum_scalar(self)
            }
            fn from_value(value: &Value) -> Result<Self, String> {
                datum_from_scalar(value)
            }
        }
    )*};
}
scalar_datum!(String, i64, f64, bool, Uuid);

impl<T> Datum for RowId<T> {
    fn to_value(&self) -> Value {
        datum_scalar(self)
    }
    fn from_value(value: &Value) -> Result<Self, String> {
        datum_from_scalar(value)
    }
}

fn set_of(value: &Value) -> Result<&Set, String> {
    value
        .as_set()
        .ok_or_else(|| "expected a set, found a map".to_string())
}

impl<A: Atomic> Datum for Option<A> {
    fn to_value(&self) -> Value {
        match self {
            Some(a) => Value::scalar(a.to_atom()),
            None => Value::empty_set(),
        }
    }
    fn from_value(value: &Value) -> Result<Self, String> {
        let set = set_of(value)?;
        match set.as_slice() {
            [] => Ok(None),
            [one] => A::from_atom(one).map(Some),
            more => Err(format!(
                "expected at most one element, found {}",
                more.len()
            )),
        }
    }
}

impl<A: Atomic + Ord> Datum for BTreeSet<A> {
    fn to_value(&self) -> Value {
        Value::Set(self.iter().map(Atomic::to_atom).collect())
    }
    fn from_value(value: &Value) -> Result<Self, String> {
        set_of(value)?.iter().map(A::from_atom).collect()
    }
}

/// Sets of reals (no total order in Rust): kept as a `Vec` in set order.
impl<A: Atomic> Datum for Vec<A> {
    fn to_value(&self) -> Value {
        Value::Set(self.iter().map(Atomic::to_atom).collect())
    }
    fn from_value(value: &Value) -> Result<Self, String> {
        set_of(value)?.iter().map(A::from_atom).collect()
    }
}

impl<K: Atomic + Ord, V: Atomic> Datum for BTreeMap<K, V> {
    fn to_value(&self) -> Value {
        Value::Map(
            self.iter()
                .map(|(k, v)| (k.to_atom(), v.to_atom()))
                .collect::<Map>(),
        )
    }
    fn from_value(value: &Value) -> Result<Self, String> {
        let map = match value {
            Value::Map(m) => m,
            // An empty map may come back as an empty set from untyped decoding.
            Value::Set(s) if s.is_empty() => return Ok(BTreeMap::new()),
            Value::Set(_) => return Err("expected a map, found a set".to_string()),
        };
        map.iter()
            .map(|(k, v)| Ok((K::from_atom(k)?, V::from_atom(v)?)))
            .collect()
    }
}
