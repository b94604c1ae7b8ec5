//! What kubelet writes: the pod's status (phase, conditions, IPs,
//! containerStatuses) and its own Node object.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{json, Value};

/// The current time in the API's format.
pub fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Whether every `spec.readinessGates` condition of the pod is `True` in its status
/// (kubelet's rule: a pod with readiness gates is Ready only when its containers are
/// and each gate's condition, which someone else writes, is True).
pub fn readiness_gates_pass(pod: &Pod) -> bool {
    let conditions = pod
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .collect::<Vec<_>>();
    pod.spec
        .iter()
        .flat_map(|s| s.readiness_gates.iter().flatten())
        .all(|gate| {
            conditions
                .iter()
                .any(|c| c.type_ == gate.condition_type && c.status == "True")
        })
}

/// The status of a running pod whose responder is (not) answering
/// (`containers_ready`); the pod is Ready when that holds and its readiness gates
/// pass. Written with a strategic merge patch, so conditions merge by type: a
/// readiness gate's condition stays, and `null` clears an earlier failure's reason.
pub fn running_status(
    pod: &Pod,
    host_ip: &str,
    ips: &[String],
    containers_ready: bool,
    started: &str,
) -> Value {
    let ready = containers_ready && readiness_gates_pass(pod);
    let flag = |b: bool| if b { "True" } else { "False" };
    let condition = |kind: &str, status: bool| json!({"type": kind, "status": flag(status), "lastTransitionTime": started, "reason": null, "message": null});
    let mut ready_condition = condition("Ready", ready);
    if containers_ready && !ready {
        ready_condition["reason"] = json!("ReadinessGatesNotReady");
    }
    let containers: Vec<Value> = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .map(|c| {
            json!({
                "name": c.name,
                "image": c.image.clone().unwrap_or_default(),
                "imageID": "",
                "containerID": format!("sandbox://{}", pod.metadata.uid.clone().unwrap_or_default()),
                "ready": containers_ready,
                "started": true,
                "restartCount": 0,
                "state": {"running": {"startedAt": started}},
            })
        })
        .collect();
    json!({"status": {
        "phase": "Running",
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": ips.first(),
        "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>(),
        "startTime": started,
        "conditions": [
            condition("PodScheduled", true),
            condition("Initialized", true),
            condition("ContainersReady", containers_ready),
            ready_condition,
        ],
        "containerStatuses": containers,
    }})
}

/// The status of a pod that could not be started (it stays Pending; the
/// message says why, as kubelet's sandbox-creation events do).
pub fn failed_start_status(message: &str) -> Value {
    json!({"status": {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "SandboxCreationFailed", "message": message},
        ],
    }})
}

/// A Ready Node with its InternalIP, as kubelet registers it.
pub fn node_object(name: &str, host_ip: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "status": {
            "addresses": [{"type": "InternalIP", "address": host_ip},
                          {"type": "Hostname", "address": name}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "lastHeartbeatTime": now(), "lastTransitionTime": now()}],
        },
    })
}

/// The pod's declared container ports (protocol TCP unless stated).
pub fn declared_ports(pod: &Pod) -> Vec<(u16, super::policy_eval::Protocol)> {
    use super::policy_eval::Protocol;
    let mut out = Vec::new();
    for c in pod.spec.iter().flat_map(|s| &s.containers) {
        for p in c.ports.iter().flatten() {
            let proto = p
                .protocol
                .as_deref()
                .and_then(Protocol::parse)
                .unwrap_or(Protocol::Tcp);
            if let Ok(port) = u16::try_from(p.container_port) {
                if !out.contains(&(port, proto)) {
                    out.push((port, proto));
                }
            }
        }
    }
    out
}
