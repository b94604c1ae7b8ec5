//! The OVSDB data model of RFC 7047 section 5.1: atoms, sets, maps and rows.
//!
//! Every column of an OVSDB row holds a *datum*: either a set of atoms (a scalar column is a
//! set of exactly one atom, an optional column a set of zero or one) or a map from atoms to
//! atoms. Sets and maps are ordered collections without duplicate elements (keys), which
//! makes equality structural and the JSON encoding deterministic.
//!
//! Wire notation (JSON), as ovsdb-server 3.x writes it:
//!
//! | datum | JSON |
//! |---|---|
//! | integer / real / boolean / string atom | `1`, `1.5`, `true`, `"x"` |
//! | uuid atom | `["uuid","550e8400-e29b-41d4-a716-446655440000"]` |
//! | named uuid (transaction-local) | `["named-uuid","row0"]` |
//! | set of one element | the bare atom (the server always sends it so, even for unlimited sets) |
//! | any other set | `["set",[atom,...]]` |
//! | map | `["map",[[key,value],...]]` (always tagged, also when empty) |
//!
//! Because a one-element set arrives as a bare atom and a real column may carry a JSON
//! integer, exact decoding needs the column type: see [`ValueSeed`] and
//! [`Value::from_json_typed`]. The untyped `Deserialize` impls are a best effort for when no
//! schema is at hand.

mod atom;
pub(crate) mod json;
mod row;
mod typed;

pub use atom::{Atom, AtomType, InvalidNamedUuid, InvalidUuid, NamedUuid, Uuid};
pub use json::DecodeError;
pub use row::Row;
pub use typed::{AtomSeed, RowSeed, ValueSeed};

/// A set of atoms, kept sorted and free of duplicates.
///
/// Stored as a sorted `Vec` rather than a `BTreeSet`: most OVSDB sets hold zero or one
/// element, and a monitor reply holds hundreds of thousands of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Set(Vec<Atom>);

impl Set {
    /// The empty set.
    pub const fn new() -> Self {
        Set(Vec::new())
    }

    /// Builds a set from atoms in any order; duplicates are dropped.
    pub fn from_atoms(mut atoms: Vec<Atom>) -> Self {
        // The server sends elements sorted; only sort what is not.
        if !atoms.windows(2).all(|w| w[0] < w[1]) {
            atoms.sort_unstable();
            atoms.dedup();
        }
        Set(atoms)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set has no element.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `atom` is an element.
    pub fn contains(&self, atom: &Atom) -> bool {
        self.0.binary_search(atom).is_ok()
    }

    /// Adds `atom`; returns false if it was already there.
    pub fn insert(&mut self, atom: Atom) -> bool {
        match self.0.binary_search(&atom) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, atom);
                true
            }
        }
    }

    /// Removes `atom`; returns false if it was not there.
    pub fn remove(&mut self, atom: &Atom) -> bool {
        match self.0.binary_search(atom) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// The elements in ascending order.
    pub fn iter(&self) -> std::slice::Iter<'_, Atom> {
        self.0.iter()
    }

    /// The elements in ascending order, as a slice.
    pub fn as_slice(&self) -> &[Atom] {
        &self.0
    }

    /// Consumes the set, returning its sorted elements.
    pub fn into_vec(self) -> Vec<Atom> {
        self.0
    }
}

impl FromIterator<Atom> for Set {
    fn from_iter<I: IntoIterator<Item = Atom>>(iter: I) -> Self {
        Set::from_atoms(iter.into_iter().collect())
    }
}

impl<'a> IntoIterator for &'a Set {
    type Item = &'a Atom;
    type IntoIter = std::slice::Iter<'a, Atom>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A map from atoms to atoms, kept sorted by key with unique keys.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Map(Vec<(Atom, Atom)>);

impl Map {
    /// The empty map.
    pub fn new() -> Self {
        Map(Vec::new())
    }

    /// Builds a map from pairs in any order; for a repeated key the last pair wins.
    pub fn from_pairs(mut pairs: Vec<(Atom, Atom)>) -> Self {
        // The server sends pairs sorted by key; keep such input as it is.
        if pairs.windows(2).all(|w| w[0].0 < w[1].0) {
            return Map(pairs);
        }
        // A stable sort keeps equal keys in input order, so keeping the last of each run
        // implements "last wins".
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Atom, Atom)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            match out.last_mut() {
                Some(last) if last.0 == pair.0 => *last = pair,
                _ => out.push(pair),
            }
        }
        Map(out)
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the map has no pair.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &Atom) -> Option<&Atom> {
        self.0
            .binary_search_by(|(k, _)| k.cmp(key))
            .ok()
            .map(|at| &self.0[at].1)
    }

    /// The value stored under the string key `key` (most OVSDB maps are string maps).
    pub fn get_str(&self, key: &str) -> Option<&Atom> {
        self.0
            .binary_search_by(|(k, _)| match k {
                Atom::String(s) => s.as_str().cmp(key),
                // Integer, Real and Boolean order before String, Uuid after.
                other if other.atom_type() < AtomType::String => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            })
            .ok()
            .map(|at| &self.0[at].1)
    }

    /// Inserts or replaces the pair for `key`; returns the previous value.
    pub fn insert(&mut self, key: Atom, value: Atom) -> Option<Atom> {
        match self.0.binary_search_by(|(k, _)| k.cmp(&key)) {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, value)),
            Err(at) => {
                self.0.insert(at, (key, value));
                None
            }
        }
    }

    /// Removes the pair for `key`; returns its value.
    pub fn remove(&mut self, key: &Atom) -> Option<Atom> {
        match self.0.binary_search_by(|(k, _)| k.cmp(key)) {
            Ok(at) => Some(self.0.remove(at).1),
            Err(_) => None,
        }
    }

    /// The pairs in ascending key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&Atom, &Atom)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// The pairs in ascending key order, as a slice.
    pub fn as_slice(&self) -> &[(Atom, Atom)] {
        &self.0
    }

    /// Consumes the map, returning its pairs sorted by key.
    pub fn into_vec(self) -> Vec<(Atom, Atom)> {
        self.0
    }
}

impl FromIterator<(Atom, Atom)> for Map {
    fn from_iter<I: IntoIterator<Item = (Atom, Atom)>>(iter: I) -> Self {
        Map::from_pairs(iter.into_iter().collect())
    }
}

/// The value of one column (RFC 7047 `<value>`; a "datum" in the C implementation,
/// a name this crate keeps for [`crate::typed::Datum`], the Rust side of a column).
///
/// Scalars are one-element sets; use [`Value::scalar`] / [`Value::as_atom`] for them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// A set of atoms (also scalars and optionals).
    Set(Set),
    /// A map from atoms to atoms.
    Map(Map),
}

impl Default for Value {
    /// The empty set.
    fn default() -> Self {
        Value::Set(Set::new())
    }
}

impl Value {
    /// A one-element set.
    pub fn scalar(atom: impl Into<Atom>) -> Self {
        Value::Set(Set(vec![atom.into()]))
    }

    /// The empty set (an absent optional value).
    pub fn empty_set() -> Self {
        Value::Set(Set::new())
    }

    /// The empty map.
    pub fn empty_map() -> Self {
        Value::Map(Map::new())
    }

    /// A set of the given atoms (sorted, deduplicated).
    pub fn set<A: Into<Atom>>(atoms: impl IntoIterator<Item = A>) -> Self {
        Value::Set(atoms.into_iter().map(Into::into).collect())
    }

    /// A map of the given pairs (sorted; the last pair wins for a repeated key).
    pub fn map<K: Into<Atom>, V: Into<Atom>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        Value::Map(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }

    /// `Some(optional)` as a one-element set, `None` as the empty set.
    pub fn optional(atom: Option<impl Into<Atom>>) -> Self {
        match atom {
            Some(atom) => Value::scalar(atom),
            None => Value::empty_set(),
        }
    }

    /// Number of elements (set) or pairs (map).
    pub fn len(&self) -> usize {
        match self {
            Value::Set(s) => s.len(),
            Value::Map(m) => m.len(),
        }
    }

    /// Whether the set or map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The atom of a one-element set.
    pub fn as_atom(&self) -> Option<&Atom> {
        match self {
            Value::Set(s) if s.len() == 1 => s.0.first(),
            _ => None,
        }
    }

    /// The set, if this is a set.
    pub fn as_set(&self) -> Option<&Set> {
        match self {
            Value::Set(s) => Some(s),
            Value::Map(_) => None,
        }
    }

    /// The map, if this is a map.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            Value::Set(_) => None,
        }
    }

    /// The string of a one-element string set.
    pub fn as_str(&self) -> Option<&str> {
        self.as_atom().and_then(Atom::as_str)
    }

    /// The integer of a one-element integer set.
    pub fn as_integer(&self) -> Option<i64> {
        self.as_atom().and_then(Atom::as_integer)
    }

    /// The real of a one-element real set.
    pub fn as_real(&self) -> Option<f64> {
        self.as_atom().and_then(Atom::as_real)
    }

    /// The boolean of a one-element boolean set.
    pub fn as_bool(&self) -> Option<bool> {
        self.as_atom().and_then(Atom::as_bool)
    }

    /// The uuid of a one-element uuid set.
    pub fn as_uuid(&self) -> Option<Uuid> {
        self.as_atom().and_then(Atom::as_uuid)
    }

    /// The elements of a set or the keys of a map, in ascending order.
    pub fn keys(&self) -> impl Iterator<Item = &Atom> + '_ {
        let (set, map): (&[Atom], &[(Atom, Atom)]) = match self {
            Value::Set(s) => (&s.0, &[]),
            Value::Map(m) => (&[], &m.0),
        };
        set.iter().chain(map.iter().map(|(k, _)| k))
    }

    /// The pairs of a map in ascending key order; none for a set.
    pub fn pairs(&self) -> impl Iterator<Item = (&Atom, &Atom)> + '_ {
        self.as_map().into_iter().flat_map(Map::iter)
    }

    /// Whether `atom` is an element of the set or a key of the map.
    pub fn contains_key(&self, atom: &Atom) -> bool {
        match self {
            Value::Set(s) => s.contains(atom),
            Value::Map(m) => m.get(atom).is_some(),
        }
    }

    /// OVSDB's own total order of values (`ovsdb_datum_compare_3way()`), which the
    /// relational operators of `ovs-vsctl find` and `<`/`>` conditions use: fewer elements
    /// first, then the keys compared pairwise, then (for maps) the values. Unlike the
    /// derived [`Ord`], the size decides first and a set and a map of the same atoms
    /// compare equal.
    pub fn compare_3way(&self, other: &Value) -> std::cmp::Ordering {
        self.len()
            .cmp(&other.len())
            .then_with(|| self.keys().cmp(other.keys()))
            .then_with(|| {
                let values = self.pairs().map(|(_, v)| v);
                values.cmp(other.pairs().map(|(_, v)| v))
            })
    }

    /// Encodes to wire JSON (see the module docs for the notation).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("an OVSDB value always encodes to JSON")
    }
}

impl From<Set> for Value {
    fn from(set: Set) -> Self {
        Value::Set(set)
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Self {
        Value::Map(map)
    }
}

impl From<Atom> for Value {
    fn from(atom: Atom) -> Self {
        Value::scalar(atom)
    }
}

macro_rules! value_from_scalar {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Self {
                Value::scalar(v)
            }
        }
    )*};
}
value_from_scalar!(i64, f64, bool, String, &str, Uuid, NamedUuid);

#[cfg(test)]
mod tests;
