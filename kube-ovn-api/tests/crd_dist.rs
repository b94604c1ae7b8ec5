//! `dist/crds.yaml` is what the types generate, and it reads back as the 13 CRDs.

use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_ovn_api::crd::{crds, crds_yaml, CRDS_YAML_COMMAND};

fn dist_crds_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/crds.yaml")
}

#[test]
fn dist_crds_yaml_is_current() {
    let fresh = crds_yaml().expect("the CRDs print as YAML");
    let path = dist_crds_path();
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "{} is missing or stale: regenerate it from the workspace root with `{CRDS_YAML_COMMAND}`",
        path.display()
    );
}

#[test]
fn dist_crds_yaml_is_marked_generated_and_reads_back() {
    let text = crds_yaml().expect("the CRDs print as YAML");
    let first_line = text.lines().next().unwrap_or_default();
    assert!(first_line.starts_with("# @generated"), "{first_line}");
    assert!(first_line.contains(CRDS_YAML_COMMAND), "{first_line}");

    let read_back: Vec<CustomResourceDefinition> =
        serde_saphyr::from_str_multiple(&text).expect("dist/crds.yaml reads back");
    assert_eq!(read_back, crds());
}
