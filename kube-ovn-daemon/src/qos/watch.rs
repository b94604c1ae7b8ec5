//! The daemon's pod QoS loop: pods on this node (field selector `spec.nodeName`) are
//! watched, and a pod whose QoS annotations differ from what was last applied gets
//! [`super::apply`] again, as Kube-OVN's daemon pod worker does (`handlePod`).
//!
//! The pod's NIC is found through its OVS Interface: `external_ids:iface-id` =
//! [`pod_port_name`] (what CNI ADD writes), its namespace from `external_ids:pod_netns`.
//! A pod whose port is not plugged yet is retried every `period`.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use ovs_vsctl::{Interface, VsClient};

use super::{apply, QosError, QosReport, QosSpec, QosTarget};
use kube_ovn_api::annotations::{PodNetwork, Provider};
use kube_ovn_api::naming::pod_port_name;
use kube_ovn_api::NamespacedName;

/// The Interface key CNI ADD stores the pod's network namespace under (Kube-OVN's).
pub const POD_NETNS_KEY: &str = "pod_netns";
/// The NIC inside the pod that the default provider plugs.
pub const POD_NIC: &str = "eth0";

/// What [`sync_pod`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodQos {
    /// The pod's port is not on this node's switch (yet).
    NotPlugged,
    /// Applied (possibly a no-op).
    Applied(QosReport),
}

/// The QoS a pod's annotations ask for (default provider); malformed keys count as
/// unset, as the controller reports them.
pub fn wanted_spec(pod: &Pod) -> QosSpec {
    let (net, _) = PodNetwork::parse_lenient(&Provider::ovn(), pod.annotations());
    QosSpec::from_network(&net)
}

/// Applies `spec` to the pod's plugged NIC, if it is plugged on this node.
pub async fn sync_pod(vs: &VsClient, pod: &Pod, spec: &QosSpec) -> Result<PodQos, QosError> {
    let namespace = pod.namespace().unwrap_or_default();
    let iface_id = pod_port_name(&namespace, &pod.name_any(), &Provider::ovn().to_string());
    let iface = vs
        .store()
        .rows::<Interface>()
        .map_err(|e| super::rows::ovs_failed(&iface_id, e))?
        .into_iter()
        .find(|i| i.row.external_ids.get("iface-id") == Some(&iface_id));
    let Some(iface) = iface else {
        return Ok(PodQos::NotPlugged);
    };
    let netns = iface.row.external_ids.get(POD_NETNS_KEY).map(PathBuf::from);
    let key = NamespacedName::of(pod).to_string();
    let target = QosTarget {
        port: &iface.row.name,
        iface_id: &iface_id,
        pod: &key,
        netns: netns.as_deref(),
        pod_iface: POD_NIC,
    };
    apply(vs, &target, spec).await.map(PodQos::Applied)
}

/// Watches the pods of `node` until `shutdown` resolves, applying each pod's QoS when
/// its annotations change; pods not plugged yet or that failed are retried every
/// `period`.
pub async fn run(
    client: Client,
    node: &str,
    vs: &VsClient,
    period: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let pods: Api<Pod> = Api::all(client);
    let config = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let mut events = std::pin::pin!(watcher(pods, config));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    // wanted QoS per pod, and what was last applied
    let mut wanted: HashMap<NamespacedName, (Pod, QosSpec)> = HashMap::new();
    let mut applied: HashMap<NamespacedName, QosSpec> = HashMap::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tick.tick() => {}
            event = events.next() => match event {
                Some(Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod))) => {
                    let spec = wanted_spec(&pod);
                    wanted.insert(NamespacedName::of(&pod), (pod, spec));
                }
                Some(Ok(watcher::Event::Delete(pod))) => {
                    // CNI DEL removes the rows with the port
                    wanted.remove(&NamespacedName::of(&pod));
                    applied.remove(&NamespacedName::of(&pod));
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => tracing::warn!(%error, "pod watch failed; retrying"),
                None => return,
            },
        }
        for (key, (pod, spec)) in &wanted {
            if applied.get(key) == Some(spec) {
                continue;
            }
            match sync_pod(vs, pod, spec).await {
                Ok(PodQos::Applied(_)) => {
                    applied.insert(key.clone(), spec.clone());
                }
                Ok(PodQos::NotPlugged) => {}
                Err(error) => {
                    tracing::warn!(pod = %key, error = %super::super::error_chain(&error), "pod QoS failed")
                }
            }
        }
    }
}
