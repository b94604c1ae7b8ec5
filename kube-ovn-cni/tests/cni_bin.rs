//! The `kube-ovn` CNI binary run as a container runtime runs it: the CNI environment
//! variables, the network configuration on stdin, the result or a CNI error on stdout.
//! No daemon: what the binary answers by itself, and how it reports a daemon it cannot
//! reach. (ADD and DEL with a daemon are in `kube-ovn-daemon/tests/cni_node.rs`.)

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn run(command: &str, config: &str) -> (Output, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-ovn"))
        .env_clear()
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", "c0ffee")
        .env("CNI_NETNS", "/proc/self/ns/net")
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/opt/cni/bin")
        .env("CNI_ARGS", "K8S_POD_NAMESPACE=default;K8S_POD_NAME=web")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the kube-ovn binary starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(config.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out, json)
}

#[test]
fn version_lists_the_spec_versions() {
    let (out, json) = run("VERSION", r#"{"cniVersion":"1.0.0"}"#);
    assert!(out.status.success());
    let versions: Vec<&str> = json["supportedVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(versions.contains(&"0.3.1") && versions.contains(&"1.0.0"));
}

#[test]
fn malformed_configuration_is_code_6_naming_the_position() {
    let (out, json) = run("ADD", "{bad");
    assert!(!out.status.success());
    assert_eq!(json["code"], 6);
    let msg = json["msg"].as_str().unwrap();
    assert!(msg.contains("line 1 column 2"), "{msg}");
}

#[test]
fn configuration_without_a_name_is_code_7() {
    let (out, json) = run(
        "ADD",
        r#"{"cniVersion":"1.0.0","type":"kube-ovn","server_socket":"/nonexistent.sock"}"#,
    );
    assert!(!out.status.success());
    assert_eq!(json["code"], 7, "{json}");
}

#[test]
fn unreachable_daemon_is_try_again_later_naming_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cni-server.sock");
    let config = serde_json::json!({
        "cniVersion": "1.0.0",
        "name": "kube-ovn",
        "type": "kube-ovn",
        "server_socket": socket,
    });
    let (out, json) = run("ADD", &config.to_string());
    assert!(!out.status.success());
    assert_eq!(json["code"], 11, "{json}");
    let details = json["details"].as_str().unwrap();
    assert!(details.contains(&socket.display().to_string()), "{details}");
}
