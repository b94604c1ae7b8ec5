//! Parsing and writing `.ovsschema` JSON.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::{Map as JsonMap, Value as Json};

use super::{BaseType, ColumnSchema, ColumnType, DatabaseSchema, RefType, TableSchema};
use crate::value::{AtomType, Value};

/// A schema document that is not valid; names the table and column at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// Not JSON, or a member has the wrong JSON type (serde_json's message).
    #[error("malformed schema JSON: {0}")]
    Json(String),
    /// A column's `type` is not a valid `<type>`.
    #[error("table {table}, column {column}: invalid type: {reason}")]
    InvalidType {
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// What is wrong.
        reason: String,
    },
    /// A `refTable` names a table the schema does not have.
    #[error("table {table}, column {column}: refTable {ref_table:?} is not a table of the schema")]
    UnknownRefTable {
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// The unknown table.
        ref_table: String,
    },
    /// An index names a column the table does not have.
    #[error("table {table}: index {index:?} names unknown column {column:?}")]
    UnknownIndexColumn {
        /// The table.
        table: String,
        /// The index, as written.
        index: Vec<String>,
        /// The unknown column.
        column: String,
    },
    /// A table or column name that is not an `<id>`, or a column name starting with `_`.
    #[error("invalid {kind} name {name:?}")]
    InvalidName {
        /// `"table"` or `"column"`.
        kind: &'static str,
        /// The name.
        name: String,
    },
}

impl From<serde_json::Error> for SchemaError {
    fn from(e: serde_json::Error) -> Self {
        SchemaError::Json(e.to_string())
    }
}

#[derive(Deserialize)]
struct RawSchema {
    name: String,
    version: String,
    #[serde(default)]
    cksum: Option<String>,
    tables: BTreeMap<String, RawTable>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTable {
    columns: BTreeMap<String, RawColumn>,
    #[serde(default)]
    max_rows: Option<u64>,
    #[serde(default)]
    is_root: Option<bool>,
    #[serde(default)]
    indexes: Vec<Vec<String>>,
}

#[derive(Deserialize)]
struct RawColumn {
    #[serde(rename = "type")]
    type_: Json,
    #[serde(default)]
    ephemeral: Option<bool>,
    #[serde(default)]
    mutable: Option<bool>,
}

fn is_id(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl DatabaseSchema {
    /// Parses a schema document (the contents of a `.ovsschema` file or a `get_schema`
    /// reply) and checks its internal consistency (refTables and index columns exist).
    pub fn from_json_str(text: &str) -> Result<DatabaseSchema, SchemaError> {
        let raw: RawSchema = serde_json::from_str(text)?;
        Self::from_raw(raw)
    }

    /// Like [`DatabaseSchema::from_json_str`], from parsed JSON.
    pub fn from_json(json: &Json) -> Result<DatabaseSchema, SchemaError> {
        let raw = RawSchema::deserialize(json)?;
        Self::from_raw(raw)
    }

    fn from_raw(raw: RawSchema) -> Result<DatabaseSchema, SchemaError> {
        let mut tables = BTreeMap::new();
        for (name, raw_table) in raw.tables {
            let table = parse_table(&name, raw_table)?;
            tables.insert(name, table);
        }
        let schema = DatabaseSchema {
            name: raw.name,
            version: raw.version,
            cksum: raw.cksum,
            tables,
        };
        schema.check_references()?;
        Ok(schema)
    }

    fn check_references(&self) -> Result<(), SchemaError> {
        for table in self.tables.values() {
            for column in table.columns.values() {
                let ty = &column.type_;
                for base in std::iter::once(&ty.key).chain(ty.value.as_ref()) {
                    match &base.ref_table {
                        Some(target) if !self.tables.contains_key(target) => {
                            return Err(SchemaError::UnknownRefTable {
                                table: table.name.to_string(),
                                column: column.name.to_string(),
                                ref_table: target.clone(),
                            })
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// Writes the schema back as JSON (defaults left out, so the text may be shorter than
    /// the original but parses to an equal schema).
    pub fn to_json(&self) -> Json {
        let mut tables = JsonMap::new();
        for (name, table) in &self.tables {
            tables.insert(name.clone(), table_to_json(table));
        }
        let mut doc = JsonMap::new();
        doc.insert("name".into(), Json::String(self.name.clone()));
        doc.insert("version".into(), Json::String(self.version.clone()));
        if let Some(cksum) = &self.cksum {
            doc.insert("cksum".into(), Json::String(cksum.clone()));
        }
        doc.insert("tables".into(), Json::Object(tables));
        Json::Object(doc)
    }
}

fn parse_table(name: &str, raw: RawTable) -> Result<TableSchema, SchemaError> {
    if !is_id(name) {
        return Err(SchemaError::InvalidName {
            kind: "table",
            name: name.to_owned(),
        });
    }
    let mut columns = BTreeMap::new();
    for (column, raw_column) in raw.columns {
        if !is_id(&column) || column.starts_with('_') {
            return Err(SchemaError::InvalidName {
                kind: "column",
                name: column,
            });
        }
        let type_ =
            parse_column_type(&raw_column.type_).map_err(|reason| SchemaError::InvalidType {
                table: name.to_owned(),
                column: column.clone(),
                reason,
            })?;
        let schema = ColumnSchema {
            name: Arc::from(column.as_str()),
            type_,
            ephemeral: raw_column.ephemeral.unwrap_or(false),
            mutable: raw_column.mutable.unwrap_or(true),
        };
        columns.insert(column, schema);
    }
    for index in &raw.indexes {
        for column in index {
            if !columns.contains_key(column) && column != "_uuid" && column != "_version" {
                return Err(SchemaError::UnknownIndexColumn {
                    table: name.to_owned(),
                    index: index.clone(),
                    column: column.clone(),
                });
            }
        }
    }
    Ok(TableSchema {
        name: Arc::from(name),
        columns,
        max_rows: raw.max_rows,
        is_root: raw.is_root.unwrap_or(false),
        indexes: raw.indexes,
    })
}

/// Parses a `<type>`.
pub(crate) fn parse_column_type(json: &Json) -> Result<ColumnType, String> {
    let obj = match json {
        Json::String(name) => return Ok(ColumnType::scalar(atom_type_named(name)?)),
        Json::Object(obj) => obj,
        other => return Err(format!("expected a type name or object, found {other}")),
    };
    known_members(obj, &["key", "value", "min", "max"])?;
    let key = parse_base_type(obj.get("key").ok_or("missing \"key\"")?)?;
    let value = obj.get("value").map(parse_base_type).transpose()?;
    let min = match obj.get("min") {
        None => 1,
        Some(Json::Number(n)) if n.as_u64().is_some_and(|n| n <= 1) => n.as_u64().unwrap_or(1),
        Some(other) => return Err(format!("\"min\" must be 0 or 1, found {other}")),
    };
    let max = match obj.get("max") {
        None => Some(1),
        Some(Json::String(s)) if s == "unlimited" => None,
        Some(Json::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => n.as_u64(),
        Some(other) => {
            return Err(format!(
                "\"max\" must be a positive integer or \"unlimited\", found {other}"
            ))
        }
    };
    if max.is_some_and(|max| max < min) {
        return Err(format!(
            "\"min\" {min} exceeds \"max\" {}",
            max.unwrap_or(0)
        ));
    }
    Ok(ColumnType {
        key,
        value,
        min,
        max,
    })
}

fn known_members(obj: &JsonMap<String, Json>, known: &[&str]) -> Result<(), String> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(format!("unknown member {unknown:?}")),
        None => Ok(()),
    }
}

fn atom_type_named(name: &str) -> Result<AtomType, String> {
    AtomType::from_name(name).ok_or_else(|| format!("unknown atomic type {name:?}"))
}

/// Parses a `<base-type>`.
fn parse_base_type(json: &Json) -> Result<BaseType, String> {
    let obj = match json {
        Json::String(name) => return Ok(BaseType::new(atom_type_named(name)?)),
        Json::Object(obj) => obj,
        other => return Err(format!("expected a base type, found {other}")),
    };
    known_members(
        obj,
        &[
            "type",
            "enum",
            "minInteger",
            "maxInteger",
            "minReal",
            "maxReal",
            "minLength",
            "maxLength",
            "refTable",
            "refType",
        ],
    )?;
    let atom_type = match obj.get("type") {
        Some(Json::String(name)) => atom_type_named(name)?,
        _ => return Err("base type lacks a string \"type\"".into()),
    };
    let mut base = BaseType::new(atom_type);
    if let Some(values) = obj.get("enum") {
        let enum_type = ColumnType {
            key: BaseType::new(atom_type),
            value: None,
            min: 0,
            max: None,
        };
        let value =
            Value::from_json_typed(values, &enum_type).map_err(|e| format!("\"enum\": {e}"))?;
        base.enum_values = value.as_set().cloned();
    }
    let int = |name: &str| -> Result<Option<i64>, String> {
        obj.get(name)
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| format!("{name:?} must be an integer, found {v}"))
            })
            .transpose()
    };
    let uint = |name: &str| -> Result<Option<u64>, String> {
        obj.get(name)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| format!("{name:?} must be a non-negative integer, found {v}"))
            })
            .transpose()
    };
    let real = |name: &str| -> Result<Option<f64>, String> {
        obj.get(name)
            .map(|v| {
                v.as_f64()
                    .ok_or_else(|| format!("{name:?} must be a number, found {v}"))
            })
            .transpose()
    };
    base.min_integer = int("minInteger")?;
    base.max_integer = int("maxInteger")?;
    base.min_real = real("minReal")?;
    base.max_real = real("maxReal")?;
    base.min_length = uint("minLength")?;
    base.max_length = uint("maxLength")?;
    base.ref_table = match obj.get("refTable") {
        None => None,
        Some(Json::String(t)) if atom_type == AtomType::Uuid => Some(t.clone()),
        Some(other) => {
            return Err(format!(
                "\"refTable\" must be a table name on a uuid type, found {other}"
            ))
        }
    };
    base.ref_type = match obj.get("refType") {
        None => RefType::Strong,
        Some(Json::String(s)) if s == "strong" => RefType::Strong,
        Some(Json::String(s)) if s == "weak" => RefType::Weak,
        Some(other) => {
            return Err(format!(
                "\"refType\" must be \"strong\" or \"weak\", found {other}"
            ))
        }
    };
    Ok(base)
}

fn table_to_json(table: &TableSchema) -> Json {
    let mut columns = JsonMap::new();
    for (name, column) in &table.columns {
        let mut c = JsonMap::new();
        c.insert("type".into(), column_type_to_json(&column.type_));
        if column.ephemeral {
            c.insert("ephemeral".into(), Json::Bool(true));
        }
        if !column.mutable {
            c.insert("mutable".into(), Json::Bool(false));
        }
        columns.insert(name.clone(), Json::Object(c));
    }
    let mut t = JsonMap::new();
    t.insert("columns".into(), Json::Object(columns));
    if let Some(max_rows) = table.max_rows {
        t.insert("maxRows".into(), max_rows.into());
    }
    if table.is_root {
        t.insert("isRoot".into(), Json::Bool(true));
    }
    if !table.indexes.is_empty() {
        t.insert(
            "indexes".into(),
            serde_json::to_value(&table.indexes).unwrap_or_default(),
        );
    }
    Json::Object(t)
}

/// Writes a `<type>` in its shortest form.
pub(crate) fn column_type_to_json(ty: &ColumnType) -> Json {
    if ty.is_scalar() && ty.key.is_plain() {
        return Json::String(ty.key.atom_type.as_str().into());
    }
    let mut obj = JsonMap::new();
    obj.insert("key".into(), base_type_to_json(&ty.key));
    if let Some(value) = &ty.value {
        obj.insert("value".into(), base_type_to_json(value));
    }
    if ty.min != 1 {
        obj.insert("min".into(), ty.min.into());
    }
    match ty.max {
        Some(1) => {}
        Some(max) => {
            obj.insert("max".into(), max.into());
        }
        None => {
            obj.insert("max".into(), "unlimited".into());
        }
    }
    Json::Object(obj)
}

fn base_type_to_json(base: &BaseType) -> Json {
    if base.is_plain() {
        return Json::String(base.atom_type.as_str().into());
    }
    let mut obj = JsonMap::new();
    obj.insert("type".into(), base.atom_type.as_str().into());
    if let Some(values) = &base.enum_values {
        // An enum is always written in set notation, even with one value.
        let elements = serde_json::to_value(values.as_slice()).unwrap_or_default();
        obj.insert("enum".into(), Json::Array(vec!["set".into(), elements]));
    }
    let mut put = |name: &str, value: Option<Json>| {
        if let Some(value) = value {
            obj.insert(name.into(), value);
        }
    };
    put("minInteger", base.min_integer.map(Json::from));
    put("maxInteger", base.max_integer.map(Json::from));
    put("minReal", base.min_real.map(Json::from));
    put("maxReal", base.max_real.map(Json::from));
    put("minLength", base.min_length.map(Json::from));
    put("maxLength", base.max_length.map(Json::from));
    put("refTable", base.ref_table.clone().map(Json::from));
    if base.ref_table.is_some() && base.ref_type == RefType::Weak {
        put("refType", Some("weak".into()));
    }
    Json::Object(obj)
}

impl Serialize for DatabaseSchema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> Deserialize<'de> for DatabaseSchema {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawSchema::deserialize(d)?;
        DatabaseSchema::from_raw(raw).map_err(serde::de::Error::custom)
    }
}

impl Serialize for ColumnType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        column_type_to_json(self).serialize(s)
    }
}
