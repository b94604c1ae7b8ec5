//! A Subnet's centralized gateway (Kube-OVN's `reconcileCentralizedGateway`): with
//! `gatewayType: centralized`, the cluster router sends the subnet's egress to the
//! join address of its gateway node(s) (`gatewayNode`, comma-separated, each `node` or
//! `node:ip`; the `ip` part is the node daemon's egress address and does not change
//! the next hop): per family of the CIDR, the policy at
//! [`GATEWAY_ROUTER_POLICY_PRIORITY`] `ip4.src == <cidr>` reroute to the gateway
//! nodes' join IPs (all of them with `enableEcmp`, else the first ready one), with
//! `external_ids` `vendor`, `subnet=<subnet>` and `<node>=<join IP>` per next hop (so
//! the node reconciler can drop a deleted node's hop). Without ECMP the active gateway
//! stays the one in `status.activateGateway` while it is ready. A distributed Subnet
//! has no such policy (an old one is removed) and no active gateway.
//!
//! A gateway node that does not exist, or a malformed entry, leaves NB untouched and
//! is reported in the Subnet's conditions, naming it.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use ovn_nb::{LogicalRouterPolicy, NbError, NbTxn, PolicySpec};

use super::reconcile::SubnetError;
use super::validate::ValidSubnet;
use crate::node::policies::{owned_by, reroute, sync_policies, GATEWAY_ROUTER_POLICY_PRIORITY};
use crate::Context;
use kube_ovn_api::annotations::{IpPair, NodeAnnotations};
use kube_ovn_api::crd::{GatewayType, Subnet};

/// Condition reason of a Subnet whose centralized gateway cannot be set.
pub const REASON_GATEWAY_FAILED: &str = "ReconcileCentralizedGatewayFailed";

/// Why a centralized gateway was not written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayProblem {
    /// A `gatewayNode` entry does not parse.
    #[error("spec.gatewayNode entry {entry:?} is malformed: {reason}")]
    Malformed {
        /// The entry.
        entry: String,
        /// Why.
        reason: &'static str,
    },
    /// A centralized Subnet names no gateway node.
    #[error("spec.gatewayNode is empty for a centralized gateway")]
    NoGatewayNode,
    /// A gateway node does not exist (or is being deleted).
    #[error("spec.gatewayNode: node {node} does not exist")]
    UnknownNode {
        /// The node.
        node: String,
    },
    /// No gateway node has a join address yet.
    #[error("spec.gatewayNode: none of {nodes:?} has a join address yet")]
    NoReadyGateway {
        /// The gateway nodes.
        nodes: Vec<String>,
    },
}

/// One `gatewayNode` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayNode {
    /// The node.
    pub name: String,
    /// The `:ip` part, the node's egress address.
    pub egress_ip: Option<IpAddr>,
}

/// Parses `gatewayNode`: `node[:ip],...`, empty entries skipped.
pub fn parse_gateway_nodes(spec: &str) -> Result<Vec<GatewayNode>, GatewayProblem> {
    let malformed = |entry: &str, reason| GatewayProblem::Malformed {
        entry: entry.to_string(),
        reason,
    };
    let mut nodes = Vec::new();
    for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, ip) = match entry.split_once(':') {
            Some((name, ip)) => (name.trim(), Some(ip.trim())),
            None => (entry, None),
        };
        if name.is_empty() {
            return Err(malformed(entry, "no node name"));
        }
        let egress_ip = match ip {
            Some(ip) => Some(ip.parse().map_err(|_| malformed(entry, "not an IP"))?),
            None => None,
        };
        nodes.push(GatewayNode {
            name: name.to_string(),
            egress_ip,
        });
    }
    Ok(nodes)
}

/// The join addresses of the gateway nodes that have one, in `gatewayNode` order.
fn gateway_joins(
    gateways: &[GatewayNode],
    nodes: &[Node],
) -> Result<Vec<(String, IpPair)>, GatewayProblem> {
    let mut ready = Vec::new();
    for gateway in gateways {
        let node = nodes
            .iter()
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .find(|n| n.metadata.name.as_deref() == Some(gateway.name.as_str()))
            .ok_or_else(|| GatewayProblem::UnknownNode {
                node: gateway.name.clone(),
            })?;
        let map = node.metadata.annotations.clone().unwrap_or_default();
        let (annotations, _) = NodeAnnotations::parse_lenient(&map);
        if let (true, Some(ips)) = (annotations.is_allocated(), annotations.ip_address) {
            ready.push((gateway.name.clone(), ips));
        }
    }
    Ok(ready)
}

/// The centralized gateway policies of `subnet`, given the cluster's nodes, and the
/// active gateway without ECMP (`active`, the current one, is kept while ready).
pub fn centralized_policies(
    subnet: &ValidSubnet,
    gateway_node: &str,
    ecmp: bool,
    active: Option<&str>,
    nodes: &[Node],
) -> Result<(Vec<PolicySpec>, Option<String>), GatewayProblem> {
    let gateways = parse_gateway_nodes(gateway_node)?;
    if gateways.is_empty() {
        return Err(GatewayProblem::NoGatewayNode);
    }
    let mut ready = gateway_joins(&gateways, nodes)?;
    if ready.is_empty() {
        return Err(GatewayProblem::NoReadyGateway {
            nodes: gateways.into_iter().map(|g| g.name).collect(),
        });
    }
    let mut chosen = None;
    if !ecmp {
        let keep = ready
            .iter()
            .position(|(name, _)| Some(name.as_str()) == active);
        ready = vec![ready.swap_remove(keep.unwrap_or(0))];
        chosen = Some(ready[0].0.clone());
    }
    let families = [
        (subnet.cidr.v4.map(|c| c.to_string()), 4),
        (subnet.cidr.v6.map(|c| c.to_string()), 6),
    ];
    let mut policies = Vec::new();
    for (cidr, af) in families {
        let Some(cidr) = cidr else { continue };
        let hops: Vec<(String, String)> = ready
            .iter()
            .filter_map(|(node, ips)| {
                let ip = if af == 4 {
                    ips.v4.map(IpAddr::V4)
                } else {
                    ips.v6.map(IpAddr::V6)
                };
                ip.map(|ip| (node.clone(), ip.to_string()))
            })
            .collect();
        if hops.is_empty() {
            continue;
        }
        let mut ids: BTreeMap<String, String> = hops.iter().cloned().collect();
        ids.insert("subnet".to_string(), subnet.name.clone());
        let nexthops = hops.into_iter().map(|(_, ip)| ip);
        policies.push(reroute(
            GATEWAY_ROUTER_POLICY_PRIORITY,
            format!("ip{af}.src == {cidr}"),
            nexthops,
            ids,
        ));
    }
    Ok((policies, chosen))
}

/// Whether a policy is `subnet`'s centralized gateway policy (the distributed
/// gateway's per-node policies also name the subnet, and their node).
fn centralized_of(subnet: &str) -> impl Fn(&LogicalRouterPolicy) -> bool + '_ {
    move |p| {
        p.priority == GATEWAY_ROUTER_POLICY_PRIORITY
            && owned_by(p, "subnet", subnet)
            && !p.external_ids.contains_key("node")
    }
}

/// Appends the removal of `subnet`'s centralized gateway policies on `router`.
pub fn delete_gateway_policies(
    txn: &mut NbTxn<'_>,
    router: &str,
    subnet: &str,
) -> Result<(), NbError> {
    sync_policies(txn, router, centralized_of(subnet), &[])
}

/// What [`reconcile_gateway`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayOutcome {
    /// NB operations sent.
    pub nb_ops: usize,
    /// Why the gateway was left as it was, if it was.
    pub problem: Option<GatewayProblem>,
    /// The `status.activateGateway` to write (None: leave it as it is).
    pub active: Option<Option<String>>,
}

/// Makes the cluster router's gateway policies of a valid Subnet in the default VPC
/// match its `gatewayType`; other VPCs and the join subnet have none.
pub async fn reconcile_gateway(
    ctx: &Context,
    subnet: &Subnet,
    valid: &ValidSubnet,
) -> Result<GatewayOutcome, SubnetError> {
    let router = &ctx.config.cluster_router;
    if &valid.vpc != router || valid.name == ctx.config.node_switch.name {
        return Ok(GatewayOutcome::default());
    }
    let current = subnet
        .status
        .as_ref()
        .and_then(|s| s.activate_gateway.as_deref());
    let (desired, active) = match subnet.spec.gateway_type {
        Some(GatewayType::Centralized) => {
            let nodes = Api::<Node>::all(ctx.client.clone())
                .list(&ListParams::default())
                .await
                .map_err(|source| SubnetError::List {
                    subnet: valid.name.clone(),
                    what: "nodes",
                    source,
                })?
                .items;
            let gateway_node = subnet.spec.gateway_node.as_deref().unwrap_or_default();
            let ecmp = subnet.spec.enable_ecmp.unwrap_or(false);
            match centralized_policies(valid, gateway_node, ecmp, current, &nodes) {
                Ok(found) => found,
                Err(problem) => {
                    tracing::warn!(subnet = %valid.name, %problem, "centralized gateway left as it was");
                    return Ok(GatewayOutcome {
                        problem: Some(problem),
                        ..GatewayOutcome::default()
                    });
                }
            }
        }
        _ => (Vec::new(), None),
    };
    let nb_err = |source| SubnetError::Nb {
        subnet: valid.name.clone(),
        source,
    };
    let mut txn = ctx.nb.txn();
    sync_policies(&mut txn, router, centralized_of(&valid.name), &desired).map_err(nb_err)?;
    let nb_ops = txn.ops().len();
    if nb_ops > 0 {
        ctx.nb.commit(txn).await.map_err(nb_err)?;
    }
    Ok(GatewayOutcome {
        nb_ops,
        problem: None,
        active: Some(active),
    })
}

/// The Subnets whose `gatewayNode` names `node`.
pub fn names_node(subnet: &Subnet, node: &str) -> bool {
    let spec = subnet.spec.gateway_node.as_deref().unwrap_or_default();
    parse_gateway_nodes(spec).is_ok_and(|nodes| nodes.iter().any(|n| n.name == node))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_node_entries_parse_with_or_without_an_egress_ip() {
        let nodes = parse_gateway_nodes(" n1, n2:172.18.0.3,,n3:fd00::3 ").unwrap();
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["n1", "n2", "n3"]);
        assert_eq!(nodes[0].egress_ip, None);
        assert_eq!(nodes[1].egress_ip, Some("172.18.0.3".parse().unwrap()));
        assert_eq!(nodes[2].egress_ip, Some("fd00::3".parse().unwrap()));
        assert_eq!(parse_gateway_nodes("").unwrap(), []);
    }

    #[test]
    fn malformed_gateway_node_entries_are_named() {
        for (spec, entry) in [("n1,:10.0.0.1", ":10.0.0.1"), ("n1:nope", "n1:nope")] {
            let err = parse_gateway_nodes(spec).unwrap_err();
            assert!(
                matches!(&err, GatewayProblem::Malformed { entry: e, .. } if e == entry),
                "{err}"
            );
            assert!(err.to_string().contains(entry), "{err}");
        }
    }
}
