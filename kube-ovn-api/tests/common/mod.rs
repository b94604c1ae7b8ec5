//! Helpers shared by the CRD tests: Kube-OVN's chart CRDs and ours as JSON, keyed by kind.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

/// The 13 kinds this crate models.
pub const KINDS: [&str; 13] = [
    "Subnet",
    "IP",
    "IPPool",
    "Vpc",
    "Vip",
    "Vlan",
    "ProviderNetwork",
    "OvnEip",
    "OvnFip",
    "OvnSnatRule",
    "OvnDnatRule",
    "QoSPolicy",
    "SwitchLBRule",
];

/// A file of `kube-ovn-api/tests/data`: Kube-OVN's chart CRDs and sample objects.
pub fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Every YAML document of a test data file, as JSON.
pub fn yaml_documents(name: &str) -> Vec<Value> {
    let path = data_path(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    // Kube-OVN's chart repeats a `description` key in two places; kubectl keeps the last.
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
    };
    serde_saphyr::from_str_multiple_with_options::<Value, Vec<Value>>(&text, options)
        .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
}

fn by_kind(crds: Vec<Value>) -> BTreeMap<String, Value> {
    crds.into_iter()
        .map(|crd| {
            let kind = crd["spec"]["names"]["kind"]
                .as_str()
                .expect("a CRD names its kind")
                .to_owned();
            (kind, crd)
        })
        .collect()
}

/// Kube-OVN's CRDs, vendored from its Helm chart.
pub fn kube_ovn_crds() -> BTreeMap<String, Value> {
    by_kind(yaml_documents("kube-ovn-crd.yaml"))
}

/// Our CRDs, from the types.
pub fn our_crds() -> BTreeMap<String, Value> {
    by_kind(
        kube_ovn_api::crd::crds()
            .into_iter()
            .map(|crd| serde_json::to_value(crd).expect("a CRD is JSON"))
            .collect(),
    )
}

/// The `v1` version entry of a CRD.
pub fn v1(crd: &Value) -> &Value {
    crd["spec"]["versions"]
        .as_array()
        .and_then(|versions| versions.iter().find(|v| v["name"] == "v1"))
        .unwrap_or_else(|| panic!("CRD {} has no v1", crd["metadata"]["name"]))
}

/// The `v1` openAPIV3Schema of a CRD.
pub fn schema(crd: &Value) -> &Value {
    &v1(crd)["schema"]["openAPIV3Schema"]
}
