//! A policy's northbound rows, written as desired state (a second pass over an
//! unchanged database appends no operation):
//! * [`write_policy`] (on a policy change): the port group `<np>.<ns>`
//!   (`external_ids` `np=<ns>/<name>`, `vendor`), its address sets (`np=<ns>/<name>/<direction>`)
//!   and its ACLs, replaced only when the rendered set differs;
//! * [`write_members`] (on any pod or namespace change): the port group's ports and
//!   the address sets' addresses;
//! * [`remove_stale`]: the rows of policies that are gone or no longer valid.

use std::collections::{BTreeMap, BTreeSet};

use ovn_nb::{Acl, AclSpec, AclTarget, AddressSet, LogicalSwitchPort, NbError, NbTxn, PortGroup};
use ovsdb::typed::Stored;

use super::acl::RenderedAcls;
use super::names::{self, Direction, Family, NP_KEY};
use super::selection::Snapshot;
use super::validate::{Peer, ValidPolicy};
use crate::controller::bootstrap::VENDOR;

fn ids(pairs: [(&str, String); 2]) -> BTreeMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Every address set a policy wants, with its `np` external id and, for except
/// sets, its (static) addresses.
pub fn wanted_sets(
    policy: &ValidPolicy,
    families: &[Family],
) -> BTreeMap<String, (String, Option<BTreeSet<String>>)> {
    let (ns, name) = (policy.namespace.as_str(), policy.name.as_str());
    let pg = names::port_group(ns, name);
    let mut sets = BTreeMap::new();
    for direction in [Direction::Ingress, Direction::Egress] {
        let key = names::address_set_key(ns, name, direction);
        for (index, rule) in policy
            .rules(direction)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            for &family in families {
                let allow = names::address_set(&pg, direction, false, family, index);
                sets.insert(allow, (key.clone(), None));
                // Kube-OVN's except set: every ipBlock's excepts of the family (the
                // ACLs carry each ipBlock's own excepts inline)
                let excepts: BTreeSet<String> = rule
                    .peers
                    .iter()
                    .filter_map(|p| match p {
                        Peer::Block { except, .. } => Some(except),
                        Peer::Pods { .. } => None,
                    })
                    .flatten()
                    .filter(|e| Family::of(&e.addr()) == family)
                    .map(|e| e.trunc().to_string())
                    .collect();
                let except = names::address_set(&pg, direction, true, family, index);
                sets.insert(except, (key.clone(), Some(excepts)));
            }
        }
    }
    sets
}

/// The ACL fields that make two ACLs the same for us.
fn acl_key(
    a: &AclSpec,
) -> (
    String,
    i64,
    String,
    String,
    Option<String>,
    BTreeMap<String, String>,
) {
    (
        a.direction.to_string(),
        a.priority,
        a.r#match.clone(),
        a.action.to_string(),
        a.name.clone(),
        a.options.clone(),
    )
}

fn stored_key(
    a: &Acl,
) -> (
    String,
    i64,
    String,
    String,
    Option<String>,
    BTreeMap<String, String>,
) {
    (
        a.direction.to_string(),
        a.priority,
        a.r#match.clone(),
        a.action.to_string(),
        a.name.clone(),
        a.options.clone(),
    )
}

/// Makes the policy's port group, address sets and ACLs exist as rendered; returns
/// whether anything was appended.
pub fn write_policy(
    txn: &mut NbTxn<'_>,
    policy: &ValidPolicy,
    rendered: &RenderedAcls,
    families: &[Family],
) -> Result<(), NbError> {
    let (ns, name) = (policy.namespace.as_str(), policy.name.as_str());
    let pg = names::port_group(ns, name);
    let store = txn.store();
    let existing = store.by_name::<PortGroup>(&pg)?.into_iter().next();
    let pg_ids = ids([
        (NP_KEY, names::policy_key(ns, name)),
        ("vendor", VENDOR.to_string()),
    ]);
    let current_acls: BTreeSet<_> = match &existing {
        Some(row) => {
            if row.external_ids != pg_ids {
                txn.set(row.id, PortGroup::EXTERNAL_IDS, pg_ids);
            }
            row.acls
                .iter()
                .filter_map(|id| store.get(*id).ok().flatten())
                .map(|a: Acl| stored_key(&a))
                .collect()
        }
        None => {
            let id = txn.pg_add(&pg, &[])?;
            txn.set(id, PortGroup::EXTERNAL_IDS, pg_ids);
            BTreeSet::new()
        }
    };
    let wanted: BTreeSet<_> = rendered.acls.values().map(acl_key).collect();
    if wanted != current_acls {
        if existing.is_some() {
            txn.acl_del(&AclTarget::PortGroup(pg.clone()), None, None)?;
        }
        for a in rendered.acls.values() {
            txn.acl_add(&AclTarget::PortGroup(pg.clone()), a.clone())?;
        }
    }
    let wanted_sets = wanted_sets(policy, families);
    for (set, (key, fixed)) in &wanted_sets {
        let set_ids = ids([(NP_KEY, key.clone()), ("vendor", VENDOR.to_string())]);
        match store.by_name::<AddressSet>(set)?.into_iter().next() {
            Some(row) => {
                if row.external_ids != set_ids {
                    txn.set(row.id, AddressSet::EXTERNAL_IDS, set_ids);
                }
                if let Some(fixed) = fixed.as_ref().filter(|f| **f != row.addresses) {
                    txn.set(row.id, AddressSet::ADDRESSES, fixed.clone());
                }
            }
            None => {
                let id = txn.address_set_add(set, fixed.clone().unwrap_or_default())?;
                txn.set(id, AddressSet::EXTERNAL_IDS, set_ids);
            }
        }
    }
    // address sets of rules the policy no longer has
    for row in owned_sets(txn, ns, name)? {
        if !wanted_sets.contains_key(&row.name) {
            txn.if_exists().address_set_del(&row.name)?;
        }
    }
    Ok(())
}

/// The address sets whose `np` key names the policy.
fn owned_sets(txn: &NbTxn<'_>, ns: &str, name: &str) -> Result<Vec<Stored<AddressSet>>, NbError> {
    let prefix = format!("{}/", names::policy_key(ns, name));
    Ok(txn
        .store()
        .rows::<AddressSet>()?
        .into_iter()
        .filter(|r| {
            r.external_ids
                .get(NP_KEY)
                .is_some_and(|k| k.starts_with(&prefix))
        })
        .collect())
}

/// Sets the port group's ports and the allow sets' addresses from the snapshot
/// (only those that differ). Pods whose logical switch port is not in NB yet are
/// left out until it is.
pub fn write_members(
    txn: &mut NbTxn<'_>,
    policy: &ValidPolicy,
    snapshot: &Snapshot,
    families: &[Family],
) -> Result<(), NbError> {
    let (ns, name) = (policy.namespace.as_str(), policy.name.as_str());
    let pg = names::port_group(ns, name);
    let store = txn.store();
    let Some(group) = store.by_name::<PortGroup>(&pg)?.into_iter().next() else {
        return Ok(()); // written by the policy pass, in the same transaction
    };
    let mut ports = BTreeSet::new();
    for pod in snapshot.selected(policy) {
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
    for direction in [Direction::Ingress, Direction::Egress] {
        for (index, rule) in policy
            .rules(direction)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            for &family in families {
                let set = names::address_set(&pg, direction, false, family, index);
                let Some(row) = store.by_name::<AddressSet>(&set)?.into_iter().next() else {
                    continue;
                };
                let wanted: BTreeSet<String> = if rule.peers.is_empty() {
                    let all = match family {
                        Family::V4 => "0.0.0.0/0",
                        Family::V6 => "::/0",
                    };
                    BTreeSet::from([all.to_string()])
                } else {
                    snapshot.rule_addresses(ns, rule, family)
                };
                if wanted != row.addresses {
                    txn.set(row.id, AddressSet::ADDRESSES, wanted);
                }
            }
        }
    }
    Ok(())
}

/// Removes the port groups (their ACLs go with them) and address sets of policies
/// not in `keep` (`<ns>/<name>` keys).
pub fn remove_stale(txn: &mut NbTxn<'_>, keep: &BTreeSet<String>) -> Result<(), NbError> {
    let store = txn.store();
    let ours =
        |ids: &BTreeMap<String, String>| ids.get("vendor").map(String::as_str) == Some(VENDOR);
    for group in store.rows::<PortGroup>()? {
        let Some(key) = group.external_ids.get(NP_KEY) else {
            continue;
        };
        // node.<node> and <subnet>.<node> groups carry np keys too: a policy's group
        // is the one named after its key
        let Some((ns, name)) = key.split_once('/') else {
            continue;
        };
        if ours(&group.external_ids)
            && group.name == names::port_group(ns, name)
            && !keep.contains(key)
        {
            txn.if_exists().pg_del(&group.name)?;
        }
    }
    for set in store.rows::<AddressSet>()? {
        let Some(key) = set.external_ids.get(NP_KEY) else {
            continue;
        };
        let policy = key.rsplit_once('/').map(|(p, _)| p).unwrap_or_default();
        if ours(&set.external_ids) && key.matches('/').count() == 2 && !keep.contains(policy) {
            txn.if_exists().address_set_del(&set.name)?;
        }
    }
    Ok(())
}
