//! The busier built-in rows: pods, nodes and services.

use super::format::{age_of, format_labels, or_none};
use serde_json::{json, Value};

fn items(v: &Value) -> impl Iterator<Item = &Value> {
    v.as_array().into_iter().flatten()
}

/// The STATUS of a pod as `kubectl get pods` words it: the phase, or the
/// pod's reason, or the reason a container is waiting or terminated, or
/// `Terminating` once deletion started.
fn pod_status(o: &Value) -> String {
    let status = &o["status"];
    let mut reason = status["phase"].as_str().unwrap_or_default().to_string();
    if let Some(r) = status["reason"].as_str().filter(|r| !r.is_empty()) {
        reason = r.to_string();
    }
    let mut running = false;
    for cs in items(&status["containerStatuses"])
        .collect::<Vec<_>>()
        .iter()
        .rev()
    {
        let state = &cs["state"];
        if let Some(r) = state["waiting"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_string();
        } else if let Some(r) = state["terminated"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_string();
        } else if state["terminated"].is_object() {
            reason = match state["terminated"]["signal"].as_i64().filter(|s| *s != 0) {
                Some(signal) => format!("Signal:{signal}"),
                None => format!(
                    "ExitCode:{}",
                    state["terminated"]["exitCode"].as_i64().unwrap_or(0)
                ),
            };
        } else if cs["ready"].as_bool() == Some(true) && state["running"].is_object() {
            running = true;
        }
    }
    if reason == "Completed" && running {
        reason = "Running".into();
    }
    if o["metadata"]["deletionTimestamp"].is_string() {
        reason = if status["reason"] == "NodeLost" {
            "Unknown"
        } else {
            "Terminating"
        }
        .into();
    }
    reason
}

/// Pod row: Name, Ready, Status, Restarts, Age, IP, Node, Nominated Node,
/// Readiness Gates.
pub fn pod_cells(o: &Value) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let total = items(&spec["containers"]).count();
    let statuses: Vec<&Value> = items(&status["containerStatuses"]).collect();
    let ready = statuses
        .iter()
        .filter(|c| c["ready"].as_bool() == Some(true) && c["state"]["running"].is_object())
        .count();
    let restarts: i64 = statuses
        .iter()
        .filter_map(|c| c["restartCount"].as_i64())
        .sum();
    let last_restart = statuses
        .iter()
        .filter_map(|c| c["lastState"]["terminated"]["finishedAt"].as_str())
        .max();
    let restarts = match last_restart {
        Some(at) if restarts > 0 => format!("{restarts} ({} ago)", age_of(&json!(at))),
        _ => restarts.to_string(),
    };
    let gates: Vec<&str> = items(&spec["readinessGates"])
        .filter_map(|g| g["conditionType"].as_str())
        .collect();
    let gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let met = gates
            .iter()
            .filter(|g| {
                items(&status["conditions"]).any(|c| c["type"] == **g && c["status"] == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    vec![
        o["metadata"]["name"].clone(),
        json!(format!("{ready}/{total}")),
        json!(pod_status(o)),
        json!(restarts),
        json!(age_of(&o["metadata"]["creationTimestamp"])),
        json!(or_none(&status["podIP"])),
        json!(or_none(&spec["nodeName"])),
        json!(or_none(&status["nominatedNodeName"])),
        json!(gates),
    ]
}

/// Node row: Name, Status, Roles, Age, Version, Internal-IP, External-IP,
/// OS-Image, Kernel-Version, Container-Runtime.
pub fn node_cells(o: &Value) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let ready = items(&status["conditions"]).find(|c| c["type"] == "Ready");
    let mut state = match ready.map(|c| c["status"].as_str()) {
        Some(Some("True")) => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if spec["unschedulable"].as_bool() == Some(true) {
        state.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<String> = o["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role.to_string()),
            _ if k == "kubernetes.io/role" => v.as_str().map(String::from),
            _ => None,
        })
        .collect();
    roles.sort();
    roles.dedup();
    let roles = if roles.is_empty() {
        "<none>".into()
    } else {
        roles.join(",")
    };
    let address = |ty: &str| {
        items(&status["addresses"])
            .find(|a| a["type"] == ty)
            .map_or_else(|| "<none>".to_string(), |a| or_none(&a["address"]))
    };
    let info = &status["nodeInfo"];
    let unknown = |v: &Value| {
        v.as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or("<unknown>")
            .to_string()
    };
    vec![
        o["metadata"]["name"].clone(),
        json!(state),
        json!(roles),
        json!(age_of(&o["metadata"]["creationTimestamp"])),
        json!(info["kubeletVersion"].as_str().unwrap_or_default()),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(unknown(&info["osImage"])),
        json!(unknown(&info["kernelVersion"])),
        json!(unknown(&info["containerRuntimeVersion"])),
    ]
}

/// Service row: Name, Type, Cluster-IP, External-IP, Port(s), Age, Selector.
pub fn service_cells(o: &Value) -> Vec<Value> {
    let spec = &o["spec"];
    let ty = spec["type"].as_str().unwrap_or("ClusterIP");
    let mut external: Vec<String> = items(&spec["externalIPs"])
        .filter_map(|ip| ip.as_str().map(String::from))
        .collect();
    let external = match ty {
        "LoadBalancer" => {
            external.extend(
                items(&o["status"]["loadBalancer"]["ingress"]).filter_map(|i| {
                    i["ip"]
                        .as_str()
                        .or_else(|| i["hostname"].as_str())
                        .map(String::from)
                }),
            );
            if external.is_empty() {
                "<pending>".into()
            } else {
                external.join(",")
            }
        }
        "ExternalName" => spec["externalName"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        _ if external.is_empty() => "<none>".into(),
        _ => external.join(","),
    };
    let ports: Vec<String> = items(&spec["ports"])
        .map(|p| {
            let proto = p["protocol"].as_str().unwrap_or("TCP");
            let port = p["port"].as_i64().unwrap_or(0);
            match p["nodePort"].as_i64().filter(|n| *n != 0) {
                Some(node) => format!("{port}:{node}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    };
    vec![
        o["metadata"]["name"].clone(),
        json!(ty),
        json!(or_none(&spec["clusterIP"])),
        json!(external),
        json!(ports),
        json!(age_of(&o["metadata"]["creationTimestamp"])),
        json!(format_labels(&spec["selector"])),
    ]
}
