//! One pass over the cluster's NetworkPolicies, Pods and Namespaces, an idempotent
//! function of them, in three transactions, each once the one before shows in the
//! replica: the port groups and address sets ([`super::rows::write_policy`]), their
//! members ([`super::rows::write_members`]), then the ACLs
//! ([`super::rows::write_policy_acls`]) with the removal of what is stale. The first
//! and last, which differ only when a policy does, make the policy level; the second
//! the membership level. A pass over an unchanged cluster sends nothing.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use ovn_nb::{NbClient, NbError};

use super::acl::{render, UnresolvedPort};
use super::names::{Family, PolicyKey};
use super::node_access::{write_node_acls, write_node_groups, write_node_members, NodeView};
use super::rows::{
    owned_sets, remove_stale, remove_unwanted_sets, write_members, write_policy, write_policy_acls,
};
use super::selection::Snapshot;
use super::validate::{validate, NpInvalid, ValidPolicy};
use kube_ovn_api::annotations::CidrPair;

/// Why a pass failed; it is retried ([`super::watch`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpError {
    /// Building or committing an NB transaction failed.
    #[error("network policies: NB {stage} transaction failed")]
    Nb {
        /// `policy` or `membership`.
        stage: &'static str,
        /// Why.
        #[source]
        source: NbError,
    },
}

/// What one pass did.
#[derive(Debug, Clone, Default)]
pub struct PassReport {
    /// Valid policies.
    pub policies: usize,
    /// Refused policies, each naming its offending field (their rows, if any, are kept).
    pub invalid: Vec<NpInvalid>,
    /// Named ports no destination pod declares, per policy `<ns>/<name>`.
    pub unresolved: Vec<(String, UnresolvedPort)>,
    /// NB operations sent by the policy level.
    pub policy_ops: usize,
    /// NB operations sent by the membership level.
    pub member_ops: usize,
}

/// The address families in use: those of the default subnet's CIDR.
pub fn families_of(cidr: &CidrPair) -> Vec<Family> {
    let mut families = Vec::new();
    if cidr.v4.is_some() {
        families.push(Family::V4);
    }
    if cidr.v6.is_some() {
        families.push(Family::V6);
    }
    families
}

async fn commit(
    nb: &NbClient,
    txn: ovn_nb::NbTxn<'_>,
    stage: &'static str,
) -> Result<usize, NpError> {
    let n = txn.ops().len();
    if n > 0 {
        nb.commit(txn)
            .await
            .map_err(|source| NpError::Nb { stage, source })?;
    }
    Ok(n)
}

/// Brings NB in line with the given objects; `nodes` give the node access groups
/// ([`super::node_access`]).
pub async fn sync<'a>(
    nb: &NbClient,
    policies: impl IntoIterator<Item = &'a NetworkPolicy>,
    pods: impl IntoIterator<Item = &'a Pod>,
    namespaces: impl IntoIterator<Item = &'a Namespace>,
    nodes: impl IntoIterator<Item = &'a Node>,
    families: &[Family],
) -> Result<PassReport, NpError> {
    let nodes: Vec<NodeView> = nodes.into_iter().filter_map(NodeView::of).collect();
    let mut report = PassReport::default();
    let mut valid: Vec<ValidPolicy> = Vec::new();
    // an invalid policy keeps what it had: the API server would have refused the
    // update, and the previous version would still be in force
    let mut keep = BTreeSet::new();
    for np in policies {
        keep.insert(PolicyKey::of(np));
        match validate(np) {
            Ok(policy) => valid.push(policy),
            Err(invalid) => {
                tracing::warn!(error = %invalid, "network policy refused");
                report.invalid.push(invalid);
            }
        }
    }
    report.policies = valid.len();
    let nb_err = |stage| move |source| NpError::Nb { stage, source };
    // Kube-OVN's order: groups and sets, then their members, then the ACLs naming
    // them, so that no ACL ever names a group or set that is not there yet, and a set
    // no rule wants goes only once no ACL names it.
    let mut txn = nb.txn();
    let owned = owned_sets(&txn).map_err(nb_err("policy"))?;
    for policy in &valid {
        write_policy(&mut txn, policy, families).map_err(nb_err("policy"))?;
    }
    write_node_groups(&mut txn, &nodes, !valid.is_empty()).map_err(nb_err("policy"))?;
    report.policy_ops = commit(nb, txn, "policy").await?;
    if valid.is_empty() {
        // nothing selects pods: no members to compute (the node groups went above),
        // which spares a pass over every pod on each burst of pod events
        let mut txn = nb.txn();
        remove_stale(&mut txn, &keep).map_err(nb_err("policy"))?;
        write_node_acls(&mut txn, &nodes, families, false).map_err(nb_err("policy"))?;
        report.policy_ops += commit(nb, txn, "policy").await?;
        return Ok(report);
    }
    let snapshot = Snapshot::new(pods, namespaces);
    let mut txn = nb.txn();
    for policy in &valid {
        write_members(&mut txn, policy, &snapshot, families).map_err(nb_err("membership"))?;
    }
    write_node_members(&mut txn, &snapshot).map_err(nb_err("membership"))?;
    report.member_ops = commit(nb, txn, "membership").await?;
    let mut txn = nb.txn();
    for policy in &valid {
        let rendered = render(policy, &snapshot, families);
        for port in &rendered.unresolved {
            let key = policy.key().to_string();
            tracing::warn!(policy = %key, field = %port.field, port = %port.name, "named port declared by no destination pod: it matches nothing");
            report.unresolved.push((key, port.clone()));
        }
        write_policy_acls(&mut txn, policy, &rendered).map_err(nb_err("policy"))?;
        remove_unwanted_sets(&mut txn, policy, families, &owned).map_err(nb_err("policy"))?;
    }
    remove_stale(&mut txn, &keep).map_err(nb_err("policy"))?;
    write_node_acls(&mut txn, &nodes, families, true).map_err(nb_err("policy"))?;
    report.policy_ops += commit(nb, txn, "policy").await?;
    Ok(report)
}
