//! What the server, not the client, decides about an object: identity and
//! timestamps on create, per-kind defaults (Namespace phase and name label,
//! Pod phase, CRD status conditions), and which fields a write may not touch.

use super::write::{now_rfc3339, Part};
use crate::error::ApiError;
use crate::registry::ResourceType;
use serde_json::{json, Value};

/// Server-assigned fields of a new object, plus per-kind defaults.
pub(super) fn prepare_new(rt: &ResourceType, body: &mut Value, name: &str) -> Result<(), ApiError> {
    let meta = &mut body["metadata"];
    meta["name"] = json!(name);
    meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
    meta["creationTimestamp"] = json!(now_rfc3339());
    if rt.tracks_generation() {
        meta["generation"] = json!(1);
    } else if let Some(m) = meta.as_object_mut() {
        m.remove("generation");
    }
    if let Some(m) = meta.as_object_mut() {
        for server_owned in [
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",
            "resourceVersion",
        ] {
            m.remove(server_owned);
        }
    }
    body["apiVersion"] = json!(rt.api_version());
    body["kind"] = json!(rt.kind);
    if rt.custom && rt.has_status {
        if let Some(m) = body.as_object_mut() {
            m.remove("status");
        }
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => {
            body["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
            body["status"] = json!({"phase": "Active"});
        }
        ("", "pods") if body["status"]["phase"].is_null() => {
            body["status"] = json!({"phase": "Pending"});
        }
        ("", "secrets") if body["type"].as_str().is_none_or(str::is_empty) => {
            body["type"] = json!("Opaque");
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => prepare_crd(body, name)?,
        _ => {}
    }
    Ok(())
}

fn prepare_crd(body: &mut Value, name: &str) -> Result<(), ApiError> {
    let spec = &body["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let invalid = |field: &str, msg: &str| {
        ApiError::invalid("CustomResourceDefinition", name, field, msg.to_string())
    };
    if group.is_empty() || plural.is_empty() || spec["names"]["kind"].as_str().is_none() {
        return Err(invalid(
            "spec",
            "Required value: group, names.plural and names.kind are required",
        ));
    }
    if name != format!("{plural}.{group}") {
        return Err(invalid(
            "metadata.name",
            "Invalid value: must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if spec["versions"].as_array().is_none_or(|v| v.is_empty()) {
        return Err(invalid(
            "spec.versions",
            "Required value: must have exactly one version marked as storage version",
        ));
    }
    let now = now_rfc3339();
    let stored: Vec<Value> = spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"].as_bool().unwrap_or(false))
        .map(|v| v["name"].clone())
        .collect();
    body["status"] = json!({
        "acceptedNames": body["spec"]["names"].clone(),
        "storedVersions": stored,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
    });
    Ok(())
}

/// Keeps what the client may not change: identity, timestamps, and either the
/// status (main resource of a kind with `/status`) or everything but the
/// status (the `/status` subresource).
pub(super) fn keep_server_fields(rt: &ResourceType, old: &Value, new: &mut Value, part: Part) {
    if part == Part::Status {
        let status = new.get("status").cloned();
        *new = old.clone();
        match status {
            Some(s) => new["status"] = s,
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        return;
    }
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
        "name",
        "namespace",
    ] {
        match old["metadata"].get(field) {
            Some(v) => new["metadata"][field] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(field);
                }
            }
        }
    }
    if new["metadata"].get("managedFields").is_none() {
        if let Some(mf) = old["metadata"].get("managedFields") {
            new["metadata"]["managedFields"] = mf.clone();
        }
    }
    new["apiVersion"] = old["apiVersion"].clone();
    new["kind"] = old["kind"].clone();
    if rt.has_status {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
}

/// Whether anything outside metadata and status changed (bumps generation).
pub(super) fn spec_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
        }
        v
    };
    strip(old) != strip(new)
}
