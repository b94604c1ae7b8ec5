//! Who a policy is about, read from the reflector stores: the pods its
//! `podSelector` picks in its namespace (its port group's members), and the pod
//! addresses each rule's selector peers pick (its allow address sets). Only pods the
//! Pod reconciler has given an address (`ip_address` annotation) and a logical switch
//! port count; host-network pods have no port and are never selected.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::core::SelectorExt;

use super::names::Family;
use super::validate::{Peer, Protocol, Rule, ValidPolicy};
use kube_ovn_api::annotations::{PodNetwork, Provider};
use kube_ovn_api::naming::{pod_port_name, OVN_PROVIDER};

/// A pod as the policy reconciler sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// The primary NIC's addresses (`ovn.kubernetes.io/ip_address`).
    pub ips: Vec<IpAddr>,
    /// The primary NIC's logical switch port, `<pod>.<ns>`.
    pub port: String,
    /// Declared container ports: (name, protocol, number).
    pub named_ports: Vec<(String, Protocol, u16)>,
    /// The node it is scheduled on (`spec.nodeName`), if any yet.
    pub node: Option<String>,
}

impl PodView {
    /// The view of a pod that has an address; None for host-network, finished or
    /// not yet allocated pods.
    pub fn of(pod: &Pod) -> Option<PodView> {
        let spec = pod.spec.as_ref()?;
        if spec.host_network == Some(true) {
            return None;
        }
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            return None;
        }
        let annotations = pod.metadata.annotations.clone().unwrap_or_default();
        let (network, _) = PodNetwork::parse_lenient(&Provider::ovn(), &annotations);
        let ips: Vec<IpAddr> = network.ip_address.map(|p| p.addrs()).unwrap_or_default();
        if ips.is_empty() {
            return None;
        }
        let namespace = pod.metadata.namespace.clone()?;
        let name = pod.metadata.name.clone()?;
        let named_ports = spec
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .filter_map(|p| {
                let name = p.name.clone()?;
                let protocol = Protocol::parse(p.protocol.as_deref())?;
                Some((name, protocol, u16::try_from(p.container_port).ok()?))
            })
            .collect();
        Some(PodView {
            port: pod_port_name(&namespace, &name, OVN_PROVIDER),
            labels: pod.metadata.labels.clone().unwrap_or_default(),
            namespace,
            name,
            ips,
            named_ports,
            node: spec.node_name.clone(),
        })
    }
}

/// The pods and namespaces one pass works on.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Pods with an address, in (namespace, name) order.
    pub pods: Vec<PodView>,
    /// Namespace labels by namespace name.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl Snapshot {
    /// A snapshot of the reflector stores' contents.
    pub fn new<'a>(
        pods: impl IntoIterator<Item = &'a Pod>,
        namespaces: impl IntoIterator<Item = &'a Namespace>,
    ) -> Snapshot {
        let mut pods: Vec<PodView> = pods.into_iter().filter_map(PodView::of).collect();
        pods.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        let namespaces = namespaces
            .into_iter()
            .filter_map(|ns| {
                Some((
                    ns.metadata.name.clone()?,
                    ns.metadata.labels.clone().unwrap_or_default(),
                ))
            })
            .collect();
        Snapshot { pods, namespaces }
    }

    fn namespace_labels(&self, ns: &str) -> BTreeMap<String, String> {
        self.namespaces.get(ns).cloned().unwrap_or_default()
    }

    /// The pods the policy applies to.
    pub fn selected<'s>(
        &'s self,
        policy: &'s ValidPolicy,
    ) -> impl Iterator<Item = &'s PodView> + 's {
        self.pods.iter().filter(move |p| {
            p.namespace == policy.namespace && policy.pod_selector.matches(&p.labels)
        })
    }

    /// The pods a selector peer picks, for a policy in `policy_ns`.
    pub fn peer_pods<'s>(&'s self, policy_ns: &'s str, peer: &'s Peer) -> Vec<&'s PodView> {
        let Peer::Pods { pods, namespaces } = peer else {
            return Vec::new();
        };
        let mut ns_match: BTreeMap<&str, bool> = BTreeMap::new();
        self.pods
            .iter()
            .filter(|p| {
                let in_ns = match namespaces {
                    None => p.namespace == policy_ns,
                    Some(sel) => *ns_match
                        .entry(p.namespace.as_str())
                        .or_insert_with(|| sel.matches(&self.namespace_labels(&p.namespace))),
                };
                in_ns && pods.as_ref().is_none_or(|s| s.matches(&p.labels))
            })
            .collect()
    }

    /// The addresses of `family` a rule's selector peers pick.
    pub fn rule_addresses(&self, policy_ns: &str, rule: &Rule, family: Family) -> BTreeSet<String> {
        rule.peers
            .iter()
            .flat_map(|peer| self.peer_pods(policy_ns, peer))
            .flat_map(|p| p.ips.iter())
            .filter(|ip| Family::of(ip) == family)
            .map(ToString::to_string)
            .collect()
    }
}
