//! The slice of an `.ovsschema` document (RFC 7047 §3.2) the generator needs.
//!
//! Parsed straight from JSON so the generator stays a pure function of the
//! schema text: table names, whether a table is a root, its `indexes`, and per
//! column the `<type>`: a `key` base type, an optional `value` base type, and
//! `min`/`max` multiplicity. Base types carry the atomic type plus the
//! constraints that change the Rust type: `enum` (string enums become Rust
//! enums) and `refTable`/`refType` (uuids become per-table row ids).

use serde_json::{Map, Value as Json};

use super::CodegenError;

/// A parsed schema, tables sorted by name.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaModel {
    /// `name` of the database, e.g. `OVN_Northbound`.
    pub name: String,
    /// `version` of the schema, e.g. `7.0.0`.
    pub version: String,
    /// Tables, sorted by name.
    pub tables: Vec<TableModel>,
}

/// One table of the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct TableModel {
    /// Table name as the server spells it.
    pub name: String,
    /// `isRoot`: rows not referenced from elsewhere are kept.
    pub is_root: bool,
    /// `indexes`: sets of columns whose values are unique together.
    pub indexes: Vec<Vec<String>>,
    /// Columns, sorted by name (without `_uuid`/`_version`).
    pub columns: Vec<ColumnModel>,
}

/// One column and its `<type>`.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnModel {
    /// Column name.
    pub name: String,
    /// The key type (the element type of a set, the key type of a map).
    pub key: BaseModel,
    /// The value type for maps.
    pub value: Option<BaseModel>,
    /// Minimum number of elements (0 or 1).
    pub min: u64,
    /// Maximum number of elements, `None` for `"unlimited"`.
    pub max: Option<u64>,
}

/// The atomic types of RFC 7047 §3.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicKind {
    /// 64-bit signed integer.
    Integer,
    /// IEEE double.
    Real,
    /// true/false.
    Boolean,
    /// UTF-8 string.
    String,
    /// A row uuid.
    Uuid,
}

/// A `<base-type>` with the constraints that matter for code generation.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseModel {
    /// The atomic type.
    pub atomic: AtomicKind,
    /// `enum` constraint of a string base type, in schema order.
    pub enum_values: Option<Vec<String>>,
    /// `refTable` of a uuid base type.
    pub ref_table: Option<String>,
    /// `refType` is `weak`.
    pub weak: bool,
}

impl ColumnModel {
    /// A column holding exactly one atom.
    pub fn is_scalar(&self) -> bool {
        self.value.is_none() && self.min == 1 && self.max == Some(1)
    }

    /// A column holding zero or one atom.
    pub fn is_optional(&self) -> bool {
        self.value.is_none() && self.min == 0 && self.max == Some(1)
    }
}

/// Parses the schema text.
pub fn parse(text: &str) -> Result<SchemaModel, CodegenError> {
    let json: Json = serde_json::from_str(text).map_err(|e| CodegenError::Json(e.to_string()))?;
    let top = json
        .as_object()
        .ok_or_else(|| invalid("schema", "not a JSON object"))?;
    let name = str_member(top, "name", "schema")?;
    let version = top
        .get("version")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string();
    let tables_json = top
        .get("tables")
        .and_then(Json::as_object)
        .ok_or_else(|| invalid("schema", "missing \"tables\" object"))?;
    let mut tables = Vec::with_capacity(tables_json.len());
    for (table_name, table) in tables_json {
        tables.push(parse_table(table_name, table)?);
    }
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(SchemaModel {
        name,
        version,
        tables,
    })
}

fn parse_table(name: &str, json: &Json) -> Result<TableModel, CodegenError> {
    let what = format!("table {name}");
    let obj = json
        .as_object()
        .ok_or_else(|| invalid(&what, "not an object"))?;
    let cols = obj
        .get("columns")
        .and_then(Json::as_object)
        .ok_or_else(|| invalid(&what, "missing \"columns\""))?;
    let mut columns = Vec::with_capacity(cols.len());
    for (col_name, col) in cols {
        let where_ = format!("column {name}.{col_name}");
        let ty = col
            .get("type")
            .ok_or_else(|| invalid(&where_, "missing \"type\""))?;
        columns.push(parse_column(col_name, ty, &where_)?);
    }
    columns.sort_by(|a, b| a.name.cmp(&b.name));
    let indexes = obj
        .get("indexes")
        .and_then(Json::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Json::as_array)
                .map(|cols| {
                    cols.iter()
                        .filter_map(Json::as_str)
                        .map(String::from)
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default();
    let is_root = obj.get("isRoot").and_then(Json::as_bool).unwrap_or(false);
    Ok(TableModel {
        name: name.to_string(),
        is_root,
        indexes,
        columns,
    })
}

fn parse_column(name: &str, ty: &Json, what: &str) -> Result<ColumnModel, CodegenError> {
    // `<type>` is either a bare atomic type name or an object.
    let Some(obj) = ty.as_object() else {
        let key = parse_base(ty, what)?;
        return Ok(ColumnModel {
            name: name.to_string(),
            key,
            value: None,
            min: 1,
            max: Some(1),
        });
    };
    let key = parse_base(
        obj.get("key")
            .ok_or_else(|| invalid(what, "type has no \"key\""))?,
        what,
    )?;
    let value = obj.get("value").map(|v| parse_base(v, what)).transpose()?;
    let min = match obj.get("min") {
        None => 1,
        Some(m) => m
            .as_u64()
            .ok_or_else(|| invalid(what, "\"min\" is not an integer"))?,
    };
    let max = match obj.get("max") {
        None => Some(1),
        Some(Json::String(s)) if s == "unlimited" => None,
        Some(m) => Some(
            m.as_u64()
                .ok_or_else(|| invalid(what, "\"max\" is not an integer or \"unlimited\""))?,
        ),
    };
    Ok(ColumnModel {
        name: name.to_string(),
        key,
        value,
        min,
        max,
    })
}

fn parse_base(json: &Json, what: &str) -> Result<BaseModel, CodegenError> {
    let (type_name, obj) = match json {
        Json::String(s) => (s.as_str(), None),
        Json::Object(o) => (
            o.get("type")
                .and_then(Json::as_str)
                .ok_or_else(|| invalid(what, "base type has no \"type\""))?,
            Some(o),
        ),
        _ => return Err(invalid(what, "base type is neither a string nor an object")),
    };
    let atomic = match type_name {
        "integer" => AtomicKind::Integer,
        "real" => AtomicKind::Real,
        "boolean" => AtomicKind::Boolean,
        "string" => AtomicKind::String,
        "uuid" => AtomicKind::Uuid,
        other => return Err(invalid(what, &format!("unknown atomic type {other:?}"))),
    };
    let mut base = BaseModel {
        atomic,
        enum_values: None,
        ref_table: None,
        weak: false,
    };
    let Some(obj) = obj else { return Ok(base) };
    if atomic == AtomicKind::String {
        base.enum_values = obj.get("enum").map(|e| enum_strings(e, what)).transpose()?;
    }
    base.ref_table = obj.get("refTable").and_then(Json::as_str).map(String::from);
    base.weak = obj.get("refType").and_then(Json::as_str) == Some("weak");
    Ok(base)
}

/// An `enum` is a single atom or `["set", [atoms...]]`.
fn enum_strings(json: &Json, what: &str) -> Result<Vec<String>, CodegenError> {
    let atoms: Vec<&Json> = match json {
        Json::Array(a) if a.len() == 2 && a[0] == "set" => a[1]
            .as_array()
            .ok_or_else(|| invalid(what, "malformed enum set"))?
            .iter()
            .collect(),
        other => vec![other],
    };
    atoms
        .into_iter()
        .map(|a| {
            a.as_str()
                .map(String::from)
                .ok_or_else(|| invalid(what, "non-string enum value"))
        })
        .collect()
}

fn str_member(obj: &Map<String, Json>, key: &str, what: &str) -> Result<String, CodegenError> {
    obj.get(key)
        .and_then(Json::as_str)
        .map(String::from)
        .ok_or_else(|| invalid(what, &format!("missing string member {key:?}")))
}

fn invalid(what: &str, why: &str) -> CodegenError {
    CodegenError::Invalid {
        what: what.to_string(),
        why: why.to_string(),
    }
}
