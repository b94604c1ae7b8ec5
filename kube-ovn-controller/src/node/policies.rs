//! Router policies as desired state: the rows one owner (a node, a subnet) should have
//! on a router are compared with the ones it has, by priority and match, and only the
//! difference is written. Shared by the node reconciler (priority 30000 and the
//! distributed gateway's 29000) and the centralized gateway of a Subnet (29000).

use std::collections::BTreeMap;

use ovn_nb::{
    LogicalRouter, LogicalRouterPolicy, LogicalRouterPolicyAction, NbError, NbTxn, PolicySpec,
};
use ovsdb::typed::{Stored, TypedStore};

use crate::bootstrap::VENDOR;

/// Kube-OVN's `NodeRouterPolicyPriority`: traffic to a node's internal IP goes to its
/// join address (`ovn0`).
pub const NODE_ROUTER_POLICY_PRIORITY: i64 = 30000;
/// Kube-OVN's `GatewayRouterPolicyPriority`: a subnet's egress goes to its gateway
/// node(s).
pub const GATEWAY_ROUTER_POLICY_PRIORITY: i64 = 29000;

/// The policies of router `lr` in the replica (none if the router is absent).
pub fn router_policies(
    store: &TypedStore,
    lr: &str,
) -> Result<Vec<Stored<LogicalRouterPolicy>>, NbError> {
    let Some(router) = store.by_name::<LogicalRouter>(lr)?.into_iter().next() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for id in router.row.policies {
        if let Some(row) = store.get(id)? {
            out.push(Stored { id, row });
        }
    }
    Ok(out)
}

/// Whether a policy is kube-ovn's and its `external_ids[key]` is `value`.
pub fn owned_by(policy: &LogicalRouterPolicy, key: &str, value: &str) -> bool {
    policy.external_ids.get("vendor").map(String::as_str) == Some(VENDOR)
        && policy.external_ids.get(key).map(String::as_str) == Some(value)
}

/// A reroute policy with `vendor=kube-ovn` plus `external_ids`.
pub fn reroute(
    priority: i64,
    r#match: String,
    nexthops: impl IntoIterator<Item = String>,
    external_ids: BTreeMap<String, String>,
) -> PolicySpec {
    let mut ids = BTreeMap::from([("vendor".to_string(), VENDOR.to_string())]);
    ids.extend(external_ids);
    PolicySpec {
        priority,
        r#match,
        action: LogicalRouterPolicyAction::Reroute,
        nexthops: nexthops.into_iter().collect(),
        external_ids: ids,
        ..Default::default()
    }
}

/// Appends the operations that leave exactly `desired` among the policies of `lr`
/// that `owned` selects: a policy with the desired priority and match is updated in
/// place if its action, next hops or `external_ids` differ; owned policies not desired
/// are removed; missing ones are added. Nothing is appended when all is in place.
pub fn sync_policies(
    txn: &mut NbTxn<'_>,
    lr: &str,
    owned: impl Fn(&LogicalRouterPolicy) -> bool,
    desired: &[PolicySpec],
) -> Result<(), NbError> {
    let existing = router_policies(txn.store(), lr)?;
    let same_key = |p: &LogicalRouterPolicy, d: &PolicySpec| {
        p.priority == d.priority && p.r#match == d.r#match
    };
    for stale in existing
        .iter()
        .filter(|p| owned(&p.row) && !desired.iter().any(|d| same_key(&p.row, d)))
    {
        txn.lr_policy_del(lr, Some(stale.priority), Some(&stale.r#match))?;
    }
    for want in desired {
        match existing.iter().find(|p| same_key(&p.row, want)) {
            Some(have) => {
                if have.action != want.action {
                    txn.set(have.id, LogicalRouterPolicy::ACTION, want.action.clone());
                }
                if have.nexthops != want.nexthops {
                    txn.set(
                        have.id,
                        LogicalRouterPolicy::NEXTHOPS,
                        want.nexthops.clone(),
                    );
                }
                if have.external_ids != want.external_ids {
                    let ids = want.external_ids.clone();
                    txn.set(have.id, LogicalRouterPolicy::EXTERNAL_IDS, ids);
                }
            }
            None => {
                txn.lr_policy_add(lr, want.clone())?;
            }
        }
    }
    Ok(())
}
