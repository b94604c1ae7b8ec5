//! Discovery documents: what kubectl and kube-rs read to learn which
//! resources exist and whether they are namespaced.
//!
//! kubectl first asks `/api` and `/apis` for the *aggregated* discovery
//! format (`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`)
//! and falls back to the legacy per-group-version documents served here when
//! the answer is a plain `APIGroupList`.

use crate::registry::{Registry, ResourceType};
use serde_json::{json, Value};

/// The Kubernetes version this server claims to be.
pub const KUBE_VERSION: (&str, &str) = ("1", "33");

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": KUBE_VERSION.0,
        "minor": KUBE_VERSION.1,
        "gitVersion": format!("v{}.{}.0-embedded", KUBE_VERSION.0, KUBE_VERSION.1),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "n/a",
        "compiler": "rustc",
        "platform": "linux/amd64",
    })
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(name: &str, versions: &[String]) -> Value {
    let gvs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": gvs, "preferredVersion": gvs[0].clone()})
}

/// `/apis`.
pub fn groups(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|(g, vs)| group_entry(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if the group is served.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    let (g, vs) = registry.groups().into_iter().find(|(g, _)| g == name)?;
    let mut entry = group_entry(&g, &vs);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Some(entry)
}

fn resource_entries(t: &ResourceType) -> Vec<Value> {
    let verbs = [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ];
    let mut main = json!({
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": verbs,
        "shortNames": t.short_names,
        "storageVersionHash": "",
    });
    if !t.categories.is_empty() {
        main["categories"] = json!(t.categories);
    }
    let mut out = vec![main];
    if t.has_status {
        out.push(json!({
            "name": format!("{}/status", t.plural),
            "singularName": "",
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    if super::scale::serves(t) {
        // kubectl scale finds the Scale kind here.
        out.push(json!({
            "name": format!("{}/scale", t.plural),
            "singularName": "",
            "namespaced": t.namespaced,
            "group": "autoscaling",
            "version": "v1",
            "kind": "Scale",
            "verbs": ["get", "patch", "update"],
        }));
    }
    if t.group.is_empty() && t.plural == "pods" {
        for sub in ["exec", "log"] {
            let kind = if sub == "exec" {
                "PodExecOptions"
            } else {
                "Pod"
            };
            out.push(json!({"name": format!("pods/{sub}"), "singularName": "",
                "namespaced": true, "kind": kind, "verbs": ["create", "get"]}));
        }
    }
    out
}

/// `/api/v1` and `/apis/{group}/{version}`, if served.
pub fn resources(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceType> = registry
        .types()
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = served.into_iter().flat_map(resource_entries).collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }))
}

/// `/`: the list of paths, as kube-apiserver answers.
pub fn root(registry: &Registry) -> Value {
    let mut paths = vec![
        "/api".to_string(),
        "/api/v1".to_string(),
        "/apis".to_string(),
    ];
    for (g, vs) in registry.groups() {
        paths.push(format!("/apis/{g}"));
        paths.extend(vs.iter().map(|v| format!("/apis/{g}/{v}")));
    }
    paths.extend(["/healthz".to_string(), "/version".to_string()]);
    json!({"paths": paths})
}
