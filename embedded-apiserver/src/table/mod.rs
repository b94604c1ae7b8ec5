//! Server-side printing: the `meta.k8s.io/v1` `Table` kubectl asks for
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) and prints as it
//! comes, so `kubectl get pods -o wide` shows READY, STATUS, IP and NODE and
//! `kubectl get subnets` shows a CRD's `additionalPrinterColumns`.
//!
//! Columns and cells follow kube-apiserver's printers (pkg/printers/internalversion)
//! for the built-in kinds ([`builtin`]) and its CRD table convertor for custom
//! resources (JSONPath cells, `date` columns as ages). Columns of priority 1
//! are the `-o wide` ones: kubectl hides them otherwise.

mod builtin;
mod core;
mod format;

use crate::registry::ResourceType;
use serde_json::{json, Value};

pub use format::human_age;

/// One column of a CRD's `additionalPrinterColumns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Header.
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub kind: String,
    /// OpenAPI format hint.
    pub format: String,
    /// Description.
    pub description: String,
    /// 0: always shown; higher: only with `-o wide`.
    pub priority: i64,
    /// Kubernetes JSONPath (`.spec.cidrBlock`).
    pub json_path: String,
}

impl PrinterColumn {
    /// The columns of one served version of a CRD.
    pub fn from_crd_version(version: &Value) -> Vec<PrinterColumn> {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
        version["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| PrinterColumn {
                name: s(&c["name"]),
                kind: s(&c["type"]),
                format: s(&c["format"]),
                description: s(&c["description"]),
                priority: c["priority"].as_i64().unwrap_or(0),
                json_path: s(&c["jsonPath"]),
            })
            .collect()
    }
}

/// What a client wants rows to carry (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// From the `includeObject` query parameter.
    pub fn from_param(param: Option<&str>) -> Self {
        match param {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// Whether an `Accept` header asks for a `meta.k8s.io` Table.
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io")
    })
}

fn column(name: &str, kind: &str, format: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": kind, "format": format,
           "description": description, "priority": priority})
}

fn name_column() -> Value {
    column(
        "Name",
        "string",
        "name",
        0,
        "Name must be unique within a namespace.",
    )
}

/// The column definitions for a type.
pub fn columns(rt: &ResourceType) -> Vec<Value> {
    if rt.custom {
        let mut cols = vec![name_column()];
        if rt.printer_columns.is_empty() {
            cols.push(column("Age", "date", "", 0, "CreationTimestamp"));
        }
        cols.extend(
            rt.printer_columns
                .iter()
                .map(|c| column(&c.name, &c.kind, &c.format, c.priority, &c.description)),
        );
        return cols;
    }
    builtin::columns(&rt.kind)
        .iter()
        .map(|(name, kind, priority, description)| {
            let format = if *name == "Name" { "name" } else { "" };
            column(name, kind, format, *priority, description)
        })
        .collect()
}

/// The cells of one object's row.
pub fn cells(rt: &ResourceType, object: &Value) -> Vec<Value> {
    if !rt.custom {
        return builtin::cells(&rt.kind, object);
    }
    let mut cells = vec![object["metadata"]["name"].clone()];
    if rt.printer_columns.is_empty() {
        cells.push(json!(format::age_of(
            &object["metadata"]["creationTimestamp"]
        )));
    }
    cells.extend(rt.printer_columns.iter().map(|c| custom_cell(c, object)));
    cells
}

/// A CRD column's cell as kube-apiserver's table convertor computes it:
/// the first JSONPath result; for `string` columns, lists and maps as JSON
/// text (`["10.16.0.1"]`) and other scalars as text; `date` columns as ages;
/// nothing found as null (kubectl prints `<none>`).
fn custom_cell(col: &PrinterColumn, object: &Value) -> Value {
    use jsonpath_rust::JsonPath;
    let path = format!("${}", col.json_path.trim_start_matches('$'));
    let found: Vec<&Value> = object.query(&path).unwrap_or_default();
    let Some(first) = found.into_iter().find(|v| !v.is_null()) else {
        return Value::Null;
    };
    match (col.kind.as_str(), first) {
        ("date", _) => json!(format::age_of(first)),
        ("string", Value::String(_)) => first.clone(),
        ("string", other) => json!(other.to_string()),
        _ => first.clone(),
    }
}

/// The object a row carries.
fn row_object(rt: &ResourceType, object: &Value, include: IncludeObject) -> Option<Value> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Object => {
            let mut o = object.clone();
            o["apiVersion"] = json!(rt.api_version());
            Some(o)
        }
        IncludeObject::Metadata => Some(json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": object["metadata"],
        })),
    }
}

/// A Table of `objects`; `metadata` is the list's (resourceVersion,
/// continue); `with_columns` false leaves the column definitions out (watch
/// events after the first, as kube-apiserver sends them).
pub fn table(
    rt: &ResourceType,
    objects: &[Value],
    metadata: Value,
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = json!({"cells": cells(rt, o)});
            if let Some(obj) = row_object(rt, o, include) {
                row["object"] = obj;
            }
            row
        })
        .collect();
    let mut table = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "rows": rows,
    });
    if with_columns {
        table["columnDefinitions"] = json!(columns(rt));
    }
    table
}

#[cfg(test)]
mod tests;
