//! Columns and cells of the built-in kinds, after kube-apiserver's
//! `pkg/printers/internalversion/printers.go`.

use super::format::{age_of, first_three, format_labels, format_selector, or_none};
use serde_json::{json, Value};

/// (name, type, priority, description)
type Col = (&'static str, &'static str, i64, &'static str);

const NAME: Col = (
    "Name",
    "string",
    0,
    "Name must be unique within a namespace.",
);
const AGE: Col = ("Age", "string", 0, "CreationTimestamp of the object.");
const CONTAINERS: Col = (
    "Containers",
    "string",
    1,
    "Names of each container in the template.",
);
const IMAGES: Col = (
    "Images",
    "string",
    1,
    "Images referenced by each container in the template.",
);
const SELECTOR: Col = ("Selector", "string", 1, "Label selector for pods.");

/// The columns kube-apiserver prints for `kind`.
pub fn columns(kind: &str) -> Vec<Col> {
    match kind {
        "Pod" => vec![
            NAME,
            ("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
            ("Status", "string", 0, "The aggregate status of the containers in this pod."),
            ("Restarts", "string", 0, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
            AGE,
            ("IP", "string", 1, "IP address allocated to the pod."),
            ("Node", "string", 1, "Name of the node the pod is assigned to."),
            ("Nominated Node", "string", 1, "Name of the node the pod is nominated to."),
            ("Readiness Gates", "string", 1, "Readiness gates of the pod."),
        ],
        "Node" => vec![
            NAME,
            ("Status", "string", 0, "The status of the node"),
            ("Roles", "string", 0, "The roles of the node"),
            AGE,
            ("Version", "string", 0, "Kubelet Version reported by the node."),
            ("Internal-IP", "string", 1, "List of internal IPs."),
            ("External-IP", "string", 1, "List of external IPs."),
            ("OS-Image", "string", 1, "OS Image reported by the node."),
            ("Kernel-Version", "string", 1, "Kernel Version reported by the node."),
            ("Container-Runtime", "string", 1, "Container Runtime Version reported by the node."),
        ],
        "Namespace" => vec![NAME, ("Status", "string", 0, "The status of the namespace"), AGE],
        "Service" => vec![
            NAME,
            ("Type", "string", 0, "The type of the service."),
            ("Cluster-IP", "string", 0, "The cluster IP of the service."),
            ("External-IP", "string", 0, "The external IP of the service."),
            ("Port(s)", "string", 0, "The ports of the service."),
            AGE,
            ("Selector", "string", 1, "The selector of the service."),
        ],
        "Endpoints" => vec![NAME, ("Endpoints", "string", 0, "Endpoints of the object."), AGE],
        "EndpointSlice" => vec![
            NAME,
            ("AddressType", "string", 0, "The type of addresses in this slice."),
            ("Ports", "string", 0, "Ports of the endpoints."),
            ("Endpoints", "string", 0, "Addresses of the endpoints."),
            AGE,
        ],
        "Deployment" => vec![
            NAME,
            ("Ready", "string", 0, "Number of the pod with ready state"),
            ("Up-to-date", "integer", 0, "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
            ("Available", "integer", 0, "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
            AGE, CONTAINERS, IMAGES, SELECTOR,
        ],
        "ReplicaSet" => vec![
            NAME,
            ("Desired", "integer", 0, "Number of desired pods."),
            ("Current", "integer", 0, "Number of actually running pods."),
            ("Ready", "integer", 0, "Number of pods ready."),
            AGE, CONTAINERS, IMAGES, SELECTOR,
        ],
        "DaemonSet" => vec![
            NAME,
            ("Desired", "integer", 0, "The desired number of nodes the daemon pod should run on."),
            ("Current", "integer", 0, "The number of nodes running the daemon pod."),
            ("Ready", "integer", 0, "The number of nodes with the daemon pod ready."),
            ("Up-to-date", "integer", 0, "The number of nodes running the updated daemon pod."),
            ("Available", "integer", 0, "The number of nodes with the daemon pod available."),
            ("Node Selector", "string", 0, "The node selector of the daemon pod."),
            AGE, CONTAINERS, IMAGES, SELECTOR,
        ],
        "StatefulSet" => vec![
            NAME,
            ("Ready", "string", 0, "Number of the pod with ready state"),
            AGE, CONTAINERS, IMAGES,
        ],
        "ConfigMap" => vec![NAME, ("Data", "integer", 0, "Number of keys."), AGE],
        "Secret" => vec![
            NAME,
            ("Type", "string", 0, "The type of the secret"),
            ("Data", "integer", 0, "Number of keys."),
            AGE,
        ],
        "ServiceAccount" => vec![NAME, ("Secrets", "integer", 0, "Number of secrets."), AGE],
        "Lease" => vec![NAME, ("Holder", "string", 0, "The current holder of the lease."), AGE],
        "NetworkPolicy" => vec![
            NAME,
            ("Pod-Selector", "string", 0, "The pods the policy selects."),
            AGE,
        ],
        "Event" => vec![
            ("Last Seen", "string", 0, "Time when last event from the source was seen."),
            ("Type", "string", 0, "Type of this event."),
            ("Reason", "string", 0, "Short, machine understandable string that gives the reason for this event being generated."),
            ("Object", "string", 0, "The object that this event is about."),
            ("Subobject", "string", 1, "The subobject this event is about."),
            ("Source", "string", 1, "The component reporting this event."),
            ("Message", "string", 0, "A human-readable description of the status of this operation."),
            ("First Seen", "string", 1, "Time when this event was first seen."),
            ("Count", "string", 1, "The number of times this event has occurred."),
            ("Name", "string", 1, "Name of the event."),
        ],
        "CustomResourceDefinition" => vec![NAME, ("Created At", "date", 0, "The creation time.")],
        _ => vec![NAME, ("Created At", "date", 0, "The creation time.")],
    }
}

fn count(v: &Value) -> usize {
    v.as_object().map_or(0, |m| m.len()) + v.as_array().map_or(0, |a| a.len())
}

fn int(v: &Value) -> Value {
    json!(v.as_i64().unwrap_or(0))
}

/// Names and images of a pod template's containers.
fn containers_images(template_spec: &Value) -> (Value, Value) {
    let list = template_spec["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let join = |field: &str| {
        json!(list
            .iter()
            .map(|c| c[field].as_str().unwrap_or_default())
            .collect::<Vec<_>>()
            .join(","))
    };
    (join("name"), join("image"))
}

/// The cells of `object`, in the order of [`columns`].
pub fn cells(kind: &str, o: &Value) -> Vec<Value> {
    let name = o["metadata"]["name"].clone();
    let age = json!(age_of(&o["metadata"]["creationTimestamp"]));
    let (spec, status) = (&o["spec"], &o["status"]);
    let workload = || {
        let (c, i) = containers_images(&spec["template"]["spec"]);
        (c, i, json!(format_selector(&spec["selector"])))
    };
    match kind {
        "Pod" => super::core::pod_cells(o),
        "Node" => super::core::node_cells(o),
        "Namespace" => vec![
            name,
            json!(status["phase"].as_str().unwrap_or_default()),
            age,
        ],
        "Service" => super::core::service_cells(o),
        "Endpoints" => {
            let mut addrs = Vec::new();
            for subset in o["subsets"].as_array().into_iter().flatten() {
                let ips: Vec<&str> = subset["addresses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|a| a["ip"].as_str())
                    .collect();
                let ports: Vec<i64> = subset["ports"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["port"].as_i64())
                    .collect();
                for ip in &ips {
                    if ports.is_empty() {
                        addrs.push(ip.to_string());
                    }
                    addrs.extend(ports.iter().map(|p| format!("{ip}:{p}")));
                }
            }
            vec![name, json!(first_three(&addrs, "<none>")), age]
        }
        "EndpointSlice" => {
            let ports: Vec<String> = o["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["port"].as_i64().map(|p| p.to_string()))
                .collect();
            let addrs: Vec<String> = o["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
                .filter_map(|a| a.as_str().map(String::from))
                .collect();
            let ports = if ports.is_empty() {
                "<unset>".into()
            } else {
                ports.join(",")
            };
            vec![
                name,
                json!(o["addressType"].as_str().unwrap_or_default()),
                json!(ports),
                json!(first_three(&addrs, "<unset>")),
                age,
            ]
        }
        "Deployment" => {
            let (c, i, s) = workload();
            let desired = spec["replicas"].as_i64().unwrap_or(1);
            let ready = status["readyReplicas"].as_i64().unwrap_or(0);
            let ready = json!(format!("{ready}/{desired}"));
            vec![
                name,
                ready,
                int(&status["updatedReplicas"]),
                int(&status["availableReplicas"]),
                age,
                c,
                i,
                s,
            ]
        }
        "ReplicaSet" => {
            let (c, i, s) = workload();
            let desired = json!(spec["replicas"].as_i64().unwrap_or(1));
            vec![
                name,
                desired,
                int(&status["replicas"]),
                int(&status["readyReplicas"]),
                age,
                c,
                i,
                s,
            ]
        }
        "DaemonSet" => {
            let (c, i, s) = workload();
            let node_selector = json!(format_labels(&spec["template"]["spec"]["nodeSelector"]));
            vec![
                name,
                int(&status["desiredNumberScheduled"]),
                int(&status["currentNumberScheduled"]),
                int(&status["numberReady"]),
                int(&status["updatedNumberScheduled"]),
                int(&status["numberAvailable"]),
                node_selector,
                age,
                c,
                i,
                s,
            ]
        }
        "StatefulSet" => {
            let (c, i, _) = workload();
            let desired = spec["replicas"].as_i64().unwrap_or(1);
            let ready = status["readyReplicas"].as_i64().unwrap_or(0);
            vec![name, json!(format!("{ready}/{desired}")), age, c, i]
        }
        "ConfigMap" => vec![
            name,
            json!(count(&o["data"]) + count(&o["binaryData"])),
            age,
        ],
        "Secret" => {
            let ty = o["type"].as_str().unwrap_or("Opaque");
            vec![name, json!(ty), json!(count(&o["data"])), age]
        }
        "ServiceAccount" => vec![name, json!(count(&o["secrets"])), age],
        "Lease" => vec![name, json!(or_none(&spec["holderIdentity"])), age],
        "NetworkPolicy" => vec![name, json!(format_selector(&spec["podSelector"])), age],
        "Event" => event_cells(o),
        _ => vec![name, o["metadata"]["creationTimestamp"].clone()],
    }
}

fn event_cells(o: &Value) -> Vec<Value> {
    let seen = |field: &str| match &o[field] {
        Value::String(_) => age_of(&o[field]),
        _ => age_of(&o["eventTime"]),
    };
    let involved = &o["involvedObject"];
    let object = format!(
        "{}/{}",
        involved["kind"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase(),
        involved["name"].as_str().unwrap_or_default()
    );
    let source = &o["source"];
    let mut src = source["component"].as_str().unwrap_or_default().to_string();
    if let Some(host) = source["host"].as_str().filter(|h| !h.is_empty()) {
        src = format!("{src}, {host}");
    }
    vec![
        json!(seen("lastTimestamp")),
        json!(o["type"].as_str().unwrap_or_default()),
        json!(o["reason"].as_str().unwrap_or_default()),
        json!(object),
        json!(involved["fieldPath"].as_str().unwrap_or_default()),
        json!(src),
        json!(o["message"].as_str().unwrap_or_default()),
        json!(seen("firstTimestamp")),
        json!(o["count"].as_i64().unwrap_or(1).to_string()),
        o["metadata"]["name"].clone(),
    ]
}
