//! An evaluator of NetworkPolicy semantics written from the Kubernetes API reference
//! (networking.k8s.io/v1 NetworkPolicySpec, NetworkPolicyIngressRule/EgressRule,
//! NetworkPolicyPeer, NetworkPolicyPort, IPBlock, LabelSelector), independent of the
//! controller: a connection is allowed when the destination's ingress side and the
//! source's egress side both allow it, and a side is allowed when no policy of that
//! type selects the pod or any rule of any such policy matches (policies add up).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// A pod as the evaluator sees it.
#[derive(Debug, Clone)]
pub struct EvalPod {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub ip: Ipv4Addr,
    /// (name, protocol, number) of its containers' ports.
    pub ports: Vec<(String, String, i32)>,
}

pub type Labels = BTreeMap<String, String>;

/// "matchLabels ... ANDed"; expressions In/NotIn/Exists/DoesNotExist; an empty
/// selector matches everything.
pub fn selector_matches(sel: &LabelSelector, labels: &Labels) -> bool {
    let labels_ok = sel
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let exprs_ok = sel.match_expressions.iter().flatten().all(|e| {
        let values = e.values.clone().unwrap_or_default();
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => !value.is_some_and(|v| values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            other => panic!("operator {other} is not in the API"),
        }
    });
    labels_ok && exprs_ok
}

fn in_cidr(ip: Ipv4Addr, cidr: &str) -> bool {
    let (base, len) = cidr.split_once('/').expect("a CIDR");
    let base: Ipv4Addr = base.parse().expect("an IPv4 base");
    let len: u32 = len.parse().expect("a prefix length");
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    (u32::from(ip) & mask) == (u32::from(base) & mask)
}

/// "If this field is empty or missing, this rule matches all sources/destinations";
/// otherwise any peer matches: an ipBlock by address (minus `except`), a
/// podSelector alone within the policy's namespace, a namespaceSelector alone all
/// pods of the matching namespaces, both together the matching pods there.
fn peers_match(
    peers: Option<&Vec<NetworkPolicyPeer>>,
    policy_ns: &str,
    pod: &EvalPod,
    ns_labels: &BTreeMap<String, Labels>,
) -> bool {
    let Some(peers) = peers.filter(|p| !p.is_empty()) else {
        return true;
    };
    peers.iter().any(|peer| {
        if let Some(block) = &peer.ip_block {
            return in_cidr(pod.ip, &block.cidr)
                && !block.except.iter().flatten().any(|e| in_cidr(pod.ip, e));
        }
        let ns_ok = match &peer.namespace_selector {
            None => pod.namespace == policy_ns,
            Some(sel) => selector_matches(
                sel,
                &ns_labels.get(&pod.namespace).cloned().unwrap_or_default(),
            ),
        };
        let pod_ok = peer
            .pod_selector
            .as_ref()
            .is_none_or(|sel| selector_matches(sel, &pod.labels));
        ns_ok && pod_ok
    })
}

/// "If this field is empty or missing, this rule matches all ports"; a port matches
/// its protocol (default TCP) and its number, range up to `endPort`, or a named port
/// of the destination pod.
fn ports_match(
    ports: Option<&Vec<NetworkPolicyPort>>,
    dst: &EvalPod,
    port: i32,
    proto: &str,
) -> bool {
    let Some(ports) = ports.filter(|p| !p.is_empty()) else {
        return true;
    };
    ports.iter().any(|p| {
        let p_proto = p.protocol.as_deref().unwrap_or("TCP");
        if p_proto != proto {
            return false;
        }
        match &p.port {
            None => true,
            Some(IntOrString::Int(n)) => match p.end_port {
                None => *n == port,
                Some(end) => *n <= port && port <= end,
            },
            Some(IntOrString::String(name)) => dst
                .ports
                .iter()
                .any(|(n, pr, num)| n == name && pr == proto && *num == port),
        }
    })
}

/// "If no policyTypes are specified ... Ingress will always be set and Egress will
/// be set if the NetworkPolicy has any egress rules".
fn types(np: &NetworkPolicy) -> (bool, bool) {
    let spec = np.spec.clone().unwrap_or_default();
    match spec.policy_types.filter(|t| !t.is_empty()) {
        Some(t) => (
            t.iter().any(|x| x == "Ingress"),
            t.iter().any(|x| x == "Egress"),
        ),
        None => (true, spec.egress.is_some_and(|e| !e.is_empty())),
    }
}

fn selects(np: &NetworkPolicy, pod: &EvalPod) -> bool {
    np.metadata.namespace.as_deref() == Some(pod.namespace.as_str())
        && selector_matches(
            &np.spec
                .clone()
                .unwrap_or_default()
                .pod_selector
                .unwrap_or_default(),
            &pod.labels,
        )
}

/// Whether a new connection from `src` to `dst` on `port`/`proto` is allowed.
pub fn allowed(
    policies: &[NetworkPolicy],
    ns_labels: &BTreeMap<String, Labels>,
    src: &EvalPod,
    dst: &EvalPod,
    port: i32,
    proto: &str,
) -> bool {
    let ingress: Vec<&NetworkPolicy> = policies
        .iter()
        .filter(|np| types(np).0 && selects(np, dst))
        .collect();
    let ingress_ok = ingress.is_empty()
        || ingress.iter().any(|np| {
            let ns = np.metadata.namespace.clone().unwrap_or_default();
            np.spec
                .clone()
                .unwrap_or_default()
                .ingress
                .iter()
                .flatten()
                .any(|rule| {
                    peers_match(rule.from.as_ref(), &ns, src, ns_labels)
                        && ports_match(rule.ports.as_ref(), dst, port, proto)
                })
        });
    let egress: Vec<&NetworkPolicy> = policies
        .iter()
        .filter(|np| types(np).1 && selects(np, src))
        .collect();
    let egress_ok = egress.is_empty()
        || egress.iter().any(|np| {
            let ns = np.metadata.namespace.clone().unwrap_or_default();
            np.spec
                .clone()
                .unwrap_or_default()
                .egress
                .iter()
                .flatten()
                .any(|rule| {
                    peers_match(rule.to.as_ref(), &ns, dst, ns_labels)
                        && ports_match(rule.ports.as_ref(), dst, port, proto)
                })
        });
    ingress_ok && egress_ok
}
