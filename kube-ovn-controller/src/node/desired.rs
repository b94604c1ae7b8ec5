//! The northbound rows of a node, as desired state (a second run on an unchanged
//! database appends nothing), and their removal:
//!
//! * `Logical_Switch_Port{name=node-<node>}` on the join switch, `addresses`
//!   `"<mac> <ip4> [<ip6>]"` (Kube-OVN's `CreateBareLogicalSwitchPort`), `external_ids`
//!   `vendor=kube-ovn`, `node=<node>`;
//! * on the cluster router, per family the node has an internal address of, the
//!   policy at [`NODE_ROUTER_POLICY_PRIORITY`] `ip4.dst == <node internal IP>` reroute
//!   `<join IP>`, `external_ids` `vendor`, `node`, `address-family` (Kube-OVN's
//!   `addNodeGatewayStaticRoute` successor in `handleAddNode`): pods reach the node
//!   through its `ovn0`, and the replies come back the same way;
//! * the distributed gateway's port groups and policies ([`super::distributed`]).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipam::{Allocation, Mac};
use ovn_nb::{LogicalSwitchPort, NbError, NbTxn, PolicySpec};

use super::distributed::{write_distributed, DistributedSubnet};
use super::policies::{
    owned_by, reroute, router_policies, sync_policies, GATEWAY_ROUTER_POLICY_PRIORITY,
    NODE_ROUTER_POLICY_PRIORITY,
};
use crate::bootstrap::VENDOR;
use kube_ovn_api::annotations::IpPair;
use kube_ovn_api::naming;

/// What a node's rows are made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRows {
    /// The node.
    pub node: String,
    /// The join switch.
    pub join_switch: String,
    /// The cluster router.
    pub router: String,
    /// The join addresses and MAC.
    pub join: Allocation,
    /// The node's `InternalIP` addresses.
    pub internal: IpPair,
    /// The Subnets whose pods leave through their own node.
    pub distributed: Vec<DistributedSubnet>,
}

/// `external_ids` of a node's port.
pub fn port_external_ids(node: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("vendor".to_string(), VENDOR.to_string()),
        ("node".to_string(), node.to_string()),
    ])
}

/// The port's `addresses`: `"<mac> <ip4> <ip6>"`, or just the IPs without a MAC.
pub fn port_addresses(join: &Allocation) -> BTreeSet<String> {
    let words: Vec<String> = join
        .mac
        .iter()
        .map(Mac::to_string)
        .chain(join.addresses().map(|a| a.to_string()))
        .collect();
    BTreeSet::from([words.join(" ")])
}

/// The node's reroute policies, one per family with both a join and an internal IP.
pub fn node_policies(rows: &NodeRows) -> Vec<PolicySpec> {
    let pairs = [
        (
            rows.internal.v4.map(IpAddr::V4),
            rows.join.v4.map(IpAddr::V4),
            4,
        ),
        (
            rows.internal.v6.map(IpAddr::V6),
            rows.join.v6.map(IpAddr::V6),
            6,
        ),
    ];
    pairs
        .into_iter()
        .filter_map(|(internal, join, af)| {
            let (internal, join) = (internal?, join?);
            let ids = BTreeMap::from([
                ("node".to_string(), rows.node.clone()),
                ("address-family".to_string(), af.to_string()),
            ]);
            Some(reroute(
                NODE_ROUTER_POLICY_PRIORITY,
                format!("ip{af}.dst == {internal}"),
                [join.to_string()],
                ids,
            ))
        })
        .collect()
}

fn node_policy(node: &str) -> impl Fn(&ovn_nb::LogicalRouterPolicy) -> bool + '_ {
    move |p| p.priority == NODE_ROUTER_POLICY_PRIORITY && owned_by(p, "node", node)
}

/// Appends the operations making the node's port and policies look as desired.
pub fn write_node(txn: &mut NbTxn<'_>, rows: &NodeRows) -> Result<(), NbError> {
    let name = naming::node_port_name(&rows.node);
    let addresses = port_addresses(&rows.join);
    let external_ids = port_external_ids(&rows.node);
    match txn
        .store()
        .by_name::<LogicalSwitchPort>(&name)?
        .into_iter()
        .next()
    {
        None => {
            let port = LogicalSwitchPort {
                name: name.clone(),
                addresses,
                external_ids,
                ..Default::default()
            };
            txn.lsp_add_row(&rows.join_switch, port)?;
        }
        Some(port) => {
            if port.addresses != addresses {
                txn.lsp_set_addresses(&name, addresses)?;
            }
            if external_ids
                .iter()
                .any(|(k, v)| port.external_ids.get(k) != Some(v))
            {
                txn.lsp_set_external_ids(&name, external_ids)?;
            }
        }
    }
    sync_policies(
        txn,
        &rows.router,
        node_policy(&rows.node),
        &node_policies(rows),
    )?;
    write_distributed(txn, &rows.router, &rows.node, &rows.join, &rows.distributed)
}

/// Appends the operations dropping `node`'s next hop from the centralized gateway
/// policies that name it (`external_ids:<node>=<join IP>`, Kube-OVN's way of finding
/// them on node deletion); a policy left with no next hop is removed.
fn drop_gateway_hops(txn: &mut NbTxn<'_>, node: &str, router: &str) -> Result<(), NbError> {
    for policy in router_policies(txn.store(), router)? {
        let is_gateway = policy.priority == GATEWAY_ROUTER_POLICY_PRIORITY
            && policy.external_ids.get("vendor").map(String::as_str) == Some(VENDOR)
            && policy.external_ids.contains_key("subnet")
            && !policy.external_ids.contains_key("node");
        let Some(hop) = policy.external_ids.get(node).filter(|_| is_gateway) else {
            continue;
        };
        let mut nexthops = policy.nexthops.clone();
        nexthops.remove(hop);
        if nexthops.is_empty() {
            txn.lr_policy_del(router, Some(policy.priority), Some(&policy.r#match))?;
            continue;
        }
        let mut ids = policy.external_ids.clone();
        ids.remove(node);
        txn.set(policy.id, ovn_nb::LogicalRouterPolicy::NEXTHOPS, nexthops);
        txn.set(policy.id, ovn_nb::LogicalRouterPolicy::EXTERNAL_IDS, ids);
    }
    Ok(())
}

/// Appends the operations removing the node's port (only if it is kube-ovn's), its
/// policies on `router`, and its next hop in centralized gateway policies.
pub fn delete_node(txn: &mut NbTxn<'_>, node: &str, router: &str) -> Result<(), NbError> {
    let name = naming::node_port_name(node);
    if let Some(port) = txn
        .store()
        .by_name::<LogicalSwitchPort>(&name)?
        .into_iter()
        .next()
    {
        if port.external_ids.get("vendor").map(String::as_str) == Some(VENDOR) {
            txn.if_exists().lsp_del(&name)?;
        }
    }
    sync_policies(txn, router, node_policy(node), &[])?;
    write_distributed(txn, router, node, &Allocation::default(), &[])?;
    drop_gateway_hops(txn, node, router)
}
