//! A policy's northbound rows, written as desired state (a second pass over an
//! unchanged database appends no operation):
//! * [`write_policy`] (on a policy change): the port group `<np>.<ns>`
//!   (`external_ids` `np=<ns>/<name>`, `vendor`) and its address sets
//!   (`np=<ns>/<name>/<direction>`);
//! * [`write_policy_acls`]: its ACLs, replaced only when the rendered set differs;
//! * [`write_members`] (on any pod or namespace change): the port group's ports and
//!   the address sets' addresses;
//! * [`remove_stale`]: the rows of policies that are gone or no longer valid.

use std::collections::{BTreeMap, BTreeSet};

use ovn_nb::{
    Acl, AclDirection, AclSpec, AclTarget, AddressSet, LogicalSwitchPort, NbError, NbTxn, PortGroup,
};
use ovsdb::typed::Stored;

use super::acl::RenderedAcls;
use super::names::{
    self, address_set_id, policy_of_address_set_id, policy_of_id, Direction, Family, PolicyKey,
    NP_KEY,
};
use super::selection::Snapshot;
use super::validate::{Peer, ValidPolicy};
use crate::bootstrap::VENDOR;

fn ids(pairs: [(&str, String); 2]) -> BTreeMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Every address set a policy wants, with its `np` external id and, for except
/// sets and the always empty `.all` sets, its (static) addresses.
pub fn wanted_sets(
    policy: &ValidPolicy,
    families: &[Family],
) -> BTreeMap<String, (String, Option<BTreeSet<String>>)> {
    let pg = names::port_group(&policy.namespace, &policy.name);
    let policy_key = policy.key();
    let mut sets = BTreeMap::new();
    for direction in [Direction::Ingress, Direction::Egress] {
        let key = address_set_id(&policy_key, direction);
        if policy.rules(direction).is_some_and(<[_]>::is_empty) {
            // Kube-OVN's `.all` sets of a direction governed without rules: empty
            for &family in families {
                for except in [false, true] {
                    let set = names::no_rules_address_set(&pg, direction, except, family);
                    sets.insert(set, (key.clone(), Some(BTreeSet::new())));
                }
            }
        }
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

/// What identifies an ACL on its port group (what `acl-add` refuses twice).
type AclId = (String, i64, String);

fn acl_id(direction: &AclDirection, priority: i64, r#match: &str) -> AclId {
    (direction.to_string(), priority, r#match.to_string())
}

/// Makes the ACLs of port group `pg` exactly `wanted`: removes the unwanted, adds the
/// missing, and corrects the action, name, options and external ids of the rest in
/// place. A group not in the replica yet is left for the next pass. Shared by the
/// policies' groups and the nodes' groups ([`super::node_access`]).
pub(super) fn write_group_acls<'w>(
    txn: &mut NbTxn<'_>,
    pg: &str,
    wanted: impl IntoIterator<Item = &'w AclSpec>,
) -> Result<(), NbError> {
    let store = txn.store();
    let Some(row) = store.by_name::<PortGroup>(pg)?.into_iter().next() else {
        return Ok(());
    };
    let mut current = Vec::new();
    for id in &row.acls {
        if let Some(acl) = store.get(*id)? {
            current.push(Stored { id: *id, row: acl });
        }
    }
    let wanted: BTreeMap<AclId, &AclSpec> = wanted
        .into_iter()
        .map(|a| (acl_id(&a.direction, a.priority, &a.r#match), a))
        .collect();
    let target = AclTarget::PortGroup(pg.to_string());
    let mut present = BTreeSet::new();
    for acl in current {
        let id = acl_id(&acl.direction, acl.priority, &acl.r#match);
        match wanted.get(&id) {
            None => {
                txn.acl_del(
                    &target,
                    Some(acl.direction.clone()),
                    Some((acl.priority, &acl.r#match)),
                )?;
            }
            Some(want) => {
                if acl.action != want.action {
                    txn.set(acl.id, Acl::ACTION, want.action.clone());
                }
                if acl.name != want.name {
                    txn.set(acl.id, Acl::NAME, want.name.clone());
                }
                if acl.options != want.options {
                    txn.set(acl.id, Acl::OPTIONS, want.options.clone());
                }
                if acl.external_ids != want.external_ids {
                    txn.set(acl.id, Acl::EXTERNAL_IDS, want.external_ids.clone());
                }
                present.insert(id);
            }
        }
    }
    for (id, want) in wanted {
        if !present.contains(&id) {
            txn.acl_add(&target, want.clone())?;
        }
    }
    Ok(())
}

/// Makes the policy's port group and address sets exist (the ACLs naming them come
/// later, in [`write_policy_acls`]; the sets no rule wants go after them, in
/// [`remove_unwanted_sets`]).
pub fn write_policy(
    txn: &mut NbTxn<'_>,
    policy: &ValidPolicy,
    families: &[Family],
) -> Result<(), NbError> {
    let (ns, name) = (policy.namespace.as_str(), policy.name.as_str());
    let pg = names::port_group(ns, name);
    let store = txn.store();
    let pg_ids = ids([
        (NP_KEY, policy.key().to_string()),
        ("vendor", VENDOR.to_string()),
    ]);
    match store.by_name::<PortGroup>(&pg)?.into_iter().next() {
        Some(row) => {
            if row.external_ids != pg_ids {
                txn.set(row.id, PortGroup::EXTERNAL_IDS, pg_ids);
            }
        }
        None => {
            let id = txn.pg_add(&pg, &[])?;
            txn.set(id, PortGroup::EXTERNAL_IDS, pg_ids);
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
    Ok(())
}

/// Removes the address sets of rules the policy no longer has (after its ACLs stopped
/// naming them). `owned` is [`owned_sets`].
pub fn remove_unwanted_sets(
    txn: &mut NbTxn<'_>,
    policy: &ValidPolicy,
    families: &[Family],
    owned: &BTreeMap<PolicyKey, Vec<String>>,
) -> Result<(), NbError> {
    let wanted_sets = wanted_sets(policy, families);
    for set in owned.get(&policy.key()).into_iter().flatten() {
        if !wanted_sets.contains_key(set) {
            txn.if_exists().address_set_del(set)?;
        }
    }
    Ok(())
}

/// Makes the policy's ACLs the rendered ones, on its port group (written before by
/// [`write_policy`]; left alone while it is not in the replica yet).
pub fn write_policy_acls(
    txn: &mut NbTxn<'_>,
    policy: &ValidPolicy,
    rendered: &RenderedAcls,
) -> Result<(), NbError> {
    let pg = names::port_group(&policy.namespace, &policy.name);
    write_group_acls(txn, &pg, rendered.acls.values())
}

/// The names of the address sets each policy owns, from one scan.
pub fn owned_sets(txn: &NbTxn<'_>) -> Result<BTreeMap<PolicyKey, Vec<String>>, NbError> {
    let mut owned: BTreeMap<PolicyKey, Vec<String>> = BTreeMap::new();
    for row in txn.store().rows::<AddressSet>()? {
        let Some(policy) = row
            .external_ids
            .get(NP_KEY)
            .and_then(|id| policy_of_address_set_id(id))
        else {
            continue;
        };
        owned.entry(policy).or_default().push(row.row.name.clone());
    }
    Ok(owned)
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
/// not in `keep`.
pub fn remove_stale(txn: &mut NbTxn<'_>, keep: &BTreeSet<PolicyKey>) -> Result<(), NbError> {
    let store = txn.store();
    let ours =
        |ids: &BTreeMap<String, String>| ids.get("vendor").map(String::as_str) == Some(VENDOR);
    for group in store.rows::<PortGroup>()? {
        let Some(key) = group
            .external_ids
            .get(NP_KEY)
            .and_then(|id| policy_of_id(id))
        else {
            continue;
        };
        // node.<node> and <subnet>.<node> groups carry np keys too: a policy's group
        // is the one named after its key
        if ours(&group.external_ids)
            && group.name == names::port_group(&key.namespace, &key.name)
            && !keep.contains(&key)
        {
            txn.if_exists().pg_del(&group.name)?;
        }
    }
    for set in store.rows::<AddressSet>()? {
        let Some(policy) = set
            .external_ids
            .get(NP_KEY)
            .and_then(|id| policy_of_address_set_id(id))
        else {
            continue;
        };
        if ours(&set.external_ids) && !keep.contains(&policy) {
            txn.if_exists().address_set_del(&set.name)?;
        }
    }
    Ok(())
}
