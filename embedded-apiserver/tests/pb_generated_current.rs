//! `src/protobuf/generated.rs` is checked in, marked `@generated`, and this test proves it
//! current: it runs `scripts/gen-pb-json.py` on the k8s-pb and k8s-openapi sources that
//! Cargo resolved for this workspace and compares the result with the checked-in file,
//! byte for byte.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The checked-in file, relative to the workspace root.
const GENERATED: &str = "embedded-apiserver/src/protobuf/generated.rs";
/// Its generator, relative to the workspace root.
const SCRIPT: &str = "scripts/gen-pb-json.py";
/// The Kubernetes version whose field names the file was generated from (its header says so).
const OPENAPI_VERSION_DIR: &str = "src/v1_35";

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("embedded-apiserver sits in the workspace root")
        .to_path_buf()
}

/// The source directory of the package `name` in this workspace's resolved graph, from
/// `cargo metadata` (so it works wherever Cargo keeps its registry).
fn package_dir(metadata: &serde_json::Value, name: &str, major_minor: &str) -> PathBuf {
    let packages = metadata["packages"].as_array().expect("packages array");
    let found: Vec<&serde_json::Value> = packages
        .iter()
        .filter(|p| p["name"] == name)
        .filter(|p| {
            p["version"]
                .as_str()
                .is_some_and(|v| v.starts_with(&format!("{major_minor}.")))
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one {name} {major_minor}.x in cargo metadata, found {}: the generator's \
         header names the versions it was made from; bump both together",
        found.len()
    );
    let manifest = found[0]["manifest_path"].as_str().expect("manifest_path");
    Path::new(manifest)
        .parent()
        .expect("manifest in a directory")
        .to_path_buf()
}

fn cargo_metadata(root: &Path) -> serde_json::Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// True when `python3` runs. Missing under CI is a failure (the rule of
/// `ovn_harness::in_ci`); elsewhere the test says why and skips.
fn python3_available() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    let msg = "python3 is missing: it runs scripts/gen-pb-json.py (apt-get install python3)";
    if ovn_harness::in_ci() {
        panic!("{msg} (CI is set: this check must not skip)");
    }
    eprintln!("skipping: {msg}");
    false
}

/// The first line where `a` and `b` differ (1-based), with both lines.
fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => continue,
            (x, y) => {
                let show = |l: Option<&str>| l.map_or("<end of file>".to_string(), str::to_string);
                return Some((n, show(x), show(y)));
            }
        }
    }
    unreachable!()
}

#[test]
fn generated_protobuf_json_is_current() {
    if !python3_available() {
        return;
    }
    let root = workspace_root();
    if !root.join(SCRIPT).is_file() {
        // A packaged copy of the crate, outside the workspace, has no generator.
        let msg = format!("{SCRIPT} is not under {}", root.display());
        if ovn_harness::in_ci() {
            panic!("{msg} (CI is set: this check must not skip)");
        }
        eprintln!("skipping: {msg}: not a checkout of the workspace");
        return;
    }
    let metadata = cargo_metadata(&root);
    let pb = package_dir(&metadata, "k8s-pb", "0.9");
    let openapi = package_dir(&metadata, "k8s-openapi", "0.29").join(OPENAPI_VERSION_DIR);
    assert!(
        openapi.is_dir(),
        "{} is missing: k8s-openapi no longer ships the Kubernetes version the file was \
         generated from",
        openapi.display()
    );

    let tmp = tempfile::tempdir().expect("temp dir");
    let fresh_path = tmp.path().join("generated.rs");
    let out = Command::new("python3")
        .arg(SCRIPT)
        .arg(&pb)
        .arg(&openapi)
        .arg(&fresh_path)
        .current_dir(&root)
        .output()
        .expect("run python3 scripts/gen-pb-json.py");
    assert!(
        out.status.success(),
        "scripts/gen-pb-json.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let fresh = std::fs::read_to_string(&fresh_path).expect("read the regenerated file");
    let checked_in = std::fs::read_to_string(root.join(GENERATED)).expect("read generated.rs");
    if fresh == checked_in {
        return;
    }
    let hint = match first_difference(&checked_in, &fresh) {
        Some((line, ours, theirs)) => format!(
            "first difference at line {line}:\n  checked in:  {ours}\n  regenerated: {theirs}"
        ),
        None => "the files differ only in their final newline".to_string(),
    };
    panic!(
        "{GENERATED} is not what scripts/gen-pb-json.py makes from k8s-pb {} and {}\n{hint}\n\
         Do not edit it by hand. Regenerate from the workspace root with\n  \
         python3 scripts/gen-pb-json.py {} {} {GENERATED}\n\
         or see the difference with\n  \
         python3 scripts/gen-pb-json.py {} {} /tmp/generated.rs && diff -u {GENERATED} /tmp/generated.rs",
        pb.display(),
        openapi.display(),
        pb.display(),
        openapi.display(),
        pb.display(),
        openapi.display(),
    );
}
