//! Atoms: the scalar building blocks of every OVSDB value.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

/// A row identifier: RFC 7047 `<uuid>`, written `["uuid","<36 chars>"]` on the wire.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Uuid(uuid::Uuid);

impl Uuid {
    /// The all-zero uuid (what a standalone server reports as `last-txn-id`).
    pub const NIL: Uuid = Uuid(uuid::Uuid::nil());

    /// Wraps a `uuid::Uuid`.
    pub const fn from_uuid(uuid: uuid::Uuid) -> Self {
        Uuid(uuid)
    }

    /// From 16 raw bytes.
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Uuid(uuid::Uuid::from_bytes(bytes))
    }

    /// A random (version 4) uuid, e.g. for an insert with a caller-chosen `"uuid"`.
    pub fn new_random() -> Self {
        Uuid(uuid::Uuid::from_bytes(rand::random()))
    }

    /// The wrapped `uuid::Uuid`.
    pub const fn as_uuid(&self) -> &uuid::Uuid {
        &self.0
    }

    /// The 16 raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }

    /// Whether this is the all-zero uuid.
    pub fn is_nil(&self) -> bool {
        self.0.is_nil()
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Uuid({})", self.0.hyphenated())
    }
}

/// A string that is not a uuid in RFC 7047 `<uuid>` form (36 characters with dashes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid uuid {0:?}: expected 8-4-4-4-12 hexadecimal digits")]
pub struct InvalidUuid(pub String);

impl FromStr for Uuid {
    type Err = InvalidUuid;

    /// Accepts only the 36-character hyphenated form, as the server does.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 36 {
            return Err(InvalidUuid(s.to_owned()));
        }
        uuid::Uuid::try_parse(s)
            .map(Uuid)
            .map_err(|_| InvalidUuid(s.to_owned()))
    }
}

impl From<uuid::Uuid> for Uuid {
    fn from(u: uuid::Uuid) -> Self {
        Uuid(u)
    }
}

impl From<Uuid> for uuid::Uuid {
    fn from(u: Uuid) -> Self {
        u.0
    }
}

/// A transaction-local row name: RFC 7047 `<named-uuid>`, written `["named-uuid","<id>"]`.
///
/// It refers to the row inserted earlier in the same transaction with that `uuid-name`.
/// The server accepts only an `<id>`, `[A-Za-z_][A-Za-z0-9_]*` (`ovsdb_parser_is_id()`), so a
/// uuid with dashes is *not* a valid name; the constructor enforces the rule.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NamedUuid(String);

/// A string that is not a valid `<id>` for a named uuid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid named-uuid {0:?}: expected [A-Za-z_][A-Za-z0-9_]*")]
pub struct InvalidNamedUuid(pub String);

impl NamedUuid {
    /// Validates `name` as an `<id>`.
    pub fn new(name: impl Into<String>) -> Result<Self, InvalidNamedUuid> {
        let name = name.into();
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Ok(NamedUuid(name))
        } else {
            Err(InvalidNamedUuid(name))
        }
    }

    /// A name derived from a uuid (`row` + the uuid with `_` for `-`), the convention of the
    /// Python IDL; handy together with an insert's caller-chosen `"uuid"`.
    pub fn for_uuid(uuid: Uuid) -> Self {
        NamedUuid(format!("row{}", uuid.to_string().replace('-', "_")))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for NamedUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for NamedUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NamedUuid({})", self.0)
    }
}

impl FromStr for NamedUuid {
    type Err = InvalidNamedUuid;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NamedUuid::new(s)
    }
}

impl TryFrom<&str> for NamedUuid {
    type Error = InvalidNamedUuid;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        NamedUuid::new(s)
    }
}

/// The five atomic types of RFC 7047 (`<atomic-type>`).
///
/// The declaration order is the order of [`Atom`] variants, so sorting by type and by atom
/// agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AtomType {
    /// `"integer"`: signed 64-bit.
    Integer,
    /// `"real"`: IEEE double.
    Real,
    /// `"boolean"`.
    Boolean,
    /// `"string"`: UTF-8.
    String,
    /// `"uuid"`: a row reference (or a named uuid inside a transaction).
    Uuid,
}

impl AtomType {
    /// The schema spelling: `"integer"`, `"real"`, `"boolean"`, `"string"` or `"uuid"`.
    pub fn as_str(self) -> &'static str {
        match self {
            AtomType::Integer => "integer",
            AtomType::Real => "real",
            AtomType::Boolean => "boolean",
            AtomType::String => "string",
            AtomType::Uuid => "uuid",
        }
    }

    /// Parses the schema spelling.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "integer" => AtomType::Integer,
            "real" => AtomType::Real,
            "boolean" => AtomType::Boolean,
            "string" => AtomType::String,
            "uuid" => AtomType::Uuid,
            _ => return None,
        })
    }

    /// The default atom of this type (0, 0.0, false, "", the nil uuid), which fills a
    /// scalar column that an `update2` `initial`/`insert` row leaves out.
    pub fn default_atom(self) -> Atom {
        match self {
            AtomType::Integer => Atom::Integer(0),
            AtomType::Real => Atom::Real(0.0),
            AtomType::Boolean => Atom::Boolean(false),
            AtomType::String => Atom::String(String::new()),
            AtomType::Uuid => Atom::Uuid(Uuid::NIL),
        }
    }
}

impl fmt::Display for AtomType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One atomic value (RFC 7047 `<atom>`).
///
/// Atoms are totally ordered (reals by `f64::total_cmp`; atoms of different types by type,
/// in [`AtomType`] order with named uuids last) so they can live in sorted sets and maps.
#[derive(Debug, Clone)]
pub enum Atom {
    /// A signed 64-bit integer.
    Integer(i64),
    /// A double; must be finite to be encodable as JSON.
    Real(f64),
    /// A boolean.
    Boolean(bool),
    /// A UTF-8 string.
    String(String),
    /// A row uuid.
    Uuid(Uuid),
    /// A transaction-local reference to a row inserted with that `uuid-name`.
    NamedUuid(NamedUuid),
}

impl Atom {
    /// The atomic type; named uuids are of type `uuid`.
    pub fn atom_type(&self) -> AtomType {
        match self {
            Atom::Integer(_) => AtomType::Integer,
            Atom::Real(_) => AtomType::Real,
            Atom::Boolean(_) => AtomType::Boolean,
            Atom::String(_) => AtomType::String,
            Atom::Uuid(_) | Atom::NamedUuid(_) => AtomType::Uuid,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Atom::Integer(_) => 0,
            Atom::Real(_) => 1,
            Atom::Boolean(_) => 2,
            Atom::String(_) => 3,
            Atom::Uuid(_) => 4,
            Atom::NamedUuid(_) => 5,
        }
    }

    /// The string, if a string atom.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Atom::String(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, if an integer atom.
    pub fn as_integer(&self) -> Option<i64> {
        match self {
            Atom::Integer(i) => Some(*i),
            _ => None,
        }
    }

    /// The real, if a real atom.
    pub fn as_real(&self) -> Option<f64> {
        match self {
            Atom::Real(r) => Some(*r),
            _ => None,
        }
    }

    /// The boolean, if a boolean atom.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Atom::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    /// The uuid, if a uuid atom.
    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Atom::Uuid(u) => Some(*u),
            _ => None,
        }
    }

    /// The name, if a named-uuid atom.
    pub fn as_named_uuid(&self) -> Option<&NamedUuid> {
        match self {
            Atom::NamedUuid(n) => Some(n),
            _ => None,
        }
    }
}

impl PartialEq for Atom {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Atom {}

impl PartialOrd for Atom {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Atom {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Atom::Integer(a), Atom::Integer(b)) => a.cmp(b),
            (Atom::Real(a), Atom::Real(b)) => a.total_cmp(b),
            (Atom::Boolean(a), Atom::Boolean(b)) => a.cmp(b),
            (Atom::String(a), Atom::String(b)) => a.cmp(b),
            (Atom::Uuid(a), Atom::Uuid(b)) => a.cmp(b),
            (Atom::NamedUuid(a), Atom::NamedUuid(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl Hash for Atom {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            Atom::Integer(i) => i.hash(state),
            // Consistent with `total_cmp` equality: equal reals have equal bits.
            Atom::Real(r) => r.to_bits().hash(state),
            Atom::Boolean(b) => b.hash(state),
            Atom::String(s) => s.hash(state),
            Atom::Uuid(u) => u.hash(state),
            Atom::NamedUuid(n) => n.hash(state),
        }
    }
}

impl fmt::Display for Atom {
    /// The wire JSON of the atom.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let json = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&json)
    }
}

impl From<i64> for Atom {
    fn from(v: i64) -> Self {
        Atom::Integer(v)
    }
}

impl From<f64> for Atom {
    fn from(v: f64) -> Self {
        Atom::Real(v)
    }
}

impl From<bool> for Atom {
    fn from(v: bool) -> Self {
        Atom::Boolean(v)
    }
}

impl From<String> for Atom {
    fn from(v: String) -> Self {
        Atom::String(v)
    }
}

impl From<&str> for Atom {
    fn from(v: &str) -> Self {
        Atom::String(v.to_owned())
    }
}

impl From<Uuid> for Atom {
    fn from(v: Uuid) -> Self {
        Atom::Uuid(v)
    }
}

impl From<NamedUuid> for Atom {
    fn from(v: NamedUuid) -> Self {
        Atom::NamedUuid(v)
    }
}
