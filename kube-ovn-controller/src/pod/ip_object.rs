//! The IP object of a pod NIC (Kube-OVN's `createOrUpdateIPCR`): named like the port,
//! spec `podName`, `namespace`, `subnet`, `nodeName`, `ipAddress`, `v4IpAddress`,
//! `v6IpAddress`, `macAddress`, `podType`, labelled with the subnet and node.
//!
//! Kube-OVN also puts its finalizer on IP objects, removed by its IP reconciler; there
//! is no IP reconciler here yet, so none is set (the pod's own finalizer covers release).

use std::collections::BTreeMap;
use std::sync::Arc;

use ipam::Allocation;
use kube::api::{Api, ObjectMeta, PostParams};

use kube_ovn_api::crd::{IPSpec, IP};

/// Label: the subnet of the address.
pub const SUBNET_LABEL: &str = "ovn.kubernetes.io/subnet";
/// Label: the node of the pod.
pub const NODE_NAME_LABEL: &str = "ovn.kubernetes.io/node-name";
/// Label: `"false"` for an address allocated with a pod (a reserved IP says `"true"`).
pub const IP_RESERVED_LABEL: &str = "ovn.kubernetes.io/ip_reserved";

/// Who the IP object is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpHolder<'a> {
    /// The object name (`kube_ovn_api::naming::pod_port_name`).
    pub name: &'a str,
    /// The pod.
    pub pod: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// Its node, once scheduled.
    pub node: Option<&'a str>,
    /// `StatefulSet` for a pod that keeps its address.
    pub pod_type: Option<&'a str>,
}

/// The IP object a pod NIC should have.
pub fn desired_ip(holder: &IpHolder<'_>, subnet: &str, alloc: &Allocation) -> IP {
    let node = holder.node.unwrap_or_default().to_string();
    let labels = BTreeMap::from([
        (SUBNET_LABEL.to_string(), subnet.to_string()),
        (NODE_NAME_LABEL.to_string(), node.clone()),
        (subnet.to_string(), String::new()),
        (IP_RESERVED_LABEL.to_string(), "false".to_string()),
    ]);
    let spec = IPSpec {
        pod_name: Some(holder.pod.to_string()),
        namespace: Some(holder.namespace.to_string()),
        subnet: Some(subnet.to_string()),
        node_name: Some(node),
        ip_address: Some(alloc.ip_address_annotation()),
        v4_ip_address: Some(alloc.v4.map(|a| a.to_string()).unwrap_or_default()),
        v6_ip_address: Some(alloc.v6.map(|a| a.to_string()).unwrap_or_default()),
        mac_address: alloc.mac.map(|m| m.to_string()),
        pod_type: Some(holder.pod_type.unwrap_or_default().to_string()),
        ..Default::default()
    };
    let mut ip = IP::new(holder.name, spec);
    ip.metadata.labels = Some(labels);
    ip
}

/// Whether `stored` already says what `wanted` does (its other labels may stay).
fn matches(stored: &IP, wanted: &IP) -> bool {
    let labels = stored.metadata.labels.clone().unwrap_or_default();
    let wanted_labels = wanted.metadata.labels.clone().unwrap_or_default();
    stored.spec == wanted.spec && wanted_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// Creates or updates the IP object; whether it wrote. `cached` is what the
/// controller's cache holds under its name (`Some(None)`: the cache has none), `None`
/// without a cache: then the API server is asked first. A cache that is a moment
/// behind costs a refused create (409), after which the API server is asked.
pub async fn ensure_ip(
    api: &Api<IP>,
    wanted: &IP,
    cached: Option<Option<Arc<IP>>>,
) -> Result<bool, kube::Error> {
    let name = wanted.metadata.name.clone().unwrap_or_default();
    let stored = match cached {
        Some(Some(ip)) if matches(&ip, wanted) => return Ok(false),
        Some(None) => match api.create(&PostParams::default(), wanted).await {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => api.get_opt(&name).await?,
            Err(err) => return Err(err),
        },
        // no cache, or a cached object that differs: compare with the server's own
        Some(Some(_)) | None => api.get_opt(&name).await?,
    };
    let Some(stored) = stored else {
        api.create(&PostParams::default(), wanted).await?;
        return Ok(true);
    };
    if matches(&stored, wanted) {
        return Ok(false);
    }
    let mut labels = stored.metadata.labels.clone().unwrap_or_default();
    labels.extend(wanted.metadata.labels.clone().unwrap_or_default());
    let updated = IP {
        metadata: ObjectMeta {
            labels: Some(labels),
            ..stored.metadata.clone()
        },
        spec: wanted.spec.clone(),
    };
    api.replace(&name, &PostParams::default(), &updated).await?;
    Ok(true)
}

/// Deletes the IP object if present; whether it did.
pub async fn delete_ip(api: &Api<IP>, name: &str) -> Result<bool, kube::Error> {
    match api.delete(name, &Default::default()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(err) => Err(err),
    }
}
