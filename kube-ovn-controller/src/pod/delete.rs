//! A deleted pod (or one that ran to completion) gives back its address, logical
//! switch port and IP object, and its subnet's usage figures follow; a StatefulSet pod
//! that keeps its address for its successor keeps all three (Kube-OVN's
//! `handleDeletePod`).

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;

use super::port::delete_port;
use super::reconcile::{api_err, is_host_network, pod_key, PodError};
use super::{ip_object, statefulset};
use crate::Context;
use kube_ovn_api::crd::IP;
use kube_ovn_api::naming::{pod_owner, pod_port_name, OVN_PROVIDER};

/// What a cleanup did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// A StatefulSet pod that keeps its address for its successor.
    pub kept: bool,
    /// Subnets an address was released in.
    pub released: Vec<String>,
    /// Whether the port was removed.
    pub port_removed: bool,
    /// Whether the IP object was removed.
    pub ip_removed: bool,
}

/// Releases a deleted pod's address and removes its port and IP object, unless it is
/// a StatefulSet pod that keeps them for its successor.
pub async fn cleanup(ctx: &Context, pod: &Pod) -> Result<CleanupReport, PodError> {
    let mut report = CleanupReport::default();
    if is_host_network(pod) {
        return Ok(report);
    }
    report.kept = statefulset::keep_on_delete(&ctx.client, pod)
        .await
        .map_err(api_err(pod, "reading its StatefulSet"))?;
    if report.kept {
        tracing::info!(pod = %pod_key(pod), "statefulset pod keeps its address for its successor");
        return Ok(report);
    }
    let (ns, name) = (
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    );
    // the replica is trusted only while connected: a port whose transaction's reply
    // died with the connection shows up in it only after the reconnect
    if ctx.nb.db().client().current_remote().is_none() {
        return Err(PodError::NbUnavailable { pod: pod_key(pod) });
    }
    let port = pod_port_name(ns, name, OVN_PROVIDER);
    let nb_err = |source| PodError::Nb {
        pod: pod_key(pod),
        port: port.clone(),
        source,
    };
    let mut txn = ctx.nb.txn();
    report.port_removed = delete_port(&mut txn, &port).map_err(nb_err)?;
    if report.port_removed {
        ctx.nb.commit(txn).await.map_err(nb_err)?;
    }
    report.ip_removed = ip_object::delete_ip(&Api::<IP>::all(ctx.client.clone()), &port)
        .await
        .map_err(api_err(pod, "deleting its IP object"))?;
    // only now, with its port and IP object gone, may the address go to another pod
    let owner = pod_owner(ns, name, OVN_PROVIDER);
    for subnet in ctx.ipam.subnet_names() {
        if let Ok(Some(_)) = ctx.ipam.release(&subnet, &owner) {
            report.released.push(subnet);
        }
    }
    for subnet in &report.released {
        ctx.write_usage(subnet)
            .await
            .map_err(api_err(pod, "writing its subnet's usage"))?;
    }
    tracing::info!(pod = %pod_key(pod), ?report, "pod network removed");
    Ok(report)
}

/// What a pod the API server deleted still holds, given back: Kube-OVN's
/// `handleDeletePod` for its `deletePodQueue`. A pod deleted through [`FINALIZER`]
/// holds nothing by then, and nothing is written. One deleted before its result
/// write (which adds the finalizer) may hold an address, a port and an IP object,
/// when the write failed or was never reached: those are removed here. A pod of the
/// same name created since (a StatefulSet's successor) owns the name: it is left
/// alone. None when nothing was left.
///
/// [`FINALIZER`]: super::FINALIZER
pub async fn clean_deleted(ctx: &Context, pod: &Pod) -> Result<Option<CleanupReport>, PodError> {
    if is_host_network(pod) {
        return Ok(None);
    }
    let (ns, name) = (
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    );
    let _serial = ctx.pods.locks.lock(&pod_key(pod)).await;
    if let Some(Some(successor)) = ctx.cached::<Pod>(Some(ns), name) {
        if successor.metadata.uid != pod.metadata.uid {
            return Ok(None);
        }
    }
    let owner = pod_owner(ns, name, OVN_PROVIDER);
    let port = pod_port_name(ns, name, OVN_PROVIDER);
    // the address is released last, so a port or an IP object is never left without
    // the IPAM still holding it; the IP object is checked too, in case the IPAM was
    // rebuilt without it
    let holds_address = ctx
        .ipam
        .subnet_names()
        .iter()
        .any(|subnet| matches!(ctx.ipam.get(subnet, &owner), Ok(Some(_))));
    let has_ip_object = match ctx.cached::<IP>(None, &port) {
        Some(cached) => cached.is_some(),
        None => Api::<IP>::all(ctx.client.clone())
            .get_opt(&port)
            .await
            .map_err(api_err(pod, "reading its IP object"))?
            .is_some(),
    };
    if !holds_address && !has_ip_object {
        return Ok(None);
    }
    cleanup(ctx, pod).await.map(Some)
}
