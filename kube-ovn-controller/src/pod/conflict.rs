//! "Never one address twice": when a pod's annotations claim back an address (or MAC)
//! the IPAM has given to another owner, the older pod keeps it (creation time, then
//! `namespace/name`, so the outcome does not depend on which pod is reconciled first).
//! The loser gets a Warning Event; a losing claimant gets a fresh address at once, a
//! losing holder has its address released and its result annotations cleared, so its
//! own reconcile allocates afresh. A holder whose pod is gone (a leftover) always loses.

use ipam::{AllocError, Allocation, Owner};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};

use super::allocate::{allocate, Claim};
use super::annotate::{annotation_patch, without_result};
use super::choice::SubnetChoice;
use super::events::{self, ADDRESS_CONFLICT};
use super::reconcile::{annotation_map, pod_key, PodError};
use crate::Context;
use kube_ovn_api::annotations::{PodNetwork, Provider};
use kube_ovn_api::NamespacedName;

/// Who is older: creation time, then `namespace/name`.
fn seniority(pod: &Pod) -> (Option<Timestamp>, NamespacedName) {
    let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
    (created, pod_key(pod))
}

/// The pod behind an IPAM owner, when the owner is a pod (`namespace/name`).
async fn holder_pod(ctx: &Context, holder: &Owner) -> Result<Option<Option<Pod>>, PodError> {
    let Ok(key) = holder.pod.parse::<NamespacedName>() else {
        return Ok(None);
    };
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let pod = api
        .get_opt(&key.name)
        .await
        .map_err(|source| PodError::Api {
            pod: key.clone(),
            what: "reading the pod holding a claimed address",
            source,
        })?;
    Ok(Some(pod))
}

/// Takes the address from a younger (or vanished) holder: releases it in the IPAM and
/// clears the holder pod's result annotations.
async fn evict(
    ctx: &Context,
    subnet: &str,
    holder: &Owner,
    holder_pod: Option<&Pod>,
    winner: &Pod,
) -> Result<(), PodError> {
    let released = ctx.ipam.release(subnet, holder).ok().flatten();
    tracing::warn!(holder = %holder, winner = %pod_key(winner), ?released, "address conflict: the older pod keeps the address");
    let Some(pod) = holder_pod else {
        return Ok(());
    };
    let provider = Provider::ovn();
    let map = annotation_map(pod);
    let (net, _) = PodNetwork::parse_lenient(&provider, &map);
    if let Some(patch) = annotation_patch(&map, &provider, &without_result(&net)) {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        Api::<Pod>::namespaced(ctx.client.clone(), ns)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| PodError::Api {
                pod: pod_key(pod),
                what: "clearing the annotations of a conflict's loser",
                source,
            })?;
    }
    let msg = format!(
        "address {} is also claimed by the older pod {}; this pod gets a new one",
        released
            .map(|a| a.ip_address_annotation())
            .unwrap_or_default(),
        pod_key(winner)
    );
    events::warn(ctx, pod, ADDRESS_CONFLICT, &msg).await;
    Ok(())
}

/// Settles `claimant`'s claim on what `holder` holds in the chosen subnet; the
/// claimant's allocation (its claim, or a fresh one if it lost).
pub async fn resolve(
    ctx: &Context,
    claimant: &Pod,
    owner: &Owner,
    choice: &SubnetChoice,
    claim: &Claim,
    holder: &Owner,
) -> Result<Result<Allocation, AllocError>, PodError> {
    let claimant_wins = match holder_pod(ctx, holder).await? {
        // not a pod (a node, a VIP): the pod gives way
        None => false,
        Some(None) => {
            evict(ctx, &choice.subnet, holder, None, claimant).await?;
            true
        }
        Some(Some(pod)) if seniority(claimant) < seniority(&pod) => {
            evict(ctx, &choice.subnet, holder, Some(&pod), claimant).await?;
            true
        }
        Some(Some(_)) => false,
    };
    if claimant_wins {
        return Ok(allocate(&ctx.ipam, owner, choice, claim));
    }
    let msg = format!(
        "the address this pod claims is held by {holder}, which is older; this pod gets a new one"
    );
    tracing::warn!(pod = %pod_key(claimant), %holder, "address conflict: the claimant is younger");
    events::warn(ctx, claimant, ADDRESS_CONFLICT, &msg).await;
    Ok(allocate(&ctx.ipam, owner, choice, &Claim::Fresh))
}
