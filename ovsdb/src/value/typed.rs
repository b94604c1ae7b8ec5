//! Decoding with the column type at hand: the exact decoder.
//!
//! The seeds here plug into serde (`DeserializeSeed`), so a monitor reply can be decoded
//! straight from its text (`serde_json::Deserializer::from_str`) without building a
//! `serde_json::Value` tree first. Type checks only: constraints (enum, ranges, sizes) are
//! the business of [`crate::schema`] validation, since the server is their authority.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};

use super::json::{end_of_pair, finish_id, int_from_u64, MapElements, SetElements, Tagged, Text};
use super::{Atom, AtomType, DecodeError, Row, Set, Value};
use crate::schema::{BaseType, ColumnType, TableSchema};

/// Decodes one atom of a known type. A real accepts a JSON integer (as the server does);
/// a uuid accepts `["uuid",..]` and `["named-uuid",..]`.
#[derive(Debug, Clone, Copy)]
pub struct AtomSeed(pub AtomType);

impl<'de> DeserializeSeed<'de> for AtomSeed {
    type Value = Atom;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Atom, D::Error> {
        d.deserialize_any(self)
    }
}

impl AtomSeed {
    fn mismatch<E: de::Error>(self, found: Unexpected<'_>) -> E {
        E::invalid_type(found, &self)
    }
}

impl<'de> Visitor<'de> for AtomSeed {
    type Value = Atom;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            AtomType::Uuid => f.write_str("uuid ([\"uuid\",..] or [\"named-uuid\",..])"),
            other => f.write_str(other.as_str()),
        }
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Atom, E> {
        match self.0 {
            AtomType::Boolean => Ok(Atom::Boolean(v)),
            _ => Err(self.mismatch(Unexpected::Bool(v))),
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Atom, E> {
        match self.0 {
            AtomType::Integer => Ok(Atom::Integer(v)),
            AtomType::Real => Ok(Atom::Real(v as f64)),
            _ => Err(self.mismatch(Unexpected::Signed(v))),
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Atom, E> {
        match self.0 {
            AtomType::Integer => int_from_u64(v).map(Atom::Integer),
            AtomType::Real => Ok(Atom::Real(v as f64)),
            _ => Err(self.mismatch(Unexpected::Unsigned(v))),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Atom, E> {
        match self.0 {
            AtomType::Real => Ok(Atom::Real(v)),
            _ => Err(self.mismatch(Unexpected::Float(v))),
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Atom, E> {
        match self.0 {
            AtomType::String => Ok(Atom::String(v.to_owned())),
            _ => Err(self.mismatch(Unexpected::Str(v))),
        }
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Atom, E> {
        match self.0 {
            AtomType::String => Ok(Atom::String(v)),
            _ => Err(self.mismatch(Unexpected::Str(&v))),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Atom, A::Error> {
        let tag: Option<Text<'de>> = seq.next_element()?;
        match (self.0, tag.as_ref().map(Text::as_str)) {
            (AtomType::Uuid, Some(tag @ ("uuid" | "named-uuid"))) => {
                Ok(match finish_id(tag, &mut seq)? {
                    Tagged::Uuid(u) => Atom::Uuid(u),
                    Tagged::NamedUuid(n) => Atom::NamedUuid(n),
                })
            }
            (_, Some(tag)) => Err(de::Error::custom(format!(
                "invalid type: array tagged {tag:?}, expected {}",
                self.0
            ))),
            (_, None) => Err(self.mismatch(Unexpected::Seq)),
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<Atom, A::Error> {
        Err(self.mismatch(Unexpected::Map))
    }
}

/// Decodes a column value of a known type (`<value>`): a bare atom is a one-element set,
/// `["set",[..]]` a set, `["map",[..]]` a map.
#[derive(Debug, Clone, Copy)]
pub struct ValueSeed<'a>(pub &'a ColumnType);

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl ValueSeed<'_> {
    fn key(self) -> AtomSeed {
        AtomSeed(self.0.key.atom_type)
    }

    fn bare<E: de::Error>(self, atom: Result<Atom, E>) -> Result<Value, E> {
        if self.0.is_map() {
            return Err(E::custom(format!(
                "invalid type: bare atom {}, expected [\"map\",[..]]",
                atom?
            )));
        }
        Ok(Value::Set(Set::from_atoms(vec![atom?])))
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.value {
            Some(v) => write!(f, "map of {} to {}", self.0.key.atom_type, v.atom_type),
            None => write!(
                f,
                "{} or set of {}",
                self.0.key.atom_type, self.0.key.atom_type
            ),
        }
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.bare(self.key().visit_bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.bare(self.key().visit_i64(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.bare(self.key().visit_u64(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.bare(self.key().visit_f64(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.bare(self.key().visit_str(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.bare(self.key().visit_string(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, _map: A) -> Result<Value, A::Error> {
        Err(de::Error::invalid_type(Unexpected::Map, &self))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let tag: Text<'de> = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_type(Unexpected::Seq, &self))?;
        let ty = self.0;
        let value = match (tag.as_str(), &ty.value) {
            ("map", Some(value_type)) => {
                let elements = MapElements(self.key(), AtomSeed(value_type.atom_type));
                seq.next_element_seed(elements)?.map(Value::Map)
            }
            ("set", None) => seq
                .next_element_seed(SetElements(self.key()))?
                .map(Value::Set),
            (tag @ ("uuid" | "named-uuid"), None) if ty.key.atom_type == AtomType::Uuid => {
                let atom = match finish_id(tag, &mut seq)? {
                    Tagged::Uuid(u) => Atom::Uuid(u),
                    Tagged::NamedUuid(n) => Atom::NamedUuid(n),
                };
                return Ok(Value::Set(Set::from_atoms(vec![atom])));
            }
            (tag, _) => {
                return Err(de::Error::custom(format!(
                    "invalid type: array tagged {tag:?}, expected {}",
                    Expecting(&self)
                )))
            }
        };
        let value = value
            .ok_or_else(|| de::Error::custom(format!("[{:?}] lacks its elements", tag.as_str())))?;
        end_of_pair(&mut seq, tag.as_str())?;
        Ok(value)
    }
}

struct Expecting<'a, 'b>(&'a ValueSeed<'b>);

impl fmt::Display for Expecting<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Visitor::expecting(self.0, f)
    }
}

/// Decodes a row (`<row>`) of a table with its schema; columns the schema does not know
/// (a newer server) are decoded untyped rather than rejected. Errors name `table.column`.
#[derive(Debug, Clone, Copy)]
pub struct RowSeed<'a>(pub &'a TableSchema);

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = Row;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Row, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = Row;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a row of table {} (JSON object)", self.0.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        let mut row = Row::new();
        while let Some(name) = map.next_key::<Text<'de>>()? {
            let name = name.as_str();
            let in_column =
                |e: A::Error| de::Error::custom(format!("column {}.{}: {e}", self.0.name, name));
            match self.0.column(name) {
                Some(column) => {
                    let value = map
                        .next_value_seed(ValueSeed(&column.type_))
                        .map_err(in_column)?;
                    row.insert_arc(column.name.clone(), value);
                }
                None => {
                    let value: Value = map.next_value().map_err(in_column)?;
                    row.insert_arc(Arc::from(name), value);
                }
            }
        }
        Ok(row)
    }
}

impl Value {
    /// Decodes wire JSON of a column of type `ty`.
    pub fn from_json_typed(
        json: &serde_json::Value,
        ty: &ColumnType,
    ) -> Result<Value, DecodeError> {
        Ok(ValueSeed(ty).deserialize(json)?)
    }

    /// Decodes wire JSON text of a column of type `ty`.
    pub fn from_str_typed(json: &str, ty: &ColumnType) -> Result<Value, DecodeError> {
        let mut d = serde_json::Deserializer::from_str(json);
        let value = ValueSeed(ty).deserialize(&mut d)?;
        d.end()?;
        Ok(value)
    }
}

impl Atom {
    /// Decodes the wire JSON of one atom of a base type.
    pub fn from_json_typed(json: &serde_json::Value, ty: &BaseType) -> Result<Atom, DecodeError> {
        Ok(AtomSeed(ty.atom_type).deserialize(json)?)
    }
}

impl Row {
    /// Decodes a JSON object as a row of `table`.
    pub fn from_json_typed(
        json: &serde_json::Value,
        table: &TableSchema,
    ) -> Result<Row, DecodeError> {
        Ok(RowSeed(table).deserialize(json)?)
    }

    /// Decodes JSON text as a row of `table`.
    pub fn from_str_typed(json: &str, table: &TableSchema) -> Result<Row, DecodeError> {
        let mut d = serde_json::Deserializer::from_str(json);
        let row = RowSeed(table).deserialize(&mut d)?;
        d.end()?;
        Ok(row)
    }
}
