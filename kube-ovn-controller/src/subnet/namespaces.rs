//! Namespace binding: each namespace a Subnet lists in `spec.namespaces` carries the
//! names, CIDR blocks and exclusions of every valid Subnet listing it
//! (`ovn.kubernetes.io/logical_switch`, `cidr`, `exclude_ips`, in name order); a
//! namespace no Subnet lists carries the default subnet's (Kube-OVN's `handleAddNamespace`).
//! Only those three keys are written, and only when they differ.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{json, Map, Value};

use super::validate::ValidSubnet;
use kube_ovn_api::annotations::{
    AnnotationMap, Names, NamespaceAnnotations, SubnetCidrs, SubnetExcludeIps,
};

/// The binding keys a namespace should carry, from the valid subnets listing it, else
/// the default subnet.
pub fn binding(
    namespace: &str,
    valid: &[ValidSubnet],
    default_subnet: Option<&ValidSubnet>,
) -> NamespaceAnnotations {
    let mut listing: Vec<&ValidSubnet> = valid
        .iter()
        .filter(|s| s.namespaces.iter().any(|n| n == namespace))
        .collect();
    listing.sort_by(|a, b| a.name.cmp(&b.name));
    if listing.is_empty() {
        listing.extend(default_subnet);
    }
    if listing.is_empty() {
        return NamespaceAnnotations::default();
    }
    NamespaceAnnotations {
        logical_switch: Some(Names(listing.iter().map(|s| s.name.clone()).collect())),
        cidr: Some(SubnetCidrs(listing.iter().map(|s| s.cidr).collect())),
        exclude_ips: Some(SubnetExcludeIps(
            listing.iter().map(|s| s.exclude_ips.clone()).collect(),
        )),
        ip_pool: None,
    }
}

/// The merge-patch of `annotations` that makes the three binding keys of `current`
/// look like `wanted` (null removes a key); None when nothing differs.
pub fn binding_patch(current: &AnnotationMap, wanted: &NamespaceAnnotations) -> Option<Value> {
    let mut rendered = AnnotationMap::new();
    wanted.write_into(&mut rendered);
    let mut changes = Map::new();
    for name in ["logical_switch", "cidr", "exclude_ips"] {
        let key = format!("ovn.kubernetes.io/{name}");
        let (have, want) = (current.get(&key), rendered.get(&key));
        if have != want {
            let value = want.map_or(Value::Null, |v| Value::String(v.clone()));
            changes.insert(key, value);
        }
    }
    (!changes.is_empty()).then(|| json!({ "metadata": { "annotations": changes } }))
}

/// The namespaces whose binding may change with this subnet: those it lists and those
/// whose `logical_switch` names it.
pub fn affected(subnet: &str, listed: &[String], namespaces: &[Namespace]) -> Vec<String> {
    let names_it = |ns: &Namespace| {
        let map = ns.metadata.annotations.clone().unwrap_or_default();
        let map: AnnotationMap = map.into_iter().collect();
        let (parsed, _) = NamespaceAnnotations::parse_lenient(&map);
        parsed
            .logical_switch
            .is_some_and(|names| names.0.iter().any(|n| n == subnet))
    };
    let mut out: Vec<String> = namespaces
        .iter()
        .filter(|ns| {
            let name = ns.metadata.name.as_deref().unwrap_or_default();
            listed.iter().any(|l| l == name) || names_it(ns)
        })
        .filter_map(|ns| ns.metadata.name.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Patches each namespace of `names` that exists and whose binding differs; returns
/// how many were patched.
pub async fn sync(
    api: &Api<Namespace>,
    namespaces: &[Namespace],
    names: &[String],
    valid: &[ValidSubnet],
    default_subnet: Option<&ValidSubnet>,
) -> Result<usize, kube::Error> {
    let mut patched = 0;
    for ns in namespaces {
        let name = ns.metadata.name.as_deref().unwrap_or_default();
        if !names.iter().any(|n| n == name) {
            continue;
        }
        let current: AnnotationMap = ns
            .metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect::<BTreeMap<_, _>>();
        let wanted = binding(name, valid, default_subnet);
        if let Some(patch) = binding_patch(&current, &wanted) {
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            tracing::info!(namespace = name, "namespace subnet binding updated");
            patched += 1;
        }
    }
    Ok(patched)
}
