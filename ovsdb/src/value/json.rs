//! Wire JSON encoding of values, and the untyped (schema-less, best effort) decoding.
//!
//! Untyped decoding reads a JSON integer as an integer atom, a JSON number with a fraction
//! or exponent as a real, and a bare atom as a one-element set; it is exact for everything
//! this module encodes, but a real column holding a JSON integer needs the typed decoder.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, SerializeTuple, Serializer};
use serde::{Deserialize, Serialize};

use super::{Atom, Map, NamedUuid, Row, Set, Uuid, Value};

/// Malformed OVSDB JSON, or JSON that does not fit the expected column type.
///
/// The message names the offending column (`table.column`) when a schema was used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The JSON is malformed or does not match the OVSDB notation / column type
    /// (serde_json's message, with line and column).
    #[error("invalid OVSDB JSON: {0}")]
    Json(String),
    /// Well-formed JSON whose structure is not what the protocol prescribes.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// The message or member at fault.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl From<serde_json::Error> for DecodeError {
    fn from(e: serde_json::Error) -> Self {
        DecodeError::Json(e.to_string())
    }
}

impl Serialize for Uuid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element("uuid")?;
        t.serialize_element(&self.to_string())?;
        t.end()
    }
}

impl Serialize for NamedUuid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element("named-uuid")?;
        t.serialize_element(self.as_str())?;
        t.end()
    }
}

impl Serialize for Atom {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Atom::Integer(i) => s.serialize_i64(*i),
            Atom::Real(r) => s.serialize_f64(*r),
            Atom::Boolean(b) => s.serialize_bool(*b),
            Atom::String(v) => s.serialize_str(v),
            Atom::Uuid(u) => u.serialize(s),
            Atom::NamedUuid(n) => n.serialize(s),
        }
    }
}

struct Pair<'a>(&'a Atom, &'a Atom);

impl Serialize for Pair<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(self.0)?;
        t.serialize_element(self.1)?;
        t.end()
    }
}

struct Elements<'a, T>(&'a [T]);

impl Serialize for Elements<'_, Atom> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for atom in self.0 {
            seq.serialize_element(atom)?;
        }
        seq.end()
    }
}

impl Serialize for Elements<'_, (Atom, Atom)> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (k, v) in self.0 {
            seq.serialize_element(&Pair(k, v))?;
        }
        seq.end()
    }
}

impl Serialize for Set {
    /// A one-element set is written as the bare atom, like ovsdb-server does.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let [single] = self.as_slice() {
            return single.serialize(s);
        }
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element("set")?;
        t.serialize_element(&Elements(self.as_slice()))?;
        t.end()
    }
}

impl Serialize for Map {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element("map")?;
        t.serialize_element(&Elements(self.as_slice()))?;
        t.end()
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Set(set) => set.serialize(s),
            Value::Map(map) => map.serialize(s),
        }
    }
}

impl Serialize for Row {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.len()))?;
        for (column, value) in self.iter() {
            m.serialize_entry(column, value)?;
        }
        m.end()
    }
}

/// A JSON string, borrowed from the input when it has no escapes.
pub(crate) enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Text<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Text::Borrowed(s) => s,
            Text::Owned(s) => s,
        }
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
        Ok(Text::Borrowed(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
        Ok(Text::Owned(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
        Ok(Text::Owned(v))
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

/// What an untyped JSON array can be.
pub(super) enum Tagged {
    Uuid(Uuid),
    NamedUuid(NamedUuid),
}

/// Reads the second element of `["uuid",s]` / `["named-uuid",s]` after the tag.
pub(super) fn finish_id<'de, A: SeqAccess<'de>>(
    tag: &str,
    seq: &mut A,
) -> Result<Tagged, A::Error> {
    let text: Text<'de> = seq
        .next_element()?
        .ok_or_else(|| de::Error::custom(format!("[\"{tag}\", ...] lacks its string")))?;
    let tagged = if tag == "uuid" {
        Tagged::Uuid(text.as_str().parse().map_err(de::Error::custom)?)
    } else {
        Tagged::NamedUuid(NamedUuid::new(text.as_str()).map_err(de::Error::custom)?)
    };
    end_of_pair(seq, tag)?;
    Ok(tagged)
}

/// Requires that a `[tag, x]` array has nothing after `x`.
pub(super) fn end_of_pair<'de, A: SeqAccess<'de>>(seq: &mut A, tag: &str) -> Result<(), A::Error> {
    if seq.next_element::<de::IgnoredAny>()?.is_some() {
        return Err(de::Error::custom(format!(
            "[\"{tag}\", ...] has more than 2 elements"
        )));
    }
    Ok(())
}

pub(super) fn int_from_u64<E: de::Error>(v: u64) -> Result<i64, E> {
    i64::try_from(v)
        .map_err(|_| E::custom(format!("integer {v} is out of the 64-bit signed range")))
}

/// Untyped atom visitor.
struct AtomVisitor;

impl<'de> Visitor<'de> for AtomVisitor {
    type Value = Atom;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OVSDB atom")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Atom, E> {
        Ok(Atom::Boolean(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Atom, E> {
        Ok(Atom::Integer(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Atom, E> {
        int_from_u64(v).map(Atom::Integer)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Atom, E> {
        Ok(Atom::Real(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Atom, E> {
        Ok(Atom::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Atom, E> {
        Ok(Atom::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Atom, A::Error> {
        let tag: Text<'de> = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("empty array is not an OVSDB atom"))?;
        match tag.as_str() {
            "uuid" | "named-uuid" => Ok(match finish_id(tag.as_str(), &mut seq)? {
                Tagged::Uuid(u) => Atom::Uuid(u),
                Tagged::NamedUuid(n) => Atom::NamedUuid(n),
            }),
            other => Err(de::Error::custom(format!(
                "expected an atom, found an array tagged {other:?}"
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for Atom {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(AtomVisitor)
    }
}

impl<'de> Deserialize<'de> for Uuid {
    /// Reads `["uuid","..."]`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Atom::deserialize(d)? {
            Atom::Uuid(u) => Ok(u),
            other => Err(de::Error::custom(format!(
                "expected [\"uuid\", ...], found {other}"
            ))),
        }
    }
}

struct PairSeed<K, V>(K, V);

impl<'de, K: DeserializeSeed<'de> + Copy, V: DeserializeSeed<'de> + Copy> DeserializeSeed<'de>
    for PairSeed<K, V>
{
    type Value = (K::Value, V::Value);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, K: DeserializeSeed<'de> + Copy, V: DeserializeSeed<'de> + Copy> Visitor<'de>
    for PairSeed<K, V>
{
    type Value = (K::Value, V::Value);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a [key, value] pair")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let missing = || de::Error::custom("map pair must be [key, value]");
        let k = seq.next_element_seed(self.0)?.ok_or_else(missing)?;
        let v = seq.next_element_seed(self.1)?.ok_or_else(missing)?;
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(missing());
        }
        Ok((k, v))
    }
}

/// Reads the elements of `["set",[...]]` with an atom seed.
pub(super) struct SetElements<S>(pub S);

impl<'de, S: DeserializeSeed<'de, Value = Atom> + Copy> DeserializeSeed<'de> for SetElements<S> {
    type Value = Set;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Set, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, S: DeserializeSeed<'de, Value = Atom> + Copy> Visitor<'de> for SetElements<S> {
    type Value = Set;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of set elements")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Set, A::Error> {
        let mut atoms = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(atom) = seq.next_element_seed(self.0)? {
            atoms.push(atom);
        }
        Ok(Set::from_atoms(atoms))
    }
}

/// Reads the pairs of `["map",[[k,v],...]]` with key and value seeds.
pub(super) struct MapElements<K, V>(pub K, pub V);

impl<'de, K, V> DeserializeSeed<'de> for MapElements<K, V>
where
    K: DeserializeSeed<'de, Value = Atom> + Copy,
    V: DeserializeSeed<'de, Value = Atom> + Copy,
{
    type Value = Map;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Map, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, K, V> Visitor<'de> for MapElements<K, V>
where
    K: DeserializeSeed<'de, Value = Atom> + Copy,
    V: DeserializeSeed<'de, Value = Atom> + Copy,
{
    type Value = Map;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of [key, value] pairs")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Map, A::Error> {
        let mut pairs = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(pair) = seq.next_element_seed(PairSeed(self.0, self.1))? {
            pairs.push(pair);
        }
        Ok(Map::from_pairs(pairs))
    }
}

/// Untyped atom seed (a `Copy` handle for the element readers).
#[derive(Clone, Copy)]
pub(super) struct UntypedAtom;

impl<'de> DeserializeSeed<'de> for UntypedAtom {
    type Value = Atom;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Atom, D::Error> {
        d.deserialize_any(AtomVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OVSDB value (atom, [\"set\",...] or [\"map\",...])")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::scalar(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::scalar(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        int_from_u64(v).map(Value::scalar)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::scalar(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::scalar(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::scalar(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let tag: Text<'de> = seq
            .next_element()?
            .ok_or_else(|| de::Error::custom("empty array is not an OVSDB value"))?;
        let value = match tag.as_str() {
            "uuid" | "named-uuid" => {
                return Ok(match finish_id(tag.as_str(), &mut seq)? {
                    Tagged::Uuid(u) => Value::scalar(u),
                    Tagged::NamedUuid(n) => Value::scalar(n),
                })
            }
            "set" => seq
                .next_element_seed(SetElements(UntypedAtom))?
                .map(Value::Set),
            "map" => seq
                .next_element_seed(MapElements(UntypedAtom, UntypedAtom))?
                .map(Value::Map),
            other => {
                return Err(de::Error::custom(format!(
                    "unknown OVSDB value tag {other:?} (expected uuid, named-uuid, set or map)"
                )))
            }
        };
        let value = value
            .ok_or_else(|| de::Error::custom(format!("[{:?}] lacks its elements", tag.as_str())))?;
        end_of_pair(&mut seq, tag.as_str())?;
        Ok(value)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = Row;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an OVSDB row (JSON object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        let mut row = Row::new();
        while let Some(column) = map.next_key::<Text<'de>>()? {
            let value: Value = map
                .next_value()
                .map_err(|e| de::Error::custom(format!("column {}: {e}", column.as_str())))?;
            row.insert_arc(Arc::from(column.as_str()), value);
        }
        Ok(row)
    }
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RowVisitor)
    }
}

impl Value {
    /// Untyped decode of wire JSON (see the module docs for its limits).
    pub fn from_json(json: &serde_json::Value) -> Result<Value, DecodeError> {
        Ok(Value::deserialize(json)?)
    }
}

impl Atom {
    /// Untyped decode of one atom's wire JSON.
    pub fn from_json(json: &serde_json::Value) -> Result<Atom, DecodeError> {
        Ok(Atom::deserialize(json)?)
    }
}

impl Row {
    /// Untyped decode of a JSON object.
    pub fn from_json(json: &serde_json::Value) -> Result<Row, DecodeError> {
        Ok(Row::deserialize(json)?)
    }
}
