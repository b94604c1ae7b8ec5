//! What kube-controller-manager's EndpointSlice controller does: for each
//! Service with a selector, EndpointSlices (one per address family and
//! resolved port set) listing the selected pods that have IPs, with their
//! readiness, so that consumers balance only to ready pods. Slices carry
//! the upstream labels (`kubernetes.io/service-name`,
//! `endpointslice.kubernetes.io/managed-by`) and are owned by the Service.

use super::workloads::template_hash;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `kubernetes.io/service-name`.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// `endpointslice.kubernetes.io/managed-by`.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The manager value upstream's controller writes (consumers look for it).
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
const FIELD_MANAGER: &str = "kube-ovn-sandbox-endpointslice";

fn pod_ready(p: &Pod) -> bool {
    p.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The service ports as this pod serves them (a named targetPort is looked
/// up in the pod's container ports; a port it does not have is left out).
fn resolved_ports(svc: &Service, pod: &Pod) -> Vec<Value> {
    let mut out = Vec::new();
    for sp in svc.spec.iter().flat_map(|s| s.ports.iter().flatten()) {
        let protocol = sp.protocol.clone().unwrap_or_else(|| "TCP".into());
        let port = match &sp.target_port {
            None => Some(sp.port),
            Some(IntOrString::Int(p)) => Some(*p),
            Some(IntOrString::String(name)) => pod
                .spec
                .iter()
                .flat_map(|s| &s.containers)
                .flat_map(|c| c.ports.iter().flatten())
                .find(|cp| {
                    cp.name.as_deref() == Some(name.as_str())
                        && cp.protocol.clone().unwrap_or_else(|| "TCP".into()) == protocol
                })
                .map(|cp| cp.container_port),
        };
        if let Some(port) = port {
            out.push(json!({"name": sp.name.clone().unwrap_or_default(), "port": port, "protocol": protocol}));
        }
    }
    out
}

fn selects(selector: &BTreeMap<String, String>, pod: &Pod) -> bool {
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The slices a Service should have, by name.
fn desired_slices(svc: &Service, pods: &[Pod]) -> BTreeMap<String, Value> {
    let name = svc.metadata.name.clone().unwrap_or_default();
    let spec = svc.spec.clone().unwrap_or_default();
    let selector = spec.selector.clone().unwrap_or_default();
    let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
    // (family, ports) -> endpoints
    let mut groups: BTreeMap<(String, String), (Vec<Value>, Vec<Value>)> = BTreeMap::new();
    for pod in pods.iter().filter(|p| selects(&selector, p)) {
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let ready = (pod_ready(pod) || publish_not_ready) && !terminating;
        let ports = resolved_ports(svc, pod);
        for ip in pod.status.iter().flat_map(|s| s.pod_ips.iter().flatten()) {
            let family = if ip.ip.contains(':') { "IPv6" } else { "IPv4" };
            let key = (
                family.to_string(),
                serde_json::to_string(&ports).unwrap_or_default(),
            );
            let endpoint = json!({
                "addresses": [ip.ip],
                "conditions": {"ready": ready, "serving": pod_ready(pod), "terminating": terminating},
                "nodeName": pod.spec.as_ref().and_then(|s| s.node_name.clone()),
                "targetRef": {"kind": "Pod", "namespace": pod.metadata.namespace,
                              "name": pod.metadata.name, "uid": pod.metadata.uid},
            });
            let entry = groups
                .entry(key)
                .or_insert_with(|| (Vec::new(), ports.clone()));
            entry.0.push(endpoint);
        }
    }
    let owner = json!({"apiVersion": "v1", "kind": "Service", "name": name,
        "uid": svc.metadata.uid, "controller": true, "blockOwnerDeletion": true});
    groups
        .into_iter()
        .map(|((family, ports_key), (endpoints, ports))| {
            let slice_name = format!("{name}-{}", template_hash(&json!([family, ports_key])));
            let slice = json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": slice_name, "namespace": svc.metadata.namespace,
                    "labels": {SERVICE_NAME_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY},
                    "ownerReferences": [owner]},
                "addressType": family,
                "endpoints": endpoints,
                "ports": ports,
            });
            (slice_name, slice)
        })
        .collect()
}

/// One pass over every Service of every namespace.
pub async fn reconcile_endpoint_slices(client: &kube::Client) -> Result<(), kube::Error> {
    let services = Api::<Service>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    let slices = Api::<EndpointSlice>::all(client.clone())
        .list(&ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}")))
        .await?
        .items;
    for svc in &services {
        let ns = svc.metadata.namespace.clone().unwrap_or_default();
        let name = svc.metadata.name.clone().unwrap_or_default();
        let has_selector = svc
            .spec
            .as_ref()
            .and_then(|s| s.selector.as_ref())
            .is_some_and(|s| !s.is_empty());
        if !has_selector || svc.metadata.deletion_timestamp.is_some() {
            continue; // selectorless Services' slices belong to whoever writes them
        }
        let in_ns: Vec<Pod> = pods
            .iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(&ns))
            .cloned()
            .collect();
        let desired = desired_slices(svc, &in_ns);
        let api: Api<EndpointSlice> = Api::namespaced(client.clone(), &ns);
        let params = PatchParams::apply(FIELD_MANAGER).force();
        for (slice_name, slice) in &desired {
            api.patch(slice_name, &params, &Patch::Apply(slice)).await?;
        }
        let stale = slices.iter().filter(|s| {
            s.metadata.namespace.as_deref() == Some(&ns)
                && s.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(SERVICE_NAME_LABEL))
                    == Some(&name)
                && !desired.contains_key(s.metadata.name.as_deref().unwrap_or_default())
        });
        for s in stale {
            api.delete(
                s.metadata.name.as_deref().unwrap_or_default(),
                &DeleteParams::default(),
            )
            .await?;
        }
    }
    Ok(())
}
