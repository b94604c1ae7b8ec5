//! The conformance tests' reading of pods and connections; the sandbox itself is the
//! shared driver in `common::sandbox`.

use serde_json::Value;

pub use crate::common::sandbox::{eventually, text, Sandbox};

pub fn name(pod: &Value) -> &str {
    pod["metadata"]["name"].as_str().unwrap_or_default()
}

pub fn pod_ip(pod: &Value) -> &str {
    pod["status"]["podIP"].as_str().unwrap_or_default()
}

pub fn node_of(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or_default()
}

/// The status of condition `kind` (`"True"`, `"False"`), if the pod has it.
pub fn condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a str> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["status"].as_str())
}

/// Running, not being deleted, and Ready as asked.
pub fn running(pod: &Value, ready: bool) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["metadata"]["deletionTimestamp"].is_null()
        && condition(pod, "Ready") == Some(if ready { "True" } else { "False" })
}

/// The names of the pods `running(pod, true)` whose name starts with `prefix`.
pub fn ready_named(pods: &[Value], prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = pods
        .iter()
        .filter(|p| name(p).starts_with(prefix) && running(p, true))
        .map(|p| name(p).to_string())
        .collect();
    names.sort();
    names
}

/// `count` TCP connections from pod `client` of `namespace` to `ip:port`, one after
/// another, each with a 2 s bound: what answered each (empty when nothing did).
pub fn connect_many(
    sb: &Sandbox,
    namespace: &str,
    client: &str,
    ip: &str,
    port: u16,
    count: usize,
) -> Vec<String> {
    let script = format!(
        "for i in $(seq {count}); do timeout 2 bash -c 'exec 3<>/dev/tcp/{ip}/{port}; cat <&3' 2>/dev/null; echo; done"
    );
    let out = sb.kubectl(&["-n", namespace, "exec", client, "--", "bash", "-c", &script]);
    assert!(out.status.success(), "exec in {client}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}
