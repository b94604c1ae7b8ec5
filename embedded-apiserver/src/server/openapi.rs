//! A minimal OpenAPI v3 surface, just enough for kubectl.
//!
//! kubectl validates manifests before sending them. It first asks whether
//! the server validates fields itself: it reads `/openapi/v3` (an index of
//! per-group-version documents) and looks, in the document of the object's
//! group/version, for a PATCH operation tagged with the object's
//! `x-kubernetes-group-version-kind` that accepts the `fieldValidation` query
//! parameter. If found, it sends `fieldValidation=Strict` and skips its own
//! schema validation, which would otherwise need the full `/openapi/v2`
//! document. So each document here lists, per resource, one PATCH operation
//! with that parameter and nothing else (no schemas; the PATCH carries no
//! request body description, so kubectl's client-side apply computes its
//! patches from its compiled-in types, as it does for an old server).

use crate::registry::{Registry, ResourceType};
use serde_json::{json, Map, Value};

/// The index key of a group/version: `api/v1`, `apis/GROUP/VERSION`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for t in registry.types() {
        let gv = (t.group.clone(), t.version.clone());
        if !out.contains(&gv) {
            out.push(gv);
        }
    }
    out
}

/// `/openapi/v3`: the index.
pub fn index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (g, v) in group_versions(registry) {
        let key = gv_path(&g, &v);
        let hash = document(registry, &key)
            .map(|d| fnv1a(d.to_string().as_bytes()))
            .unwrap_or(0);
        paths.insert(
            key.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash:016X}")}),
        );
    }
    json!({"paths": paths})
}

fn object_path(t: &ResourceType) -> String {
    let prefix = format!("/{}", gv_path(&t.group, &t.version));
    if t.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
    } else {
        format!("{prefix}/{}/{{name}}", t.plural)
    }
}

/// `/openapi/v3/{api/v1 | apis/G/V}`: the per-group-version document.
pub fn document(registry: &Registry, key: &str) -> Option<Value> {
    let mut paths = Map::new();
    for t in registry.types() {
        if gv_path(&t.group, &t.version) != key {
            continue;
        }
        let patch = json!({
            "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
            "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}}],
            "responses": {"200": {"description": "OK"}},
        });
        paths.insert(object_path(t), json!({"patch": patch}));
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (embedded)", "version": "v1"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

/// 64-bit FNV-1a, for the cache-busting `hash` of each document URL.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_points_at_documents_with_field_validation() {
        let registry = Registry::builtin();
        let idx = index(&registry);
        let url = idx["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="));
        let doc = document(&registry, "api/v1").unwrap();
        let op = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(op["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert_eq!(op["parameters"][0]["name"], "fieldValidation");
        assert!(document(&registry, "apis/nope/v1").is_none());
    }
}
