//! The parts of an `.ovsschema` (RFC 7047 §3.2) the command-line tools need: each column's
//! type, so that `col=value` arguments can be parsed and values printed the C tools' way.

use anyhow::{anyhow, bail, Result};
use serde_json::Value;
use std::collections::BTreeMap;

/// An OVSDB atomic type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AtomicType {
    Integer,
    Real,
    Boolean,
    String,
    Uuid,
}

/// A `<base-type>`: atomic type plus its constraints.
#[derive(Debug, Clone)]
pub struct BaseType {
    pub atomic: AtomicType,
    /// Allowed values (`"enum"`), as JSON atoms.
    pub enum_values: Option<Vec<Value>>,
    pub min_integer: Option<i64>,
    pub max_integer: Option<i64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    /// Referenced table of a uuid column.
    pub ref_table: Option<String>,
    /// Whether the reference is `"strong"` (the default) or `"weak"`.
    pub ref_strong: bool,
}

/// A column `<type>`: key, optional value (maps), and the size bounds.
#[derive(Debug, Clone)]
pub struct ColumnType {
    pub key: BaseType,
    pub value: Option<BaseType>,
    pub min: u64,
    pub max: u64,
}

impl ColumnType {
    pub fn is_map(&self) -> bool {
        self.value.is_some()
    }
}

/// One column of a table.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
    pub mutable: bool,
}

/// One table: columns in name order, the order the C tools list them in.
#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub columns: BTreeMap<String, Column>,
    pub is_root: bool,
    pub max_rows: Option<u64>,
}

/// A database schema.
#[derive(Debug, Clone)]
pub struct Schema {
    pub name: String,
    pub tables: BTreeMap<String, Table>,
}

fn atomic_type(name: &str) -> Result<AtomicType> {
    Ok(match name {
        "integer" => AtomicType::Integer,
        "real" => AtomicType::Real,
        "boolean" => AtomicType::Boolean,
        "string" => AtomicType::String,
        "uuid" => AtomicType::Uuid,
        other => bail!("unknown atomic type {other:?}"),
    })
}

fn base_type(json: &Value) -> Result<BaseType> {
    if let Some(name) = json.as_str() {
        return Ok(BaseType {
            atomic: atomic_type(name)?,
            enum_values: None,
            min_integer: None,
            max_integer: None,
            min_length: None,
            max_length: None,
            ref_table: None,
            ref_strong: true,
        });
    }
    let ty = json["type"]
        .as_str()
        .ok_or_else(|| anyhow!("base type without \"type\""))?;
    let enum_values = match &json["enum"] {
        Value::Null => None,
        Value::Array(a) if a.first() == Some(&Value::from("set")) => Some(
            a.get(1)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        ),
        atom => Some(vec![atom.clone()]),
    };
    Ok(BaseType {
        atomic: atomic_type(ty)?,
        enum_values,
        min_integer: json["minInteger"].as_i64(),
        max_integer: json["maxInteger"].as_i64(),
        min_length: json["minLength"].as_u64(),
        max_length: json["maxLength"].as_u64(),
        ref_table: json["refTable"].as_str().map(str::to_owned),
        ref_strong: json["refType"].as_str() != Some("weak"),
    })
}

fn column_type(json: &Value) -> Result<ColumnType> {
    if json.is_string() {
        return Ok(ColumnType {
            key: base_type(json)?,
            value: None,
            min: 1,
            max: 1,
        });
    }
    let max = match &json["max"] {
        Value::String(s) if s == "unlimited" => u64::MAX,
        v => v.as_u64().unwrap_or(1),
    };
    Ok(ColumnType {
        key: base_type(&json["key"])?,
        value: if json["value"].is_null() {
            None
        } else {
            Some(base_type(&json["value"])?)
        },
        min: json["min"].as_u64().unwrap_or(1),
        max,
    })
}

impl Schema {
    /// Parses a schema as returned by `get_schema`.
    pub fn parse(json: &Value) -> Result<Schema> {
        let name = json["name"]
            .as_str()
            .ok_or_else(|| anyhow!("schema without name"))?;
        let mut tables = BTreeMap::new();
        let table_objs = json["tables"]
            .as_object()
            .ok_or_else(|| anyhow!("schema without tables"))?;
        for (tname, tjson) in table_objs {
            let mut columns = BTreeMap::new();
            for (cname, cjson) in tjson["columns"].as_object().into_iter().flatten() {
                let ty =
                    column_type(&cjson["type"]).map_err(|e| anyhow!("{tname}.{cname}: {e}"))?;
                let mutable = cjson["mutable"].as_bool().unwrap_or(true);
                columns.insert(
                    cname.clone(),
                    Column {
                        name: cname.clone(),
                        ty,
                        mutable,
                    },
                );
            }
            let table = Table {
                name: tname.clone(),
                columns,
                is_root: tjson["isRoot"].as_bool().unwrap_or(false),
                max_rows: tjson["maxRows"].as_u64(),
            };
            tables.insert(tname.clone(), table);
        }
        Ok(Schema {
            name: name.to_owned(),
            tables,
        })
    }

    pub fn table(&self, name: &str) -> Result<&Table> {
        self.tables
            .get(name)
            .ok_or_else(|| anyhow!("unknown table \"{name}\""))
    }
}

/// OVS's `score_partial_match()`: table and column names may be abbreviated and are
/// matched case-insensitively, with `-` standing for `_`.
fn score_partial_match(name: &str, given: &str) -> u32 {
    if name == given {
        return u32::MAX;
    }
    let norm = |c: u8| {
        if c == b'-' {
            b'_'
        } else {
            c.to_ascii_lowercase()
        }
    };
    let (n, g) = (name.as_bytes(), given.as_bytes());
    let mut score = 0;
    loop {
        let (a, b) = (n.get(score).copied(), g.get(score).copied());
        match (a, b) {
            (None, None) => return u32::MAX - 1,
            (Some(a), Some(b)) if norm(a) == norm(b) => score += 1,
            (_, None) => return score as u32,
            _ => return 0,
        }
    }
}

/// Picks the single best match of `given` among `names` (as OVS's `get_table()`).
pub fn best_match<'a>(names: impl Iterator<Item = &'a String>, given: &str) -> Vec<&'a String> {
    let mut best: Vec<&String> = Vec::new();
    let mut best_score = 0;
    for name in names {
        let score = score_partial_match(name, given);
        if score > 0 && score >= best_score {
            if score > best_score {
                best.clear();
            }
            best.push(name);
            best_score = score;
        }
    }
    best
}

impl Schema {
    /// Resolves a possibly abbreviated table name, with the C tools' error messages.
    pub fn find_table(&self, given: &str) -> Result<&Table> {
        let best = best_match(self.tables.keys(), given);
        match best.as_slice() {
            [] => bail!("unknown table \"{given}\""),
            [one] => Ok(&self.tables[*one]),
            many => bail!(
                "\"{given}\" matches multiple table names: {}",
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl Table {
    /// Resolves a possibly abbreviated column name, with the C tools' error messages.
    pub fn find_column(&self, given: &str) -> Result<&Column> {
        let best = best_match(self.columns.keys(), given);
        match best.as_slice() {
            [] => bail!(
                "{} does not contain a column whose name matches \"{given}\"",
                self.name
            ),
            [one] => Ok(&self.columns[*one]),
            many => bail!(
                "{} contains more than one column whose name matches \"{given}\": {}",
                self.name,
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    pub fn column(&self, name: &str) -> Result<&Column> {
        self.columns
            .get(name)
            .ok_or_else(|| anyhow!("{}: no column {name}", self.name))
    }
}
