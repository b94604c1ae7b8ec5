//! A Subnet's ACLs on its logical switch, as Kube-OVN writes them (`handleAddOrUpdateSubnet`
//! then `SetLogicalSwitchPrivate` and `UpdateLogicalSwitchACL`, `pkg/ovs/ovn-nb-acl.go`).
//! The switch's ACLs are the Subnet's alone: Kube-OVN clears them all before writing.
//!
//! * `private: true` (to-lport): `ip` drop at 1000 (named after the switch, logged at
//!   `warning`); per CIDR family the subnet's own traffic `ip4.src == C && ip4.dst == C`
//!   allow-related at 1001, the node (join) CIDR `ip4.src == N` allow-related at 3000,
//!   and each `allowSubnets` entry `(ip4.src == C && ip4.dst == A) || (ip4.src == A &&
//!   ip4.dst == C)` allow-related at 1001;
//! * with `spec.acls`: `allowEWTraffic` adds `ip4.src == C && ip4.dst == C` allow at
//!   1900 both ways, then each entry as given; these carry `external_ids:subnet`.
//!
//! Every ACL carries `external_ids` `parent=<switch>` and `vendor=kube-ovn`. (Kube-OVN
//! also sets `tier=2`; OVN 23.03's schema has no `tier` column.) Writing is desired
//! state: ACLs already right are kept, the rest replaced, in one transaction; nothing
//! is sent when all are right. A spec that cannot be realized writes nothing at all,
//! so the ACLs in place stay.

use std::collections::BTreeMap;

use ipnet::IpNet;
use ovn_nb::ovsdb::typed::{self, Table};
use ovn_nb::{Acl, AclAction, AclDirection, AclSeverity, LogicalSwitch};

use super::reconcile::SubnetError;
use super::validate::ValidSubnet;
use crate::bootstrap::VENDOR;
use crate::Context;
use kube_ovn_api::annotations::CidrPair;
use kube_ovn_api::crd::Subnet;

/// `util.DefaultDropPriority`.
pub const DEFAULT_DROP_PRIORITY: i64 = 1000;
/// `util.SubnetAllowPriority` (same subnet, and `allowSubnets`).
pub const SUBNET_ALLOW_PRIORITY: i64 = 1001;
/// `util.AllowEWTrafficPriority`.
pub const ALLOW_EW_TRAFFIC_PRIORITY: i64 = 1900;
/// `util.NodeAllowPriority`.
pub const NODE_ALLOW_PRIORITY: i64 = 3000;

/// A Subnet field the ACLs cannot be built from; nothing is written for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("subnet {subnet}: {field}: {reason}")]
pub struct AclInvalid {
    /// The Subnet.
    pub subnet: String,
    /// Path of the offending field, e.g. `spec.acls[2].priority`.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

fn family(net: &IpNet) -> &'static str {
    match net {
        IpNet::V4(_) => "ip4",
        IpNet::V6(_) => "ip6",
    }
}

/// ACL names are limited to 63 characters (Kube-OVN's `setACLName`).
fn acl_name(name: &str) -> String {
    if name.len() > 63 {
        format!("{}...", &name[..60])
    } else {
        name.to_string()
    }
}

fn acl(ls: &str, direction: AclDirection, priority: i64, m: String, action: AclAction) -> Acl {
    Acl {
        direction,
        priority,
        r#match: m,
        action,
        external_ids: BTreeMap::from([
            ("parent".to_string(), ls.to_string()),
            ("vendor".to_string(), VENDOR.to_string()),
        ]),
        ..Default::default()
    }
}

fn same_subnet(net: &IpNet) -> String {
    let ip = family(net);
    format!("{ip}.src == {net} && {ip}.dst == {net}")
}

fn private_acls(
    subnet: &Subnet,
    valid: &ValidSubnet,
    node_cidr: &CidrPair,
) -> Result<Vec<Acl>, AclInvalid> {
    let ls = valid.name.as_str();
    let mut allow = Vec::new();
    for (i, raw) in subnet.spec.allow_subnets.iter().enumerate() {
        let text = raw.trim();
        if text.is_empty() {
            continue;
        }
        let net: IpNet = text.parse().map_err(|_| AclInvalid {
            subnet: ls.to_string(),
            field: format!("spec.allowSubnets[{i}]"),
            reason: format!("{text:?} is not a CIDR"),
        })?;
        allow.push((text.to_string(), net));
    }
    let mut drop = acl(
        ls,
        AclDirection::ToLport,
        DEFAULT_DROP_PRIORITY,
        "ip".into(),
        AclAction::Drop,
    );
    drop.name = Some(acl_name(ls));
    drop.log = true;
    drop.severity = Some(AclSeverity::Warning);
    let mut out = vec![drop];
    for net in valid.cidr.nets() {
        let ip = family(&net);
        let to = |p, m| acl(ls, AclDirection::ToLport, p, m, AclAction::AllowRelated);
        out.push(to(SUBNET_ALLOW_PRIORITY, same_subnet(&net)));
        for node in node_cidr.nets().iter().filter(|n| family(n) == ip) {
            out.push(to(NODE_ALLOW_PRIORITY, format!("{ip}.src == {node}")));
        }
        for (text, _) in allow.iter().filter(|(_, a)| family(a) == ip) {
            let m = format!(
                "({ip}.src == {net} && {ip}.dst == {text}) || ({ip}.src == {text} && {ip}.dst == {net})"
            );
            out.push(to(SUBNET_ALLOW_PRIORITY, m));
        }
    }
    Ok(out)
}

fn spec_acls(subnet: &Subnet, valid: &ValidSubnet) -> Result<Vec<Acl>, AclInvalid> {
    let ls = valid.name.as_str();
    let invalid = |i: usize, field: &str, reason: &str| AclInvalid {
        subnet: ls.to_string(),
        field: format!("spec.acls[{i}].{field}"),
        reason: reason.to_string(),
    };
    let mut out = Vec::new();
    if subnet.spec.acls.is_empty() {
        return Ok(out);
    }
    if subnet.spec.allow_ew_traffic == Some(true) {
        for net in valid.cidr.nets() {
            for direction in [AclDirection::ToLport, AclDirection::FromLport] {
                let m = same_subnet(&net);
                out.push(acl(
                    ls,
                    direction,
                    ALLOW_EW_TRAFFIC_PRIORITY,
                    m,
                    AclAction::Allow,
                ));
            }
        }
    }
    for (i, entry) in subnet.spec.acls.iter().enumerate() {
        let direction = entry.direction.as_ref().filter(|d| d.is_known());
        let direction =
            direction.ok_or_else(|| invalid(i, "direction", "must be from-lport or to-lport"))?;
        let priority = entry.priority.filter(|p| (0..=32767).contains(p));
        let priority = priority.ok_or_else(|| invalid(i, "priority", "must be in 0..=32767"))?;
        let m = entry.match_.clone().filter(|m| !m.trim().is_empty());
        let m = m.ok_or_else(|| invalid(i, "match", "is required"))?;
        let action = entry.action.as_ref().filter(|a| a.is_known());
        let action = action.ok_or_else(|| invalid(i, "action", "is not an ACL action"))?;
        out.push(acl(
            ls,
            AclDirection::from(direction.as_str()),
            priority,
            m,
            AclAction::from(action.as_str()),
        ));
    }
    for a in &mut out {
        a.external_ids.insert("subnet".to_string(), ls.to_string());
    }
    Ok(out)
}

/// The ACLs `subnet`'s switch should hold, each (direction, priority, match) once.
pub fn desired_acls(
    subnet: &Subnet,
    valid: &ValidSubnet,
    node_cidr: &CidrPair,
) -> Result<Vec<Acl>, AclInvalid> {
    let mut all = Vec::new();
    if subnet.spec.private == Some(true) {
        all.extend(private_acls(subnet, valid, node_cidr)?);
    }
    all.extend(spec_acls(subnet, valid)?);
    let mut seen = std::collections::BTreeSet::new();
    all.retain(|a| {
        seen.insert((
            a.direction.as_str().to_string(),
            a.priority,
            a.r#match.clone(),
        ))
    });
    Ok(all)
}

/// Makes the subnet's switch hold exactly its ACLs; operations sent. An unrealizable
/// spec is logged and writes nothing.
pub async fn write_acls(
    ctx: &Context,
    subnet: &Subnet,
    valid: &ValidSubnet,
) -> Result<usize, SubnetError> {
    let wanted = match desired_acls(subnet, valid, &ctx.config.node_switch.cidr) {
        Ok(wanted) => wanted,
        Err(invalid) => {
            tracing::warn!(%invalid, "subnet ACLs not written; the ACLs in place are kept");
            return Ok(0);
        }
    };
    let nb_err = |source| SubnetError::Nb {
        subnet: valid.name.clone(),
        source,
    };
    let Some(switch) = ctx
        .nb
        .by_name::<LogicalSwitch>(&valid.name)
        .map_err(nb_err)?
    else {
        return Ok(0);
    };
    let mut existing = Vec::new();
    for id in &switch.row.acls {
        if let Some(row) = ctx.nb.store().get(*id).map_err(|e| nb_err(e.into()))? {
            existing.push((*id, row));
        }
    }
    let stale: Vec<_> = existing
        .iter()
        .filter(|(_, row)| !wanted.contains(row))
        .map(|(id, _)| *id)
        .collect();
    let missing: Vec<&Acl> = wanted
        .iter()
        .filter(|w| !existing.iter().any(|(_, row)| row == *w))
        .collect();
    if stale.is_empty() && missing.is_empty() {
        return Ok(0);
    }
    let mut txn = ctx.nb.txn();
    let mut added = Vec::new();
    for row in missing {
        let insert = typed::insert(row);
        added.push(insert.id());
        txn.push(insert);
    }
    let mut mutations = Vec::new();
    if !stale.is_empty() {
        mutations.push(LogicalSwitch::ACLS.delete(stale));
    }
    if !added.is_empty() {
        txn.guard_exists(switch.id);
        mutations.push(LogicalSwitch::ACLS.insert(added));
    }
    txn.push(typed::mutate(LogicalSwitch::ROW_UUID_COLUMN.eq(switch.id)).with(mutations));
    let ops = txn.ops().len();
    ctx.nb.commit(txn).await.map_err(nb_err)?;
    Ok(ops)
}
