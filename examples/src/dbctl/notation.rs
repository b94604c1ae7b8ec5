//! The `ovs-vsctl(8)` "Database Values" text notation (`[a, b]`, `{k=v}`, strings quoted only
//! when needed) over the `ovsdb` crate's values: parsing as OVS's
//! `ovsdb_datum_from_string()` and printing as `ovsdb_datum_to_string()`, so output matches
//! the C tools byte for byte. Values themselves are [`ovsdb::Value`] / [`ovsdb::Atom`].

use super::schema::{max_of, AtomicType, BaseType, ColumnType};
use anyhow::{anyhow, bail, Result};
use ovsdb::{Atom, Map, Set, Value};
use std::collections::HashMap;

/// An atom in the text notation.
pub trait AtomText {
    /// `ovsdb_atom_to_string()`.
    fn to_text(&self) -> String;
    /// `ovsdb_atom_to_bare()`: strings never quoted.
    fn to_bare(&self) -> String;
}

impl AtomText for Atom {
    fn to_text(&self) -> String {
        match self {
            Atom::Integer(i) => i.to_string(),
            Atom::Real(r) => format_g15(*r),
            Atom::Boolean(b) => b.to_string(),
            Atom::String(s) if string_needs_quotes(s) => {
                serde_json::Value::from(s.as_str()).to_string()
            }
            Atom::String(s) => s.clone(),
            Atom::Uuid(u) => u.to_string(),
            Atom::NamedUuid(n) => n.as_str().to_owned(),
        }
    }

    fn to_bare(&self) -> String {
        match self {
            Atom::String(s) => s.clone(),
            other => other.to_text(),
        }
    }
}

/// The atom for a row reference given as a UUID string.
pub fn uuid_atom(uuid: &str) -> Result<Atom> {
    Ok(Atom::Uuid(uuid.parse()?))
}

/// The value of a string column holding `s`.
pub fn string(s: &str) -> Value {
    Value::scalar(s)
}

/// A set of `atoms` (sorted, duplicates dropped).
pub fn set_of(atoms: Vec<Atom>) -> Value {
    Value::Set(Set::from_atoms(atoms))
}

/// A map of `pairs`; for a repeated key the first pair wins, as in the C tools, which
/// add each `KEY=VALUE` argument only if the key is new.
pub fn map_of(pairs: Vec<(Atom, Atom)>) -> Value {
    let mut map = Map::new();
    for (k, v) in pairs {
        if map.get(&k).is_none() {
            map.insert(k, v);
        }
    }
    Value::Map(map)
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
                uuid_atom(&symtab.uuid_for(s))?
            } else if looks_like_uuid(s) {
                uuid_atom(&s.to_ascii_lowercase())?
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
        if !allowed.contains(atom) {
            let valid = set_to_text(allowed.iter(), None, true);
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

/// A value in the text notation.
pub trait ValueText {
    /// `ovsdb_datum_to_string()` for a column of type `ty`.
    fn to_text(&self, ty: &ColumnType) -> String;
    /// `ovsdb_datum_to_bare()`.
    fn to_bare(&self) -> String;
}

impl ValueText for Value {
    fn to_text(&self, ty: &ColumnType) -> String {
        let values = self.as_map().map(|m| m.iter().map(|(_, v)| v));
        let multi = max_of(ty) > 1;
        match values {
            Some(values) => set_to_text(self.keys(), Some(values.collect()), multi),
            None => set_to_text(self.keys(), None, multi),
        }
    }

    fn to_bare(&self) -> String {
        let parts: Vec<String> = match self {
            Value::Set(set) => set.iter().map(Atom::to_bare).collect(),
            Value::Map(map) => map
                .iter()
                .map(|(k, v)| format!("{}={}", k.to_bare(), v.to_bare()))
                .collect(),
        };
        parts.join(" ")
    }
}

/// The body of `ovsdb_datum_to_string()`: `keys` (with `values` for a map), bracketed
/// when the column may hold several or holds none.
fn set_to_text<'a>(
    keys: impl Iterator<Item = &'a Atom>,
    values: Option<Vec<&Atom>>,
    multi: bool,
) -> String {
    let keys: Vec<&Atom> = keys.collect();
    let bracket = multi || keys.is_empty();
    let (open, close) = if values.is_some() {
        ('{', '}')
    } else {
        ('[', ']')
    };
    let mut out = String::new();
    if bracket {
        out.push(open);
    }
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&k.to_text());
        if let Some(values) = &values {
            out.push('=');
            out.push_str(&values[i].to_text());
        }
    }
    if bracket {
        out.push(close);
    }
    out
}

/// `ovsdb_datum_from_string()`: the text form, checked against `ty`.
pub fn value_from_text(ty: &ColumnType, s: &str, symtab: &mut Symtab) -> Result<Value> {
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
        Value::Map(Map::from_pairs(keys.into_iter().zip(values).collect()))
    } else {
        Value::Set(Set::from_atoms(keys))
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
        assert_eq!(
            Atom::Uuid(ovsdb::Uuid::NIL).to_text(),
            "00000000-0000-0000-0000-000000000000"
        );
        assert_eq!(Atom::String("".into()).to_text(), "\"\"");
        assert_eq!(Atom::String("10.0.0.1".into()).to_text(), "\"10.0.0.1\"");
        assert_eq!(Atom::String("true".into()).to_text(), "\"true\"");
        assert_eq!(Atom::String("a b".into()).to_text(), "\"a b\"");
    }

    /// An unlimited set of `key`, or map of `key` to `value`.
    fn column(key: AtomicType, value: Option<AtomicType>) -> ColumnType {
        ColumnType {
            key: BaseType::new(key),
            value: value.map(BaseType::new),
            min: 0,
            max: None,
        }
    }

    #[test]
    fn text_round_trips_through_the_crates_values_sorted() {
        let mut symtab = Symtab::default();
        let map = column(AtomicType::String, Some(AtomicType::String));
        let value = value_from_text(&map, "{b=\"x y\", a=1}", &mut symtab).unwrap();
        assert_eq!(value, Value::map([("a", "1"), ("b", "x y")]));
        assert_eq!(value.to_text(&map), "{a=\"1\", b=\"x y\"}");
        assert_eq!(value.to_bare(), "a=1 b=x y");
        let set = column(AtomicType::Integer, None);
        let value = value_from_text(&set, "[3, 1, 2]", &mut symtab).unwrap();
        assert_eq!(value.to_text(&set), "[1, 2, 3]");
        assert_eq!(Value::empty_map().to_text(&map), "{}");
    }

    #[test]
    fn duplicates_are_refused_and_first_pair_wins_in_map_of() {
        let mut symtab = Symtab::default();
        let set = column(AtomicType::Integer, None);
        let err = value_from_text(&set, "[1, 1]", &mut symtab).unwrap_err();
        assert_eq!(err.to_string(), "[1, 1]: set contains duplicate value");
        let pairs = vec![
            (Atom::from("k"), Atom::from("first")),
            (Atom::from("k"), Atom::from("second")),
        ];
        assert_eq!(map_of(pairs), Value::map([("k", "first")]));
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
