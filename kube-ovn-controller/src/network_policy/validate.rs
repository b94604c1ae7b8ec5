//! A NetworkPolicy read into the shape the reconciler works with, judged as the API
//! server's validation would judge it (`k8s.io/kubernetes/pkg/apis/networking/validation`):
//! a CIDR that does not parse, an `except` outside its `cidr`, a label selector with
//! an empty or malformed key or a bad operator, a port out of range or an `endPort`
//! below its `port` are refused with an error naming the policy and the field. A
//! named port that no pod declares is not an error there (it matches nothing), so it
//! is only logged, by the ACL rendering.

use ipnet::IpNet;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::core::Selector;

use super::names::{Direction, PolicyKey};

/// Why a NetworkPolicy is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("networkpolicy {namespace}/{name}: {field}: {value:?} {why}")]
pub struct NpInvalid {
    /// The policy's namespace.
    pub namespace: String,
    /// The policy's name.
    pub name: String,
    /// The JSON path of the offending field, e.g. `spec.ingress[0].from[1].ipBlock.cidr`.
    pub field: String,
    /// The offending value.
    pub value: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// A transport protocol a port names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// `TCP` (the default).
    Tcp,
    /// `UDP`.
    Udp,
    /// `SCTP`.
    Sctp,
}

impl Protocol {
    /// The OVN match field prefix: `tcp`, `udp`, `sctp`.
    pub fn field(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }

    /// The protocol a Kubernetes object spells (`TCP` when absent).
    pub fn parse(spelled: Option<&str>) -> Option<Protocol> {
        match spelled.unwrap_or("TCP") {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }
}

/// The destination port(s) a rule port allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortMatch {
    /// Any port of the protocol.
    Any,
    /// `port` .. `endPort` (one port when equal).
    Range(u16, u16),
    /// A container port name, resolved on the destination pods.
    Named(String),
}

/// One entry of a rule's `ports`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulePort {
    /// The protocol.
    pub protocol: Protocol,
    /// The port(s).
    pub port: PortMatch,
}

/// One entry of a rule's `from`/`to`.
#[derive(Debug, Clone)]
pub enum Peer {
    /// Pods: `namespace` None means the policy's own namespace, `pods` None all pods.
    Pods {
        /// `podSelector`.
        pods: Option<Selector>,
        /// `namespaceSelector`.
        namespaces: Option<Selector>,
    },
    /// `ipBlock`.
    Block {
        /// `cidr`.
        cidr: IpNet,
        /// `except`.
        except: Vec<IpNet>,
    },
}

/// One ingress or egress rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The peers; empty means every source (ingress) or destination (egress).
    pub peers: Vec<Peer>,
    /// The ports; empty means every port and protocol.
    pub ports: Vec<RulePort>,
}

/// A NetworkPolicy that passed validation.
#[derive(Debug, Clone)]
pub struct ValidPolicy {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// `spec.podSelector`, over pods of the namespace.
    pub pod_selector: Selector,
    /// The ingress rules, None when the policy does not govern ingress.
    pub ingress: Option<Vec<Rule>>,
    /// The egress rules, None when the policy does not govern egress.
    pub egress: Option<Vec<Rule>>,
}

impl ValidPolicy {
    /// The policy's key (its rows' `np` external id).
    pub fn key(&self) -> PolicyKey {
        PolicyKey::new(self.namespace.as_str(), self.name.as_str())
    }

    /// The rules of one direction, None when the policy does not govern it.
    pub fn rules(&self, direction: Direction) -> Option<&[Rule]> {
        match direction {
            Direction::Ingress => self.ingress.as_deref(),
            Direction::Egress => self.egress.as_deref(),
        }
    }
}

struct Judge<'a> {
    namespace: &'a str,
    name: &'a str,
}

impl Judge<'_> {
    fn refuse(&self, field: String, value: impl ToString, why: &'static str) -> NpInvalid {
        NpInvalid {
            namespace: self.namespace.to_string(),
            name: self.name.to_string(),
            field,
            value: value.to_string(),
            why,
        }
    }

    fn selector(&self, field: String, sel: &LabelSelector) -> Result<Selector, NpInvalid> {
        let keys = sel.match_labels.iter().flat_map(|m| m.keys());
        let expr_keys = sel.match_expressions.iter().flatten().map(|e| &e.key);
        for key in keys.chain(expr_keys) {
            if let Some(why) = label_key_problem(key) {
                return Err(self.refuse(format!("{field}.key"), key, why));
            }
        }
        Selector::try_from(sel.clone())
            .map_err(|e| self.refuse(field, e.to_string(), "is not a valid label selector"))
    }

    fn peer(&self, field: String, peer: &NetworkPolicyPeer) -> Result<Peer, NpInvalid> {
        if let Some(block) = &peer.ip_block {
            let cidr: IpNet = block.cidr.parse().map_err(|_| {
                self.refuse(
                    format!("{field}.ipBlock.cidr"),
                    &block.cidr,
                    "is not a valid CIDR",
                )
            })?;
            let mut except = Vec::new();
            for (i, e) in block.except.iter().flatten().enumerate() {
                let at = format!("{field}.ipBlock.except[{i}]");
                let net: IpNet = e
                    .parse()
                    .map_err(|_| self.refuse(at.clone(), e, "is not a valid CIDR"))?;
                if !cidr.contains(&net) || net.prefix_len() <= cidr.prefix_len() {
                    return Err(self.refuse(
                        at,
                        e,
                        "must be a strict subset of the ipBlock's cidr",
                    ));
                }
                except.push(net);
            }
            return Ok(Peer::Block {
                cidr: cidr.trunc(),
                except,
            });
        }
        let pods = peer
            .pod_selector
            .as_ref()
            .map(|s| self.selector(format!("{field}.podSelector"), s))
            .transpose()?;
        let namespaces = peer
            .namespace_selector
            .as_ref()
            .map(|s| self.selector(format!("{field}.namespaceSelector"), s))
            .transpose()?;
        if pods.is_none() && namespaces.is_none() {
            return Err(self.refuse(
                field,
                "{}",
                "must set podSelector, namespaceSelector or ipBlock",
            ));
        }
        Ok(Peer::Pods { pods, namespaces })
    }

    fn port(&self, field: String, port: &NetworkPolicyPort) -> Result<RulePort, NpInvalid> {
        let protocol = Protocol::parse(port.protocol.as_deref()).ok_or_else(|| {
            self.refuse(
                format!("{field}.protocol"),
                port.protocol.clone().unwrap_or_default(),
                "must be TCP, UDP or SCTP",
            )
        })?;
        let in_range = |n: i32, at: &str| {
            u16::try_from(n).ok().filter(|p| *p > 0).ok_or_else(|| {
                self.refuse(format!("{field}.{at}"), n, "must be a port in 1..=65535")
            })
        };
        let port = match (&port.port, port.end_port) {
            (None, None) => PortMatch::Any,
            (None, Some(end)) => {
                return Err(self.refuse(format!("{field}.endPort"), end, "needs port"))
            }
            (Some(IntOrString::Int(n)), end) => {
                let start = in_range(*n, "port")?;
                let end = end
                    .map(|e| in_range(e, "endPort"))
                    .transpose()?
                    .unwrap_or(start);
                if end < start {
                    return Err(self.refuse(
                        format!("{field}.endPort"),
                        end,
                        "must not be below port",
                    ));
                }
                PortMatch::Range(start, end)
            }
            (Some(IntOrString::String(name)), None) => {
                if name.is_empty() || name.len() > 15 {
                    return Err(self.refuse(
                        format!("{field}.port"),
                        name,
                        "is not a valid port name",
                    ));
                }
                PortMatch::Named(name.clone())
            }
            (Some(IntOrString::String(_)), Some(end)) => {
                return Err(self.refuse(
                    format!("{field}.endPort"),
                    end,
                    "may not be used with a named port",
                ))
            }
        };
        Ok(RulePort { protocol, port })
    }

    fn rule(
        &self,
        field: String,
        peers: Option<&Vec<NetworkPolicyPeer>>,
        peer_key: &str,
        ports: Option<&Vec<NetworkPolicyPort>>,
    ) -> Result<Rule, NpInvalid> {
        let peers = peers
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, p)| self.peer(format!("{field}.{peer_key}[{i}]"), p))
            .collect::<Result<_, _>>()?;
        let ports = ports
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, p)| self.port(format!("{field}.ports[{i}]"), p))
            .collect::<Result<_, _>>()?;
        Ok(Rule { peers, ports })
    }
}

/// Why a label key is invalid (an empty name, a prefix that is not a DNS subdomain, a
/// name longer than 63 or with characters beyond `[A-Za-z0-9_.-]`), or None.
fn label_key_problem(key: &str) -> Option<&'static str> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            let subdomain_ok = !prefix.is_empty()
                && prefix.len() <= 253
                && prefix
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
            if !subdomain_ok {
                return Some("has a prefix that is not a DNS subdomain");
            }
            name
        }
        None => key,
    };
    if name.is_empty() {
        return Some("is an empty label key");
    }
    let edges_ok = name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let chars_ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if name.len() > 63 || !edges_ok || !chars_ok {
        return Some("is not a valid label key");
    }
    None
}

fn with_default(types: Option<&Vec<String>>, has_egress: bool) -> (bool, bool) {
    match types {
        Some(types) if !types.is_empty() => (
            types.iter().any(|t| t == "Ingress"),
            types.iter().any(|t| t == "Egress"),
        ),
        // the API server's default: Ingress always, Egress when egress rules exist
        _ => (true, has_egress),
    }
}

/// Judges a NetworkPolicy; the first offence found is returned.
pub fn validate(np: &NetworkPolicy) -> Result<ValidPolicy, NpInvalid> {
    let namespace = np.metadata.namespace.clone().unwrap_or_default();
    let name = np.metadata.name.clone().unwrap_or_default();
    let judge = Judge {
        namespace: &namespace,
        name: &name,
    };
    let spec = np.spec.clone().unwrap_or_default();
    let pod_selector = judge.selector(
        "spec.podSelector".into(),
        &spec.pod_selector.unwrap_or_default(),
    )?;
    let (governs_ingress, governs_egress) = with_default(
        spec.policy_types.as_ref(),
        spec.egress.as_ref().is_some_and(|e| !e.is_empty()),
    );
    for (i, t) in spec.policy_types.iter().flatten().enumerate() {
        if t != "Ingress" && t != "Egress" {
            return Err(judge.refuse(
                format!("spec.policyTypes[{i}]"),
                t,
                "must be Ingress or Egress",
            ));
        }
    }
    let ingress = spec.ingress.unwrap_or_default();
    let egress = spec.egress.unwrap_or_default();
    let ingress: Vec<Rule> = ingress
        .iter()
        .enumerate()
        .map(|(i, r)| {
            judge.rule(
                format!("spec.ingress[{i}]"),
                r.from.as_ref(),
                "from",
                r.ports.as_ref(),
            )
        })
        .collect::<Result<_, _>>()?;
    let egress: Vec<Rule> = egress
        .iter()
        .enumerate()
        .map(|(i, r)| {
            judge.rule(
                format!("spec.egress[{i}]"),
                r.to.as_ref(),
                "to",
                r.ports.as_ref(),
            )
        })
        .collect::<Result<_, _>>()?;
    Ok(ValidPolicy {
        namespace: namespace.clone(),
        name: name.clone(),
        pod_selector,
        ingress: governs_ingress.then_some(ingress),
        egress: governs_egress.then_some(egress),
    })
}
