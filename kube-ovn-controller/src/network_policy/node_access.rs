//! Node access through NetworkPolicies (Kube-OVN's `node.<node>` port groups and
//! `CreateNodeACL`): a node must still reach its own pods when a policy isolates them,
//! or kubelet's probes fail and every isolated pod turns unready.
//!
//! While at least one valid NetworkPolicy exists, each node with a known address gets
//! the port group `node.<node>` (every `-` made `.`; `external_ids` `node`,
//! `np=node/<node>`, `vendor`) holding the ports of the pods scheduled on it, and per
//! node address at priority 3000 (above every policy's 2000 drop and 2001 allows)
//! `allow-related`:
//! * to-lport `ip4.src == <node ip> && ip4.dst == $node.<node>_ip4`;
//! * from-lport `ip4.dst == <node ip> && ip4.src == $node.<node>_ip4`, applied after
//!   the load balancer as the policies' egress ACLs are.
//!
//! A node's addresses are its join address (`ovn.kubernetes.io/ip_address`, what the
//! host's routes through `ovn0` take as source) and its `InternalIP`s (what Kube-OVN
//! writes since it routes with the node address as source): both are the node's own,
//! so either source passes. With no policy left the groups and their ACLs go: Kube-OVN
//! clears the ACLs then too, and without any `allow-related` ACL the switches stay
//! stateless, as they were before the first policy.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Node;
use ovn_nb::PortGroup;
use ovn_nb::{AclAction, AclDirection, AclSpec, LogicalSwitchPort, NbError, NbTxn};

use super::names::{Family, NODE_ALLOW_PRIORITY, NP_KEY, PARENT_KEY};
use super::selection::Snapshot;
use crate::bootstrap::VENDOR;
use crate::node::internal_ips;
use kube_ovn_api::annotations::NodeAnnotations;

/// `external_ids` key naming the node a `node.<node>` group is for.
const NODE_KEY: &str = "node";

/// A node as node access needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    /// The node's name.
    pub name: String,
    /// Its join and internal addresses, without repeats.
    pub ips: BTreeSet<IpAddr>,
}

impl NodeView {
    /// The node's view; its address list is empty until the controller has given it a
    /// join address and it reports no `InternalIP`.
    pub fn of(node: &Node) -> Option<NodeView> {
        let name = node.metadata.name.clone()?;
        let annotations = node.metadata.annotations.clone().unwrap_or_default();
        let (parsed, _) = NodeAnnotations::parse_lenient(&annotations);
        let mut ips: BTreeSet<IpAddr> = parsed
            .ip_address
            .map(|p| p.addrs())
            .unwrap_or_default()
            .into_iter()
            .collect();
        ips.extend(internal_ips(node).addrs());
        Some(NodeView { name, ips })
    }
}

/// The port group of the pods on `node`: `node.<node>` with every `-` made `.`
/// (Kube-OVN's name: its join port `node-<node>` with the dashes replaced).
pub fn node_port_group(node: &str) -> String {
    format!("node-{node}").replace('-', ".")
}

fn group_ids(node: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NODE_KEY.to_string(), node.to_string()),
        (NP_KEY.to_string(), format!("node/{node}")),
        ("vendor".to_string(), VENDOR.to_string()),
    ])
}

/// The node access ACLs of `node` on its group, for the families in use.
pub fn node_acls(node: &NodeView, families: &[Family]) -> Vec<AclSpec> {
    let pg = node_port_group(&node.name);
    let mut acls = Vec::new();
    for ip in &node.ips {
        let family = Family::of(ip);
        if !families.contains(&family) {
            continue;
        }
        let af = family.field();
        let set = format!("${pg}_{af}");
        let ids = BTreeMap::from([
            (PARENT_KEY.to_string(), pg.clone()),
            ("vendor".to_string(), VENDOR.to_string()),
        ]);
        acls.push(AclSpec {
            direction: AclDirection::ToLport,
            priority: NODE_ALLOW_PRIORITY,
            r#match: format!("{af}.src == {ip} && {af}.dst == {set}"),
            action: AclAction::AllowRelated,
            external_ids: ids.clone(),
            ..Default::default()
        });
        acls.push(AclSpec {
            direction: AclDirection::FromLport,
            priority: NODE_ALLOW_PRIORITY,
            r#match: format!("{af}.dst == {ip} && {af}.src == {set}"),
            action: AclAction::AllowRelated,
            options: BTreeMap::from([("apply-after-lb".to_string(), "true".to_string())]),
            external_ids: ids,
            ..Default::default()
        });
    }
    acls
}

/// Whether a port group is a node access group the controller wrote, and for which node.
fn node_of_group(group: &PortGroup) -> Option<&str> {
    let node = group.external_ids.get(NODE_KEY)?;
    let ours = group.external_ids.get("vendor").map(String::as_str) == Some(VENDOR)
        && group.external_ids.get(NP_KEY) == Some(&format!("node/{node}"))
        && group.name == node_port_group(node);
    ours.then_some(node.as_str())
}

/// The groups wanted: with `enabled` (some valid policy exists), one per node with an
/// address.
fn wanted_groups(nodes: &[NodeView], enabled: bool) -> BTreeMap<String, &NodeView> {
    if !enabled {
        return BTreeMap::new();
    }
    nodes
        .iter()
        .filter(|n| !n.ips.is_empty())
        .map(|n| (node_port_group(&n.name), n))
        .collect()
}

/// The groups' rows: with `enabled`, a group per node with an address (its members
/// come with [`write_node_members`], its ACLs with [`write_node_acls`]).
pub fn write_node_groups(
    txn: &mut NbTxn<'_>,
    nodes: &[NodeView],
    enabled: bool,
) -> Result<(), NbError> {
    let store = txn.store();
    for (pg, node) in wanted_groups(nodes, enabled) {
        let ids = group_ids(&node.name);
        match store.by_name::<PortGroup>(&pg)?.into_iter().next() {
            Some(row) if row.external_ids == ids => {}
            Some(row) => {
                txn.set(row.id, PortGroup::EXTERNAL_IDS, ids);
            }
            None => {
                let id = txn.pg_add(&pg, &[])?;
                txn.set(id, PortGroup::EXTERNAL_IDS, ids);
            }
        }
    }
    Ok(())
}

/// The groups' ACLs; the groups of other nodes, or all of them without `enabled`,
/// removed (their ACLs go with them).
pub fn write_node_acls(
    txn: &mut NbTxn<'_>,
    nodes: &[NodeView],
    families: &[Family],
    enabled: bool,
) -> Result<(), NbError> {
    let wanted = wanted_groups(nodes, enabled);
    let store = txn.store();
    for group in store.rows::<PortGroup>()? {
        if node_of_group(&group).is_some() && !wanted.contains_key(&group.name) {
            txn.if_exists().pg_del(&group.name)?;
        }
    }
    for (pg, node) in wanted {
        // a group written by write_node_groups and not in the replica yet waits
        super::rows::write_group_acls(txn, &pg, &node_acls(node, families))?;
    }
    Ok(())
}

/// The membership level: each node group holds the ports of the pods on its node
/// (pods whose port is not in NB yet are left out until it is).
pub fn write_node_members(txn: &mut NbTxn<'_>, snapshot: &Snapshot) -> Result<(), NbError> {
    let store = txn.store();
    for group in store.rows::<PortGroup>()? {
        let Some(node) = node_of_group(&group) else {
            continue;
        };
        let mut ports = BTreeSet::new();
        for pod in snapshot
            .pods
            .iter()
            .filter(|p| p.node.as_deref() == Some(node))
        {
            if let Some(lsp) = store
                .by_name::<LogicalSwitchPort>(&pod.port)?
                .into_iter()
                .next()
            {
                ports.insert(lsp.id);
            }
        }
        if ports != group.ports {
            txn.set(group.id, PortGroup::PORTS, ports);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_names_follow_kube_ovn() {
        assert_eq!(node_port_group("kube-ovn-worker"), "node.kube.ovn.worker");
        assert_eq!(node_port_group("n1"), "node.n1");
    }

    #[test]
    fn acls_per_address_and_family_in_use() {
        let node = NodeView {
            name: "w-1".into(),
            ips: ["100.64.0.2", "172.18.0.3", "fd00::2"]
                .iter()
                .map(|s| s.parse().unwrap())
                .collect(),
        };
        let acls = node_acls(&node, &[Family::V4]);
        let matches: Vec<(String, &str)> = acls
            .iter()
            .map(|a| (a.direction.to_string(), a.r#match.as_str()))
            .collect();
        assert_eq!(
            matches,
            [
                (
                    "to-lport".to_string(),
                    "ip4.src == 100.64.0.2 && ip4.dst == $node.w.1_ip4"
                ),
                (
                    "from-lport".to_string(),
                    "ip4.dst == 100.64.0.2 && ip4.src == $node.w.1_ip4"
                ),
                (
                    "to-lport".to_string(),
                    "ip4.src == 172.18.0.3 && ip4.dst == $node.w.1_ip4"
                ),
                (
                    "from-lport".to_string(),
                    "ip4.dst == 172.18.0.3 && ip4.src == $node.w.1_ip4"
                ),
            ]
        );
        assert!(acls
            .iter()
            .all(|a| a.priority == 3000 && a.action == AclAction::AllowRelated));
        assert_eq!(node_acls(&node, &[Family::V4, Family::V6]).len(), 6);
    }
}
