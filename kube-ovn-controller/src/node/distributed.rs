//! The distributed gateway (Kube-OVN's `createPortGroupForDistributedSubnet` and
//! `addPolicyRouteForDistributedSubnet`): for every overlay Subnet of the default VPC
//! whose `gatewayType` is not centralized, each node gets the port group
//! `<subnet>.<node>` (the pod reconciler puts the subnet's pods on that node in it;
//! `external_ids` `vendor`, `subnet`, `node`, `np=<subnet>/<node>`) and, per family
//! of the subnet's CIDR, the policy at [`GATEWAY_ROUTER_POLICY_PRIORITY`]
//! `ip4.src == $<group>_ip4` reroute to the node's join IP (`external_ids` `vendor`,
//! `subnet`, `node`): pods leave the cluster through their own node.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipam::Allocation;
use ovn_nb::{LogicalRouterPolicy, NbError, NbTxn, PolicySpec, PortGroup};

use super::policies::{owned_by, reroute, sync_policies, GATEWAY_ROUTER_POLICY_PRIORITY};
use crate::bootstrap::VENDOR;
use kube_ovn_api::annotations::CidrPair;
use kube_ovn_api::naming::distributed_port_group_name;

/// A Subnet whose pods leave through their own node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistributedSubnet {
    /// The Subnet.
    pub name: String,
    /// Its CIDRs.
    pub cidr: CidrPair,
}

fn group_external_ids(subnet: &str, node: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("vendor".to_string(), VENDOR.to_string()),
        ("subnet".to_string(), subnet.to_string()),
        ("node".to_string(), node.to_string()),
        ("np".to_string(), format!("{subnet}/{node}")),
    ])
}

/// Whether a row's `external_ids` make it `node`'s distributed-gateway row.
fn is_nodes(ids: &BTreeMap<String, String>, node: &str) -> bool {
    ids.get("vendor").map(String::as_str) == Some(VENDOR)
        && ids.get("node").map(String::as_str) == Some(node)
        && ids.contains_key("subnet")
}

fn node_gateway_policy(node: &str) -> impl Fn(&LogicalRouterPolicy) -> bool + '_ {
    move |p| {
        p.priority == GATEWAY_ROUTER_POLICY_PRIORITY
            && owned_by(p, "node", node)
            && p.external_ids.contains_key("subnet")
    }
}

/// The node's distributed-gateway policies.
pub fn distributed_policies(
    node: &str,
    join: &Allocation,
    subnets: &[DistributedSubnet],
) -> Vec<PolicySpec> {
    let mut policies = Vec::new();
    for subnet in subnets {
        let group = distributed_port_group_name(&subnet.name, node);
        let families = [
            (subnet.cidr.v4.is_some(), join.v4.map(IpAddr::V4), 4),
            (subnet.cidr.v6.is_some(), join.v6.map(IpAddr::V6), 6),
        ];
        for (has_cidr, hop, af) in families {
            let (true, Some(hop)) = (has_cidr, hop) else {
                continue;
            };
            let ids = BTreeMap::from([
                ("subnet".to_string(), subnet.name.clone()),
                ("node".to_string(), node.to_string()),
            ]);
            policies.push(reroute(
                GATEWAY_ROUTER_POLICY_PRIORITY,
                format!("ip{af}.src == ${group}_ip{af}"),
                [hop.to_string()],
                ids,
            ));
        }
    }
    policies
}

/// Appends the operations leaving `node` with exactly the port groups and policies of
/// `subnets` (none: everything of the node's removed).
pub fn write_distributed(
    txn: &mut NbTxn<'_>,
    router: &str,
    node: &str,
    join: &Allocation,
    subnets: &[DistributedSubnet],
) -> Result<(), NbError> {
    // policies first: a removed group's address sets are still named by them
    let desired = distributed_policies(node, join, subnets);
    sync_policies(txn, router, node_gateway_policy(node), &desired)?;
    let wanted: Vec<(String, BTreeMap<String, String>)> = subnets
        .iter()
        .map(|s| {
            let name = distributed_port_group_name(&s.name, node);
            (name, group_external_ids(&s.name, node))
        })
        .collect();
    let existing = txn
        .store()
        .filter::<PortGroup>(|pg| is_nodes(&pg.external_ids, node))?;
    for stale in existing
        .iter()
        .filter(|pg| !wanted.iter().any(|(name, _)| *name == pg.name))
    {
        txn.if_exists().pg_del(&stale.name)?;
    }
    for (name, ids) in wanted {
        match txn.store().by_name::<PortGroup>(&name)?.into_iter().next() {
            Some(pg) if pg.external_ids == ids => {}
            Some(pg) => {
                txn.set(pg.id, PortGroup::EXTERNAL_IDS, ids);
            }
            None => {
                let id = txn.pg_add(&name, &[])?;
                txn.set(id, PortGroup::EXTERNAL_IDS, ids);
            }
        }
    }
    Ok(())
}
