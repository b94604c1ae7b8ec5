//! Kube-OVN-style objects (tests/data/samples.yaml) are valid under Kube-OVN's chart schema
//! and under ours, and survive a round trip through our types without losing a field.

mod common;

use common::{kube_ovn_crds, our_crds, schema, yaml_documents, KINDS};
use kube_ovn_api::crd::{
    IPPool, OvnDnatRule, OvnEip, OvnFip, OvnSnatRule, ProviderNetwork, QoSPolicy, Subnet,
    SwitchLBRule, Vip, Vlan, Vpc, IP,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

fn samples() -> Vec<Value> {
    yaml_documents("samples.yaml")
}

fn label(sample: &Value) -> String {
    format!("{} {}", sample["kind"], sample["metadata"]["name"])
}

/// Problems `schema` finds in `sample`, one line each.
fn schema_errors(schema: &Value, sample: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the openAPIV3Schema compiles");
    validator
        .iter_errors(sample)
        .map(|e| format!("{}: {} at {}", label(sample), e, e.instance_path()))
        .collect()
}

#[test]
fn samples_cover_every_kind() {
    let kinds: Vec<String> = samples()
        .iter()
        .map(|s| s["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    for kind in KINDS {
        assert!(kinds.iter().any(|k| k == kind), "no sample of {kind}");
    }
}

#[test]
fn samples_are_valid_under_kube_ovn_and_our_schemas() {
    let (theirs, ours) = (kube_ovn_crds(), our_crds());
    let mut report = Vec::new();
    for sample in samples() {
        let kind = sample["kind"].as_str().unwrap_or_default();
        for (whose, crds) in [("Kube-OVN's", &theirs), ("our", &ours)] {
            let crd = crds
                .get(kind)
                .unwrap_or_else(|| panic!("{whose} CRDs lack {kind}"));
            report.extend(
                schema_errors(schema(crd), &sample)
                    .into_iter()
                    .map(|e| format!("{whose} schema: {e}")),
            );
        }
    }
    assert!(report.is_empty(), "invalid samples:\n{}", report.join("\n"));
}

/// Drops what carries no information on the wire: nulls and empty lists (Go writes a nil
/// slice as `null` or leaves it out with `omitempty`; we leave empty lists out).
fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
                .map(|(k, v)| (k.clone(), normalize(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

fn round_trip<K: DeserializeOwned + Serialize>(sample: &Value) -> Value {
    let typed: K = serde_json::from_value(sample.clone())
        .unwrap_or_else(|e| panic!("{} does not decode: {e}", label(sample)));
    serde_json::to_value(&typed).expect("our types encode")
}

fn round_trip_by_kind(sample: &Value) -> Value {
    match sample["kind"].as_str().unwrap_or_default() {
        "Subnet" => round_trip::<Subnet>(sample),
        "IP" => round_trip::<IP>(sample),
        "IPPool" => round_trip::<IPPool>(sample),
        "Vpc" => round_trip::<Vpc>(sample),
        "Vip" => round_trip::<Vip>(sample),
        "Vlan" => round_trip::<Vlan>(sample),
        "ProviderNetwork" => round_trip::<ProviderNetwork>(sample),
        "OvnEip" => round_trip::<OvnEip>(sample),
        "OvnFip" => round_trip::<OvnFip>(sample),
        "OvnSnatRule" => round_trip::<OvnSnatRule>(sample),
        "OvnDnatRule" => round_trip::<OvnDnatRule>(sample),
        "QoSPolicy" => round_trip::<QoSPolicy>(sample),
        "SwitchLBRule" => round_trip::<SwitchLBRule>(sample),
        other => panic!("no type for kind {other}"),
    }
}

#[test]
fn samples_round_trip_without_losing_a_field() {
    let mut report = Vec::new();
    for sample in samples() {
        let (before, after) = (normalize(&sample), normalize(&round_trip_by_kind(&sample)));
        if before != after {
            report.push(format!(
                "{}:\n  in:  {before}\n  out: {after}",
                label(&sample)
            ));
        }
    }
    assert!(
        report.is_empty(),
        "round trips that changed the object:\n{}",
        report.join("\n")
    );
}

#[test]
fn ipv6_address_counts_beyond_u64_keep_every_digit() {
    // 2^80 free addresses: a /48. Kube-OVN writes such counts as bare JSON integers.
    let text = r#"{"apiVersion":"kubeovn.io/v1","kind":"Subnet","metadata":{"name":"v6"},
        "spec":{"cidrBlock":"fd00::/48"},"status":{"v6availableIPs":1208925819614629174706176}}"#;
    let subnet: Subnet = serde_json::from_str(text).expect("decodes");
    let count = subnet.status.as_ref().and_then(|s| s.v6_available_ips);
    assert_eq!(count.map(|c| c.0), Some(1u128 << 80));
    let back = serde_json::to_string(&subnet).expect("encodes");
    assert!(
        back.contains(r#""v6availableIPs":1208925819614629174706176"#),
        "{back}"
    );
}
