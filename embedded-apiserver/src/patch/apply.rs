//! Server-side apply and `metadata.managedFields` bookkeeping.
//!
//! Every write records who set which fields:
//! * ordinary writes (create, update, the three patch flavours) give the
//!   writer an `operation: Update` entry owning the leaves it changed, and
//!   take those leaves away from everyone else;
//! * an apply (`application/apply-patch+yaml`) gives the applier an
//!   `operation: Apply` entry owning exactly the leaves of its configuration.
//!   If another manager owns one of those leaves with a *different* value the
//!   apply fails with 409 `Conflict`, unless `force=true`, which moves the
//!   ownership. Leaves the applier owned before, no longer applies, and
//!   nobody else owns are removed from the object.

use crate::error::{ApiError, Reason};
use crate::patch::fields::{self, FieldSet};
use crate::patch::{merge_patch, strategic::strategic_merge};
use serde_json::{json, Value};

/// One `managedFields` entry, parsed.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    fields: FieldSet,
}

fn parse_entries(object: &Value) -> Vec<Entry> {
    let Some(list) = object["metadata"]["managedFields"].as_array() else {
        return Vec::new();
    };
    list.iter()
        .map(|e| Entry {
            manager: e["manager"].as_str().unwrap_or_default().to_string(),
            operation: e["operation"].as_str().unwrap_or("Update").to_string(),
            api_version: e["apiVersion"].as_str().unwrap_or_default().to_string(),
            time: e["time"].as_str().unwrap_or_default().to_string(),
            fields: fields::from_fields_v1(&e["fieldsV1"]),
        })
        .collect()
}

fn store_entries(object: &mut Value, entries: Vec<Entry>) {
    let list: Vec<Value> = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields::to_fields_v1(&e.fields),
            })
        })
        .collect();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        if list.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(list));
        }
    }
}

/// Who is writing and when (`time` is RFC 3339).
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    /// Field manager name.
    pub manager: &'a str,
    /// apiVersion the write came through.
    pub api_version: &'a str,
    /// Timestamp to record.
    pub time: &'a str,
    /// Whether lists of this kind merge by key (built-in kinds).
    pub keyed: bool,
}

/// Records an ordinary write of `new` over `old` (None for a create) in
/// `new`'s managedFields.
pub fn record_update(old: Option<&Value>, new: &mut Value, writer: &Writer) {
    let mut entries = match old {
        Some(o) => parse_entries(o),
        None => Vec::new(),
    };
    let present = fields::leaf_paths(new, writer.keyed);
    let changed: FieldSet = present
        .iter()
        .filter(|p| old.and_then(|o| fields::get_at(o, p)) != fields::get_at(new, p))
        .cloned()
        .collect();
    for e in entries.iter_mut() {
        e.fields
            .retain(|p| present.contains(p) && !changed.contains(p));
    }
    if !changed.is_empty() {
        give(&mut entries, writer, "Update", changed);
    }
    store_entries(new, entries);
}

fn give(entries: &mut Vec<Entry>, writer: &Writer, operation: &str, set: FieldSet) {
    let existing = entries
        .iter_mut()
        .find(|e| e.manager == writer.manager && e.operation == operation);
    match existing {
        Some(e) => {
            e.fields.extend(set);
            e.time = writer.time.to_string();
        }
        None => entries.push(Entry {
            manager: writer.manager.to_string(),
            operation: operation.to_string(),
            api_version: writer.api_version.to_string(),
            time: writer.time.to_string(),
            fields: set,
        }),
    }
}

/// Server-side apply of `config` onto `current` (None: the object does not
/// exist yet). Returns the object to store, managedFields included.
pub fn server_side_apply(
    current: Option<&Value>,
    config: &Value,
    writer: &Writer,
    force: bool,
) -> Result<Value, ApiError> {
    let applied = fields::leaf_paths(config, writer.keyed);
    let empty = json!({});
    let base = current.unwrap_or(&empty);
    let mut entries = parse_entries(base);
    check_conflicts(base, config, &applied, &entries, writer, force)?;

    let mut merged = if writer.keyed {
        strategic_merge(base, config)?
    } else {
        merge_patch(base, config)
    };
    let previous: FieldSet = entries
        .iter()
        .find(|e| e.manager == writer.manager && e.operation == "Apply")
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    entries.retain(|e| !(e.manager == writer.manager && e.operation == "Apply"));
    for e in entries.iter_mut() {
        e.fields.retain(|p| {
            !applied.contains(p) || fields::get_at(base, p) == fields::get_at(config, p)
        });
    }
    for dropped in previous.difference(&applied) {
        if !entries.iter().any(|e| e.fields.contains(dropped)) {
            fields::remove_at(&mut merged, dropped);
        }
    }
    give(&mut entries, writer, "Apply", applied);
    store_entries(&mut merged, entries);
    Ok(merged)
}

fn check_conflicts(
    base: &Value,
    config: &Value,
    applied: &FieldSet,
    entries: &[Entry],
    writer: &Writer,
    force: bool,
) -> Result<(), ApiError> {
    if force {
        return Ok(());
    }
    let mut causes = Vec::new();
    for e in entries.iter().filter(|e| e.manager != writer.manager) {
        for path in e.fields.intersection(applied) {
            if fields::get_at(base, path) != fields::get_at(config, path) {
                causes.push((e.manager.clone(), fields::display_path(path)));
            }
        }
    }
    if causes.is_empty() {
        return Ok(());
    }
    let n = causes.len();
    let list: Vec<String> = causes
        .iter()
        .map(|(m, f)| format!("conflict with \"{m}\": {f}"))
        .collect();
    let plural = if n == 1 { "" } else { "s" };
    let mut err = ApiError::new(
        Reason::Conflict,
        format!(
            "Apply failed with {n} conflict{plural}: {}",
            list.join("\n")
        ),
    );
    let details: Vec<Value> = causes
        .iter()
        .map(|(m, f)| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{m}\""), "field": f}))
        .collect();
    err.details = Some(json!({"causes": details}));
    Err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(manager: &str) -> Writer<'_> {
        Writer {
            manager,
            api_version: "v1",
            time: "2026-01-01T00:00:00Z",
            keyed: true,
        }
    }

    #[test]
    fn two_appliers_conflict_unless_forced() {
        let a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"x": "1", "y": "1"}});
        let stored = server_side_apply(None, &a, &writer("a"), false).unwrap();
        assert_eq!(stored["metadata"]["managedFields"][0]["manager"], "a");

        let same = json!({"metadata": {"name": "c"}, "data": {"x": "1"}});
        let shared = server_side_apply(Some(&stored), &same, &writer("b"), false).unwrap();
        assert_eq!(
            shared["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .len(),
            2
        );

        let b = json!({"metadata": {"name": "c"}, "data": {"x": "2"}});
        let err = server_side_apply(Some(&stored), &b, &writer("b"), false).unwrap_err();
        assert_eq!(err.reason, Reason::Conflict);
        assert!(
            err.message.contains(r#"conflict with "a": .data.x"#),
            "{}",
            err.message
        );

        let forced = server_side_apply(Some(&stored), &b, &writer("b"), true).unwrap();
        assert_eq!(forced["data"], json!({"x": "2", "y": "1"}));
    }

    #[test]
    fn reapply_without_a_field_removes_it() {
        let first = json!({"metadata": {"name": "c"}, "data": {"x": "1", "y": "1"}});
        let stored = server_side_apply(None, &first, &writer("a"), false).unwrap();
        let second = json!({"metadata": {"name": "c"}, "data": {"x": "1"}});
        let out = server_side_apply(Some(&stored), &second, &writer("a"), false).unwrap();
        assert_eq!(out["data"], json!({"x": "1"}));
    }

    #[test]
    fn updates_take_ownership() {
        let cfg = json!({"metadata": {"name": "c"}, "data": {"x": "1"}});
        let stored = server_side_apply(None, &cfg, &writer("a"), false).unwrap();
        let mut updated = stored.clone();
        updated["data"]["x"] = json!("9");
        record_update(Some(&stored), &mut updated, &writer("kubectl-edit"));
        let managers: Vec<&str> = updated["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, vec!["kubectl-edit"]);
        // Now "a" re-applying its old value does not conflict with an owner-less field... but
        // kubectl-edit owns it with a different value:
        assert!(server_side_apply(Some(&updated), &cfg, &writer("a"), false).is_err());
    }
}
