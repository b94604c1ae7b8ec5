//! Our CRDs against Kube-OVN's own (its Helm chart, vendored in tests/data): same names,
//! scope, status subresource and printer columns, and a property in our types for every
//! property Kube-OVN's schema declares under `spec` and `status`.

mod common;

use std::collections::BTreeMap;

use common::{kube_ovn_crds, our_crds, schema, v1, KINDS};
use serde_json::Value;

/// Every report line of `check` over the 13 kinds; the test fails listing them all.
fn mismatches(check: impl Fn(&str, &Value, &Value) -> Vec<String>) -> Vec<String> {
    let (theirs, ours) = (kube_ovn_crds(), our_crds());
    let mut report = Vec::new();
    for kind in KINDS {
        match (theirs.get(kind), ours.get(kind)) {
            (Some(their), Some(our)) => report.extend(check(kind, their, our)),
            (their, our) => report.push(format!(
                "{kind}: in Kube-OVN's chart: {}, in ours: {}",
                their.is_some(),
                our.is_some()
            )),
        }
    }
    report
}

fn compare(kind: &str, what: &str, their: Value, our: Value) -> Option<String> {
    (their != our).then(|| format!("{kind} {what}: Kube-OVN has {their}, we have {our}"))
}

#[test]
fn names_scope_and_status_subresource_match_kube_ovn() {
    let report = mismatches(|kind, their, our| {
        let names = |crd: &Value, key: &str| crd["spec"]["names"][key].clone();
        let short_names = |crd: &Value| match &crd["spec"]["names"]["shortNames"] {
            Value::Null => Value::Array(Vec::new()),
            list => list.clone(),
        };
        let has_status = |crd: &Value| Value::Bool(v1(crd)["subresources"]["status"].is_object());
        let served_stored = |crd: &Value| {
            let v = v1(crd);
            Value::Array(vec![v["served"].clone(), v["storage"].clone()])
        };
        [
            compare(
                kind,
                "metadata.name",
                their["metadata"]["name"].clone(),
                our["metadata"]["name"].clone(),
            ),
            compare(
                kind,
                "group",
                their["spec"]["group"].clone(),
                our["spec"]["group"].clone(),
            ),
            compare(kind, "plural", names(their, "plural"), names(our, "plural")),
            compare(
                kind,
                "singular",
                names(their, "singular"),
                names(our, "singular"),
            ),
            compare(kind, "shortNames", short_names(their), short_names(our)),
            compare(
                kind,
                "scope",
                their["spec"]["scope"].clone(),
                our["spec"]["scope"].clone(),
            ),
            compare(
                kind,
                "v1 served/storage",
                served_stored(their),
                served_stored(our),
            ),
            compare(
                kind,
                "status subresource",
                has_status(their),
                has_status(our),
            ),
        ]
        .into_iter()
        .flatten()
        .collect()
    });
    assert!(
        report.is_empty(),
        "differences from Kube-OVN's CRDs:\n{}",
        report.join("\n")
    );
}

/// A printer column as kubectl uses it: name, type, JSONPath, priority (0 when absent).
fn printer_columns(crd: &Value) -> Value {
    let columns = v1(crd)["additionalPrinterColumns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    columns
        .iter()
        .map(|c| {
            let priority = c["priority"].as_i64().unwrap_or(0);
            serde_json::json!([c["name"], c["type"], c["jsonPath"], priority])
        })
        .collect()
}

#[test]
fn printer_columns_match_kube_ovn() {
    let report = mismatches(|kind, their, our| {
        compare(
            kind,
            "printer columns",
            printer_columns(their),
            printer_columns(our),
        )
        .into_iter()
        .collect()
    });
    assert!(
        report.is_empty(),
        "differences from Kube-OVN's CRDs:\n{}",
        report.join("\n")
    );
}

/// Every property under `spec` and `status`, as `spec.acls[].action`, with its `type`.
fn property_paths(schema: &Value) -> BTreeMap<String, Option<String>> {
    fn walk(node: &Value, path: &str, out: &mut BTreeMap<String, Option<String>>) {
        if let Some(properties) = node["properties"].as_object() {
            for (name, sub) in properties {
                let sub_path = format!("{path}.{name}");
                out.insert(sub_path.clone(), sub["type"].as_str().map(str::to_owned));
                walk(sub, &sub_path, out);
            }
        }
        if node["items"].is_object() {
            walk(&node["items"], &format!("{path}[]"), out);
        }
    }
    let mut out = BTreeMap::new();
    for top in ["spec", "status"] {
        walk(&schema["properties"][top], top, &mut out);
    }
    out
}

/// `x-kubernetes-list-type` (and map keys) of every list under `spec` and `status`: they
/// decide how server-side apply merges a list, so ours must say what Kube-OVN's say.
fn list_types(schema: &Value) -> BTreeMap<String, Value> {
    fn walk(node: &Value, path: &str, out: &mut BTreeMap<String, Value>) {
        if let Some(list_type) = node.get("x-kubernetes-list-type") {
            let keys = node
                .get("x-kubernetes-list-map-keys")
                .cloned()
                .unwrap_or(Value::Null);
            out.insert(path.to_owned(), serde_json::json!([list_type, keys]));
        }
        if let Some(properties) = node["properties"].as_object() {
            for (name, sub) in properties {
                walk(sub, &format!("{path}.{name}"), out);
            }
        }
        if node["items"].is_object() {
            walk(&node["items"], &format!("{path}[]"), out);
        }
    }
    let mut out = BTreeMap::new();
    for top in ["spec", "status"] {
        walk(&schema["properties"][top], top, &mut out);
    }
    out
}

#[test]
fn list_types_match_kube_ovn() {
    let report = mismatches(|kind, their, our| {
        let (theirs, ours) = (list_types(schema(their)), list_types(schema(our)));
        theirs
            .iter()
            .filter(|(path, list_type)| ours.get(*path) != Some(list_type))
            .map(|(path, list_type)| {
                format!(
                    "{kind}: {path} is {list_type} in Kube-OVN, {:?} in ours",
                    ours.get(path)
                )
            })
            .collect()
    });
    assert!(
        report.is_empty(),
        "list types differ:\n{}",
        report.join("\n")
    );
}

#[test]
fn every_kube_ovn_property_exists_in_our_types_with_its_type() {
    let report = mismatches(|kind, their, our| {
        let (their_paths, our_paths) = (property_paths(schema(their)), property_paths(schema(our)));
        let mut lines = Vec::new();
        for (path, their_type) in &their_paths {
            match our_paths.get(path) {
                None => lines.push(format!(
                    "{kind}: {path} ({their_type:?}) is missing from our type"
                )),
                Some(our_type) if their_type.is_some() && our_type != their_type => lines.push(
                    format!("{kind}: {path} is {their_type:?} in Kube-OVN, {our_type:?} in ours"),
                ),
                Some(_) => {}
            }
        }
        lines
    });
    assert!(
        report.is_empty(),
        "gaps against Kube-OVN's schema:\n{}",
        report.join("\n")
    );
}

/// Properties our types have but Kube-OVN's chart schema lacks, topmost first, in `KINDS`
/// order. On a cluster whose CRDs came from the chart the API server prunes them, so the
/// controller must not rely on them there. Each comes from Kube-OVN's Go types, which have
/// drifted ahead of its chart (`observedGeneration` of every condition among them).
const PRUNED_BY_KUBE_OVN_CHART: &[&str] = &[
    "Subnet: spec.u2oFeatures",
    "Subnet: status.conditions[].observedGeneration",
    "IPPool: status.conditions[].observedGeneration",
    "Vpc: status.conditions[].observedGeneration",
    "Vip: status.conditions[].observedGeneration",
    "Vip: status.ready",
    "Vlan: status.conditions",
    "ProviderNetwork: status.conditions[].observedGeneration",
    "OvnEip: status.conditions[].observedGeneration",
    "OvnFip: status.conditions[].observedGeneration",
    "OvnFip: status.macAddress",
    "OvnSnatRule: status.conditions[].observedGeneration",
    "OvnDnatRule: status.conditions[].observedGeneration",
    "QoSPolicy: status.conditions[].observedGeneration",
    "SwitchLBRule: status.conditions",
];

#[test]
fn properties_the_kube_ovn_chart_would_prune_are_the_documented_ones() {
    let report = mismatches(|kind, their, our| {
        let (their_paths, our_paths) = (property_paths(schema(their)), property_paths(schema(our)));
        let missing: Vec<&String> = our_paths
            .keys()
            .filter(|path| !their_paths.contains_key(*path))
            .collect();
        // Below a pruned property everything goes with it: list the topmost only.
        let under = |path: &str, parent: &str| {
            path.len() > parent.len()
                && path.starts_with(parent)
                && matches!(path.as_bytes()[parent.len()], b'.' | b'[')
        };
        missing
            .iter()
            .filter(|path| !missing.iter().any(|parent| under(path, parent)))
            .map(|path| format!("{kind}: {path}"))
            .collect()
    });
    assert_eq!(
        report, PRUNED_BY_KUBE_OVN_CHART,
        "update PRUNED_BY_KUBE_OVN_CHART on purpose"
    );
}
