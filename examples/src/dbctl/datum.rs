//! OVSDB values (RFC 7047 §5.1) in the two notations the command-line tools speak:
//! the JSON wire form (`["set", [...]]`, `["map", [[k, v], ...]]`, `["uuid", "..."]`) and
//! the `ovs-vsctl(8)` "Database Values" text form (`[a, b]`, `{k=v}`, quoted strings only
//! when needed). Printing follows OVS's `ovsdb_datum_to_string()` so output matches the C
//! tools byte for byte.

use super::schema::{max_of, AtomicType, BaseType, ColumnType};
use anyhow::{anyhow, bail, Result};
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::HashMap;

/// One atomic value.
#[derive(Debug, Clone, PartialEq)]
pub enum Atom {
    Integer(i64),
    Real(f64),
    Boolean(bool),
    String(String),
    /// A UUID in canonical lower-case text form.
    Uuid(String),
}

impl Atom {
    /// The total order OVSDB keeps sets and maps in.
    pub fn cmp3(&self, other: &Atom) -> Ordering {
        match (self, other) {
            (Atom::Integer(a), Atom::Integer(b)) => a.cmp(b),
            (Atom::Real(a), Atom::Real(b)) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            (Atom::Boolean(a), Atom::Boolean(b)) => a.cmp(b),
            (Atom::String(a), Atom::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Atom::Uuid(a), Atom::Uuid(b)) => a.cmp(b),
            _ => Ordering::Equal,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Atom::String(s) | Atom::Uuid(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Atom::Integer(i) => Some(*i),
            _ => None,
        }
    }

    /// The same atom as the `ovsdb` crate holds it (schema enums come that way).
    pub fn from_ovsdb(atom: &ovsdb::Atom) -> Atom {
        match atom {
            ovsdb::Atom::Integer(i) => Atom::Integer(*i),
            ovsdb::Atom::Real(r) => Atom::Real(*r),
            ovsdb::Atom::Boolean(b) => Atom::Boolean(*b),
            ovsdb::Atom::String(s) => Atom::String(s.clone()),
            ovsdb::Atom::Uuid(u) => Atom::Uuid(u.to_string()),
            ovsdb::Atom::NamedUuid(n) => Atom::Uuid(n.as_str().to_owned()),
        }
    }

    /// The same atom as the `ovsdb` crate holds it, for the wire.
    pub fn to_ovsdb(&self) -> Result<ovsdb::Atom> {
        Ok(match self {
            Atom::Integer(i) => ovsdb::Atom::Integer(*i),
            Atom::Real(r) => ovsdb::Atom::Real(*r),
            Atom::Boolean(b) => ovsdb::Atom::Boolean(*b),
            Atom::String(s) => ovsdb::Atom::String(s.clone()),
            Atom::Uuid(u) => ovsdb::Atom::Uuid(u.parse().map_err(|e| anyhow!("{e}"))?),
        })
    }

    /// `ovsdb_atom_to_string()`.
    pub fn to_text(&self) -> String {
        match self {
            Atom::Integer(i) => i.to_string(),
            Atom::Real(r) => format_g15(*r),
            Atom::Boolean(b) => b.to_string(),
            Atom::String(s) if string_needs_quotes(s) => Value::from(s.as_str()).to_string(),
            Atom::String(s) | Atom::Uuid(s) => s.clone(),
        }
    }

    /// `ovsdb_atom_to_bare()`: strings never quoted.
    pub fn to_bare(&self) -> String {
        match self {
            Atom::String(s) => s.clone(),
            other => other.to_text(),
        }
    }
}

/// `printf("%.15g")`, which OVS uses for reals.
fn format_g15(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let sci = format!("{x:.14e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if (-4..15).contains(&exp) {
        let decimals = (14 - exp).max(0) as usize;
        trim(&format!("{x:.decimals$}"))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

fn looks_like_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, &c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// OVS's `string_needs_quotes()`.
fn string_needs_quotes(s: &str) -> bool {
    let mut bytes = s.bytes();
    match bytes.next() {
        Some(c) if c.is_ascii_alphabetic() || c == b'_' => {}
        _ => return true,
    }
    if !bytes.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')) {
        return true;
    }
    s == "true" || s == "false" || looks_like_uuid(s)
}

/// Symbols (`@name`) standing for rows created in this run, mapped to provisional UUIDs.
#[derive(Debug, Default)]
pub struct Symtab {
    pub symbols: HashMap<String, String>,
}

impl Symtab {
    /// The provisional UUID for `@name`, created on first use.
    pub fn uuid_for(&mut self, name: &str) -> String {
        self.symbols
            .entry(name.to_owned())
            .or_insert_with(new_uuid)
            .clone()
    }
}

thread_local! {
    /// UUIDs handed out so far in this run, and how many the current attempt has used.
    static UUID_POOL: std::cell::RefCell<(Vec<String>, usize)> = const {
        std::cell::RefCell::new((Vec::new(), 0))
    };
}

/// A UUID for a row this run inserts. The n-th call of every attempt returns the same
/// UUID (see [`rewind_uuids`]): when a commit's outcome is unknown and the commands are
/// run again, the retry inserts under the same UUIDs, so the server itself refuses a
/// second copy (`duplicate uuid`) if the first attempt did commit.
pub fn new_uuid() -> String {
    UUID_POOL.with(|pool| {
        let (uuids, used) = &mut *pool.borrow_mut();
        if *used == uuids.len() {
            uuids.push(ovsdb::Uuid::new_random().to_string());
        }
        *used += 1;
        uuids[*used - 1].clone()
    })
}

/// Starts a new attempt: [`new_uuid`] hands out the same UUIDs again, in order.
pub fn rewind_uuids() {
    UUID_POOL.with(|pool| pool.borrow_mut().1 = 0);
}

/// OVS's `ovsdb_token_is_delim()`.
fn is_delim(c: char) -> bool {
    ":=, []{}!<>".contains(c)
}

/// OVS's `ovsdb_token_parse()`: one token, honouring quotes and backslashes.
pub fn parse_token(s: &str) -> Result<(String, &str)> {
    let mut out = String::new();
    let mut in_quotes = false;
    let mut chars = s.char_indices();
    let mut end = s.len();
    while let Some((i, c)) = chars.next() {
        if c == '\\' {
            if in_quotes {
                out.push('\\');
            }
            match chars.next() {
                Some((_, n)) => out.push(n),
                None => bail!("{s}: backslash at end of argument"),
            }
        } else if !in_quotes && is_delim(c) {
            end = i;
            break;
        } else {
            out.push(c);
            if c == '"' {
                in_quotes = !in_quotes;
            }
        }
    }
    if in_quotes {
        bail!("{s}: quoted string extends past end of argument");
    }
    Ok((out, &s[end..]))
}

/// `ovsdb_atom_from_string()`: parses one token into an atom of `base`, checking
/// constraints.
pub fn atom_from_string(base: &BaseType, s: &str, symtab: &mut Symtab) -> Result<Atom> {
    let atom = match base.atom_type {
        AtomicType::Integer => Atom::Integer(
            s.parse()
                .map_err(|_| anyhow!("\"{s}\" is not a valid integer or range"))?,
        ),
        AtomicType::Real => Atom::Real(
            s.parse()
                .map_err(|_| anyhow!("\"{s}\" is not a valid real number"))?,
        ),
        AtomicType::Boolean => Atom::Boolean(match s {
            "true" | "yes" | "on" | "1" => true,
            "false" | "no" | "off" | "0" => false,
            _ => bail!("\"{s}\" is not a valid boolean (use \"true\" or \"false\")"),
        }),
        AtomicType::String => {
            if s.is_empty() {
                bail!(
                    "An empty string is not valid as input; use \"\" to represent the empty string"
                );
            } else if s.starts_with('"') {
                if s.len() < 2 || !s.ends_with('"') {
                    bail!("{s}: missing quote at end of quoted string");
                }
                Atom::String(serde_json::from_str(s).map_err(|e| anyhow!("{s}: {e}"))?)
            } else {
                Atom::String(s.to_owned())
            }
        }
        AtomicType::Uuid => {
            if s.starts_with('@') {
                Atom::Uuid(symtab.uuid_for(s))
            } else if looks_like_uuid(s) {
                Atom::Uuid(s.to_ascii_lowercase())
            } else {
                bail!("\"{s}\" is not a valid UUID");
            }
        }
    };
    check_constraints(&atom, base)?;
    Ok(atom)
}

/// `ovsdb_atom_check_constraints()`, with the same messages.
pub fn check_constraints(atom: &Atom, base: &BaseType) -> Result<()> {
    if let Some(allowed) = &base.enum_values {
        let allowed: Vec<Atom> = allowed.iter().map(Atom::from_ovsdb).collect();
        if !allowed.iter().any(|a| a.cmp3(atom) == Ordering::Equal) {
            let mut sorted = allowed;
            sorted.sort_by(Atom::cmp3);
            let valid = Datum::set(sorted).to_text_with(true);
            bail!(
                "constraint violation: {} is not one of the allowed values ({valid})",
                atom.to_text()
            );
        }
    }
    if let Atom::Integer(i) = atom {
        let (min, max) = (base.min_integer, base.max_integer);
        match (min, max) {
            (Some(lo), Some(hi)) if *i < lo || *i > hi => bail!(
                "constraint violation: {i} is not in the valid range {lo} to {hi} (inclusive)"
            ),
            (Some(lo), None) if *i < lo => {
                bail!("constraint violation: {i} is less than minimum allowed value {lo}")
            }
            (None, Some(hi)) if *i > hi => {
                bail!("constraint violation: {i} is greater than maximum allowed value {hi}")
            }
            _ => {}
        }
    }
    if let Atom::String(s) = atom {
        let n = s.chars().count() as u64;
        if let Some(min) = base.min_length.filter(|&m| n < m) {
            bail!("constraint violation: \"{s}\" length {n} is less than minimum allowed length {min}");
        }
        if let Some(max) = base.max_length.filter(|&m| n > m) {
            bail!("constraint violation: \"{s}\" length {n} is greater than maximum allowed length {max}");
        }
    }
    Ok(())
}

/// A column value: a sorted set of keys, with values for maps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Datum {
    pub keys: Vec<Atom>,
    pub values: Option<Vec<Atom>>,
}

impl Datum {
    pub fn set(mut keys: Vec<Atom>) -> Datum {
        keys.sort_by(Atom::cmp3);
        keys.dedup_by(|a, b| a.cmp3(b) == Ordering::Equal);
        Datum { keys, values: None }
    }

    pub fn map(mut pairs: Vec<(Atom, Atom)>) -> Datum {
        pairs.sort_by(|a, b| a.0.cmp3(&b.0));
        pairs.dedup_by(|a, b| a.0.cmp3(&b.0) == Ordering::Equal);
        let (keys, values) = pairs.into_iter().unzip();
        Datum {
            keys,
            values: Some(values),
        }
    }

    pub fn empty(ty: &ColumnType) -> Datum {
        Datum {
            keys: Vec::new(),
            values: ty.is_map().then(Vec::new),
        }
    }

    pub fn single(atom: Atom) -> Datum {
        Datum {
            keys: vec![atom],
            values: None,
        }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Key/value pairs of a map (empty for a set).
    pub fn pairs(&self) -> impl Iterator<Item = (&Atom, &Atom)> {
        self.keys.iter().zip(self.values.iter().flatten())
    }

    /// The value for `key` in a map.
    pub fn get(&self, key: &Atom) -> Option<&Atom> {
        let i = self
            .keys
            .iter()
            .position(|k| k.cmp3(key) == Ordering::Equal)?;
        self.values.as_ref().map(|v| &v[i])
    }

    /// Value of a string-keyed map entry as `&str`.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(&Atom::String(key.to_owned()))
            .and_then(Atom::as_str)
    }

    pub fn contains(&self, key: &Atom) -> bool {
        self.keys.iter().any(|k| k.cmp3(key) == Ordering::Equal)
    }

    /// The first key as a string (for optional string columns).
    pub fn first_str(&self) -> Option<&str> {
        self.keys.first().and_then(Atom::as_str)
    }

    /// `ovsdb_datum_compare_3way()`.
    pub fn cmp3(&self, other: &Datum) -> Ordering {
        self.len().cmp(&other.len()).then_with(|| {
            let keys = self.keys.iter().zip(&other.keys).map(|(a, b)| a.cmp3(b));
            let vals = self
                .values
                .iter()
                .flatten()
                .zip(other.values.iter().flatten());
            keys.chain(vals.map(|(a, b)| a.cmp3(b)))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        })
    }

    /// Decodes the JSON form of a value of type `ty` (through the `ovsdb` crate's
    /// typed decoding, which knows a one-element set arrives as a bare atom).
    pub fn from_json(ty: &ColumnType, json: &Value) -> Result<Datum> {
        let value = ovsdb::Value::from_json_typed(json, ty)?;
        Ok(Datum::from_ovsdb(&value))
    }

    /// The same value as the `ovsdb` crate holds it.
    pub fn from_ovsdb(value: &ovsdb::Value) -> Datum {
        match value {
            ovsdb::Value::Set(set) => Datum::set(set.iter().map(Atom::from_ovsdb).collect()),
            ovsdb::Value::Map(map) => Datum::map(
                map.iter()
                    .map(|(k, v)| (Atom::from_ovsdb(k), Atom::from_ovsdb(v)))
                    .collect(),
            ),
        }
    }

    /// Encodes to JSON for a transaction, through the `ovsdb` crate's value.
    pub fn to_json(&self) -> Result<Value> {
        let keys = self.keys.iter().map(Atom::to_ovsdb);
        let value = match &self.values {
            Some(values) => {
                let values = values.iter().map(Atom::to_ovsdb);
                let pairs = keys
                    .zip(values)
                    .map(|(k, v)| Ok((k?, v?)))
                    .collect::<Result<Vec<_>>>()?;
                ovsdb::Value::Map(ovsdb::Map::from_pairs(pairs))
            }
            None => ovsdb::Value::Set(ovsdb::Set::from_atoms(keys.collect::<Result<_>>()?)),
        };
        Ok(value.to_json())
    }

    /// `ovsdb_datum_to_string()` for a column of type `ty`.
    pub fn to_text(&self, ty: &ColumnType) -> String {
        self.to_text_with(max_of(ty) > 1)
    }

    fn to_text_with(&self, multi: bool) -> String {
        let is_map = self.values.is_some();
        let bracket = multi || self.keys.is_empty();
        let mut out = String::new();
        if bracket {
            out.push(if is_map { '{' } else { '[' });
        }
        for (i, k) in self.keys.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&k.to_text());
            if let Some(values) = &self.values {
                out.push('=');
                out.push_str(&values[i].to_text());
            }
        }
        if bracket {
            out.push(if is_map { '}' } else { ']' });
        }
        out
    }

    /// `ovsdb_datum_to_bare()`.
    pub fn to_bare(&self) -> String {
        let mut parts = Vec::with_capacity(self.keys.len());
        for (i, k) in self.keys.iter().enumerate() {
            match &self.values {
                Some(v) => parts.push(format!("{}={}", k.to_bare(), v[i].to_bare())),
                None => parts.push(k.to_bare()),
            }
        }
        parts.join(" ")
    }

    /// `ovsdb_datum_from_string()`: the text form, checked against `ty`.
    pub fn from_text(ty: &ColumnType, s: &str, symtab: &mut Symtab) -> Result<Datum> {
        let is_map = ty.is_map();
        let mut p = s.trim_start();
        let end_delim = if p.starts_with(if is_map { '{' } else { '[' }) {
            p = p[1..].trim_start();
            Some(if is_map { '}' } else { ']' })
        } else if p.is_empty() {
            bail!(
                "use \"{}\" to specify the empty {}",
                if is_map { "{}" } else { "[]" },
                if is_map { "map" } else { "set" }
            );
        } else {
            None
        };
        let mut keys = Vec::new();
        let mut values = Vec::new();
        while let Some(c) = p.chars().next() {
            if Some(c) == end_delim {
                break;
            }
            if is_delim(c) {
                bail!("{s}: unexpected \"{c}\" parsing {}", type_to_english(ty));
            }
            let (tok, rest) = parse_token(p)?;
            keys.push(atom_from_string(&ty.key, &tok, symtab)?);
            p = rest;
            if let Some(vt) = &ty.value {
                p = p.trim_start();
                let Some(rest) = p.strip_prefix('=') else {
                    // C prints the offending byte with "%c"; at the end of the string that
                    // is a NUL, which cuts the message short.
                    match p.chars().next() {
                        Some(at) => bail!("{s}: syntax error at \"{at}\" expecting \"=\""),
                        None => bail!("{s}: syntax error at \""),
                    }
                };
                let (tok, rest) = parse_token(rest.trim_start())?;
                values.push(atom_from_string(vt, &tok, symtab)?);
                p = rest;
            }
            p = p.trim_start();
            if let Some(rest) = p.strip_prefix(',') {
                p = rest.trim_start();
            }
        }
        match end_delim {
            Some(d) if !p.starts_with(d) => bail!("{s}: missing \"{d}\" at end of data"),
            Some(_) if !p[1..].trim().is_empty() => {
                bail!(
                    "{s}: trailing garbage after \"{}\"",
                    end_delim.unwrap_or(' ')
                )
            }
            _ => {}
        }
        let n = keys.len();
        let kind = if is_map { "pair(s)" } else { "value(s)" };
        if (n as u64) < ty.min {
            bail!(
                "{s}: {n} {kind} specified but the minimum number is {}",
                ty.min
            );
        } else if n as u64 > max_of(ty) {
            bail!(
                "{s}: {n} {kind} specified but the maximum number is {}",
                max_of(ty)
            );
        }
        let datum = if is_map {
            Datum::map(keys.into_iter().zip(values).collect())
        } else {
            Datum::set(keys)
        };
        if datum.len() != n {
            bail!(
                "{s}: {} contains duplicate {}",
                if is_map { "map" } else { "set" },
                if is_map { "key" } else { "value" }
            );
        }
        Ok(datum)
    }
}

/// OVS's `ovsdb_type_to_english()`, for parse errors.
fn type_to_english(ty: &ColumnType) -> String {
    let atomic = |b: &BaseType| match b.atom_type {
        AtomicType::Integer => "integer",
        AtomicType::Real => "real",
        AtomicType::Boolean => "boolean",
        AtomicType::String => "string",
        AtomicType::Uuid => "uuid",
    };
    match &ty.value {
        Some(v) => format!("map of {} to {}", atomic(&ty.key), atomic(v)),
        None if ty.max == Some(1) => atomic(&ty.key).to_owned(),
        None => format!("set of {}", atomic(&ty.key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(Atom::String("sw0".into()).to_text(), "sw0");
        assert_eq!(Atom::String("".into()).to_text(), "\"\"");
        assert_eq!(Atom::String("10.0.0.1".into()).to_text(), "\"10.0.0.1\"");
        assert_eq!(Atom::String("true".into()).to_text(), "\"true\"");
        assert_eq!(Atom::String("a b".into()).to_text(), "\"a b\"");
    }

    #[test]
    fn reals_print_like_printf_g() {
        assert_eq!(format_g15(1.5), "1.5");
        assert_eq!(format_g15(100.0), "100");
        assert_eq!(format_g15(1e20), "1e+20");
    }

    #[test]
    fn tokens_stop_at_delimiters() {
        let (tok, rest) = parse_token("key=value").unwrap();
        assert_eq!((tok.as_str(), rest), ("key", "=value"));
        let (tok, _) = parse_token("\"a=b\"=c").unwrap();
        assert_eq!(tok, "\"a=b\"");
    }
}
