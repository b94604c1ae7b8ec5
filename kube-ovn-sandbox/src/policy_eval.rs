//! An evaluator of `networking.k8s.io/v1` NetworkPolicy semantics, written
//! from the Kubernetes API documentation and independent of the
//! controller's ACL translation: the sandbox's matrix prober compares what
//! the datapath does with what this evaluator says.
//!
//! The rules, as the API reference states them:
//! * a pod is isolated for ingress (egress) when some policy in its
//!   namespace selects it (`podSelector`) and has `Ingress` (`Egress`) in its
//!   `policyTypes`; absent `policyTypes` means `Ingress`, plus `Egress` when
//!   the policy has an `egress` section;
//! * traffic to an isolated pod is allowed when any rule of any policy that
//!   isolates it allows it (policies are additive); a connection needs both
//!   the source's egress and the destination's ingress to allow it;
//! * a rule with no (or empty) `from`/`to` matches every peer, with no (or
//!   empty) `ports` every port; a peer with only `podSelector` selects pods
//!   of the policy's namespace, with only `namespaceSelector` every pod of
//!   the selected namespaces, with both the selected pods of the selected
//!   namespaces; `ipBlock` matches pod IPs in `cidr` but not in `except`;
//! * a port is a number or a container port name (resolved against the
//!   destination pod's named ports with the rule's protocol), `endPort`
//!   makes a range, the protocol defaults to TCP;
//! * a pod reaching its own IP is local delivery inside its network
//!   namespace, which no policy can block.

use ipnet::IpNet;
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

/// Labels of a pod or namespace.
pub type Labels = BTreeMap<String, String>;

/// A transport protocol NetworkPolicy ports name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// TCP (the default).
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

impl Protocol {
    /// Parses the API spelling (`TCP`, `UDP`, `SCTP`, any case).
    pub fn parse(s: &str) -> Option<Protocol> {
        match s.to_ascii_uppercase().as_str() {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        })
    }
}

/// A named container port of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPort {
    /// `containerPort.name`.
    pub name: String,
    /// `containerPort.containerPort`.
    pub port: u16,
    /// `containerPort.protocol`.
    pub protocol: Protocol,
}

/// What the evaluator needs to know about a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInfo {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Labels.
    pub labels: Labels,
    /// `status.podIPs`.
    pub ips: Vec<IpAddr>,
    /// Named container ports (unnamed ones cannot be referred to by name).
    pub ports: Vec<NamedPort>,
}

/// A policy the evaluator cannot understand.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PolicyError {
    /// A label selector with an unknown operator or misplaced values.
    #[error("NetworkPolicy {policy}: invalid label selector: {reason}")]
    Selector {
        /// `namespace/name` of the policy.
        policy: String,
        /// What is wrong.
        reason: String,
    },
    /// An `ipBlock` whose `cidr` or `except` is not a CIDR.
    #[error("NetworkPolicy {policy}: ipBlock {value:?} is not a CIDR")]
    Cidr {
        /// `namespace/name` of the policy.
        policy: String,
        /// The offending text.
        value: String,
    },
    /// A port protocol other than TCP, UDP, SCTP.
    #[error("NetworkPolicy {policy}: unknown protocol {value:?}")]
    Protocol {
        /// `namespace/name` of the policy.
        policy: String,
        /// The offending text.
        value: String,
    },
    /// A policyTypes entry other than Ingress, Egress.
    #[error("NetworkPolicy {policy}: unknown policyType {value:?}")]
    PolicyType {
        /// `namespace/name` of the policy.
        policy: String,
        /// The offending text.
        value: String,
    },
}

/// Policies checked once, ready to answer `allowed` queries.
#[derive(Debug, Clone)]
pub struct Evaluator {
    namespaces: BTreeMap<String, Labels>,
    policies: Vec<(String, NetworkPolicySpec, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Ingress,
    Egress,
}

impl Evaluator {
    /// Checks every policy; `namespaces` maps each namespace to its labels.
    pub fn new(
        namespaces: BTreeMap<String, Labels>,
        policies: &[NetworkPolicy],
    ) -> Result<Evaluator, PolicyError> {
        let mut checked = Vec::with_capacity(policies.len());
        for policy in policies {
            let ns = policy.metadata.namespace.clone().unwrap_or_default();
            let name = policy.metadata.name.clone().unwrap_or_default();
            let id = format!("{ns}/{name}");
            let spec = policy.spec.clone().unwrap_or_default();
            validate(&id, &spec)?;
            checked.push((ns, spec, id));
        }
        Ok(Evaluator {
            namespaces,
            policies: checked,
        })
    }

    /// Whether `src` may reach `dst` on `port`/`protocol`: the source's
    /// egress and the destination's ingress must both allow it.
    pub fn allowed(&self, src: &PodInfo, dst: &PodInfo, port: u16, protocol: Protocol) -> bool {
        if src.namespace == dst.namespace && src.name == dst.name {
            return true; // local delivery inside the pod's own namespace
        }
        self.direction_allows(Direction::Egress, src, dst, port, protocol)
            && self.direction_allows(Direction::Ingress, dst, src, port, protocol)
    }

    /// Whether `subject`'s policies of `dir` allow traffic with `peer`
    /// (the port is always the destination's).
    fn direction_allows(
        &self,
        dir: Direction,
        subject: &PodInfo,
        peer: &PodInfo,
        port: u16,
        protocol: Protocol,
    ) -> bool {
        let dst = if dir == Direction::Ingress {
            subject
        } else {
            peer
        };
        let mut isolated = false;
        for (ns, spec, _) in &self.policies {
            if *ns != subject.namespace
                || !has_type(spec, dir)
                || !spec
                    .pod_selector
                    .as_ref()
                    .is_none_or(|sel| selects(sel, &subject.labels))
            {
                continue;
            }
            isolated = true;
            let allows = match dir {
                Direction::Ingress => spec.ingress.iter().flatten().any(|rule| {
                    self.rule_allows(
                        ns,
                        rule.from.as_deref(),
                        rule.ports.as_deref(),
                        peer,
                        dst,
                        port,
                        protocol,
                    )
                }),
                Direction::Egress => spec.egress.iter().flatten().any(|rule| {
                    self.rule_allows(
                        ns,
                        rule.to.as_deref(),
                        rule.ports.as_deref(),
                        peer,
                        dst,
                        port,
                        protocol,
                    )
                }),
            };
            if allows {
                return true;
            }
        }
        !isolated
    }

    #[allow(clippy::too_many_arguments)] // one rule, its peer and the connection
    fn rule_allows(
        &self,
        policy_ns: &str,
        peers: Option<&[NetworkPolicyPeer]>,
        ports: Option<&[NetworkPolicyPort]>,
        peer: &PodInfo,
        dst: &PodInfo,
        port: u16,
        protocol: Protocol,
    ) -> bool {
        let peer_ok = match peers {
            None | Some([]) => true,
            Some(peers) => peers.iter().any(|p| self.peer_matches(policy_ns, p, peer)),
        };
        let port_ok = match ports {
            None | Some([]) => true,
            Some(ports) => ports.iter().any(|p| port_matches(p, dst, port, protocol)),
        };
        peer_ok && port_ok
    }

    fn peer_matches(&self, policy_ns: &str, peer: &NetworkPolicyPeer, pod: &PodInfo) -> bool {
        if let Some(block) = &peer.ip_block {
            let within =
                |cidr: &str, ip: &IpAddr| cidr.parse::<IpNet>().is_ok_and(|n| n.contains(ip));
            // An IP matches when it is in the cidr and in no except entry.
            return pod.ips.iter().any(|ip| {
                within(&block.cidr, ip) && !block.except.iter().flatten().any(|e| within(e, ip))
            });
        }
        let ns_ok = match &peer.namespace_selector {
            None => pod.namespace == policy_ns,
            Some(sel) => {
                let empty = Labels::new();
                let labels = self.namespaces.get(&pod.namespace).unwrap_or(&empty);
                selects(sel, labels)
            }
        };
        let pod_ok = peer
            .pod_selector
            .as_ref()
            .is_none_or(|sel| selects(sel, &pod.labels));
        ns_ok && pod_ok
    }
}

fn has_type(spec: &NetworkPolicySpec, dir: Direction) -> bool {
    match &spec.policy_types {
        Some(types) => types.iter().any(|t| {
            (dir == Direction::Ingress && t == "Ingress")
                || (dir == Direction::Egress && t == "Egress")
        }),
        None => dir == Direction::Ingress || spec.egress.is_some(),
    }
}

fn port_matches(rule: &NetworkPolicyPort, dst: &PodInfo, port: u16, protocol: Protocol) -> bool {
    let rule_protocol = rule
        .protocol
        .as_deref()
        .and_then(Protocol::parse)
        .unwrap_or(Protocol::Tcp);
    if rule_protocol != protocol {
        return false;
    }
    match &rule.port {
        None => true,
        Some(IntOrString::Int(first)) => {
            let last = rule.end_port.unwrap_or(*first);
            (*first..=last).contains(&i32::from(port))
        }
        Some(IntOrString::String(name)) => dst
            .ports
            .iter()
            .any(|p| p.name == *name && p.protocol == protocol && p.port == port),
    }
}

/// Label selector semantics: every `matchLabels` pair and every
/// `matchExpressions` requirement must hold; the empty selector matches all.
pub fn selects(selector: &LabelSelector, labels: &Labels) -> bool {
    let labels_ok = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let exprs_ok = selector.match_expressions.iter().flatten().all(|req| {
        let values = req.values.as_deref().unwrap_or_default();
        let value = labels.get(&req.key);
        match req.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false, // rejected by `validate`
        }
    });
    labels_ok && exprs_ok
}

fn validate_selector(policy: &str, sel: &LabelSelector) -> Result<(), PolicyError> {
    for req in sel.match_expressions.iter().flatten() {
        let has_values = req.values.as_ref().is_some_and(|v| !v.is_empty());
        let reason = match req.operator.as_str() {
            "In" | "NotIn" if !has_values => "needs values",
            "Exists" | "DoesNotExist" if has_values => "must have no values",
            "In" | "NotIn" | "Exists" | "DoesNotExist" => continue,
            _ => "has an unknown operator",
        };
        return Err(PolicyError::Selector {
            policy: policy.to_string(),
            reason: format!("key {:?} operator {:?} {reason}", req.key, req.operator),
        });
    }
    Ok(())
}

fn validate_peer(policy: &str, peer: &NetworkPolicyPeer) -> Result<(), PolicyError> {
    for sel in [&peer.pod_selector, &peer.namespace_selector]
        .into_iter()
        .flatten()
    {
        validate_selector(policy, sel)?;
    }
    if let Some(block) = &peer.ip_block {
        for cidr in std::iter::once(&block.cidr).chain(block.except.iter().flatten()) {
            if cidr.parse::<IpNet>().is_err() {
                return Err(PolicyError::Cidr {
                    policy: policy.to_string(),
                    value: cidr.clone(),
                });
            }
        }
    }
    Ok(())
}

fn validate_port(policy: &str, port: &NetworkPolicyPort) -> Result<(), PolicyError> {
    match port.protocol.as_deref() {
        Some(p) if Protocol::parse(p).is_none() => Err(PolicyError::Protocol {
            policy: policy.to_string(),
            value: p.to_string(),
        }),
        _ => Ok(()),
    }
}

fn validate(policy: &str, spec: &NetworkPolicySpec) -> Result<(), PolicyError> {
    if let Some(sel) = &spec.pod_selector {
        validate_selector(policy, sel)?;
    }
    for t in spec.policy_types.iter().flatten() {
        if t != "Ingress" && t != "Egress" {
            return Err(PolicyError::PolicyType {
                policy: policy.to_string(),
                value: t.clone(),
            });
        }
    }
    let ingress = spec.ingress.iter().flatten().map(|r| (&r.from, &r.ports));
    let egress = spec.egress.iter().flatten().map(|r| (&r.to, &r.ports));
    for (peers, ports) in ingress.chain(egress) {
        for peer in peers.iter().flatten() {
            validate_peer(policy, peer)?;
        }
        for port in ports.iter().flatten() {
            validate_port(policy, port)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
