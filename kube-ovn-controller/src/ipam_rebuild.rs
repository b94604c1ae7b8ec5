//! The start-up IPAM rebuild (Kube-OVN's `InitIPAM`, `pkg/controller/init.go`): the
//! IPAM keeps nothing on disk, so before any reconciler hands out an address it is
//! filled from what the API server holds: the valid Subnets, the IPPools, then every
//! address already given out, read from IP objects, pod annotations (per provider) and
//! node annotations (the join address).
//!
//! A NIC's live annotations win over its IP object (the CNI plumbs what the annotations
//! say). Two owners claiming one address (or MAC) are resolved deterministically: live
//! annotations before orphaned IP objects, then the older object, then the owner key;
//! the earlier keeps the address, the loser gets a Warning Event, and a losing pod NIC
//! loses its `allocated` mark so that its reconciler allocates it afresh. Nothing is
//! kept silently: every refusal is logged and returned in the [`RebuildSummary`].
//!
//! Running it again (after a leader change) rebuilds from the API server anew: the
//! controller never relies on its memory of what it handed out.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use ipam::{ExistingAllocation, Mac, Owner, PoolSpec, RebuildProblem};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{json, Map, Value};

use super::cache::Cached;
use super::events::EventKind;
use super::Context;
use kube_ovn_api::annotations::{AnnotationMap, NodeAnnotations, PodNetwork, Provider};
use kube_ovn_api::crd::{IPPool, Subnet, IP};
use kube_ovn_api::naming::{
    node_of_port_name, node_owner, pod_owner, provider_of_port_name, OVN_PROVIDER,
};

/// Event reason on an object whose address another, earlier owner keeps.
pub const REASON_ADDRESS_CONFLICT: &str = "AddressConflict";

/// Why the rebuild could not run (it is retried by the caller).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RebuildError {
    /// Listing a kind from the API server failed.
    #[error("IPAM rebuild: listing {what} failed")]
    List {
        /// `subnets`, `ippools`, `ips`, `pods` or `nodes`.
        what: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

/// Where an allocation was read from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// A pod's annotations for one provider.
    Pod {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        name: String,
        /// The NIC's provider.
        provider: String,
    },
    /// A node's annotations (its join address).
    Node {
        /// The node.
        name: String,
    },
    /// An IP object with no live annotations behind it.
    IpObject {
        /// The IP object.
        name: String,
    },
}

/// A claim refused because an earlier owner keeps the address or MAC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The subnet.
    pub subnet: String,
    /// The contested address or MAC, as text.
    pub contested: String,
    /// The owner that keeps it.
    pub kept: Owner,
    /// The refused owner.
    pub loser: Owner,
    /// Where the refused claim was read from.
    pub loser_source: Source,
}

/// What a rebuild did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebuildSummary {
    /// Subnets registered in the IPAM.
    pub subnets: usize,
    /// IPPools registered.
    pub pools: usize,
    /// Allocations loaded.
    pub loaded: usize,
    /// Claims refused for a conflict, each reported with an Event.
    pub conflicts: Vec<Conflict>,
    /// Claims refused for another reason (invalid address, unknown subnet...), as
    /// `owner: why`.
    pub refused: Vec<String>,
}

/// One allocation read from the API server, with what orders it against the others.
#[derive(Debug, Clone)]
struct Claim {
    subnet: String,
    entry: ExistingAllocation,
    source: Source,
    created: Option<Timestamp>,
}

impl Claim {
    /// Live annotations first, then the older object, then the owner key.
    fn order(&self, other: &Claim) -> Ordering {
        let orphan = |c: &Claim| matches!(c.source, Source::IpObject { .. });
        orphan(self)
            .cmp(&orphan(other))
            .then_with(|| match (self.created, other.created) {
                (Some(a), Some(b)) => a.cmp(&b),
                (a, b) => b.is_some().cmp(&a.is_some()),
            })
            .then_with(|| self.entry.owner.cmp(&other.entry.owner))
    }
}

async fn list<K>(ctx: &Context, what: &'static str) -> Result<Vec<Arc<K>>, RebuildError>
where
    K: Cached + serde::de::DeserializeOwned + std::fmt::Debug,
{
    ctx.list_all::<K>()
        .await
        .map_err(|source| RebuildError::List { what, source })
}

/// Rebuilds `ctx.ipam` from the API server; see the module docs.
pub async fn rebuild_ipam(ctx: &Context) -> Result<RebuildSummary, RebuildError> {
    let started = std::time::Instant::now();
    let subnets: Vec<Subnet> = list::<Subnet>(ctx, "subnets")
        .await?
        .iter()
        .map(|s| Subnet::clone(s))
        .collect();
    let pools = list::<IPPool>(ctx, "ippools").await?;
    let ips = list::<IP>(ctx, "ips").await?;
    let pods = list::<Pod>(ctx, "pods").await?;
    let nodes = list::<Node>(ctx, "nodes").await?;
    let mut summary = RebuildSummary {
        subnets: register_subnets(ctx, &subnets),
        pools: register_pools(ctx, &pools),
        ..RebuildSummary::default()
    };
    let mut claims = pod_claims(&pods);
    claims.extend(node_claims(&nodes, &ctx.config.node_switch.name));
    claims = merge_ip_objects(claims, &ips);
    claims.sort_by(Claim::order);
    let losers = load(ctx, claims, &mut summary);
    for (conflict, claim) in losers {
        report_conflict(ctx, &pods, &nodes, &ips, &conflict, &claim).await;
        summary.conflicts.push(conflict);
    }
    tracing::info!(
        seconds = started.elapsed().as_secs_f64(),
        subnets = summary.subnets,
        pools = summary.pools,
        loaded = summary.loaded,
        conflicts = summary.conflicts.len(),
        refused = summary.refused.len(),
        "IPAM rebuilt"
    );
    Ok(summary)
}

/// Registers every valid Subnet not being deleted; how many.
fn register_subnets(ctx: &Context, subnets: &[Subnet]) -> usize {
    let vpc = &ctx.config.cluster_router;
    let mut count = 0;
    for subnet in subnets {
        if subnet.metadata.deletion_timestamp.is_some()
            || super::subnet::validate(subnet, subnets, vpc).is_err()
        {
            continue;
        }
        let Some(spec) = kube_ovn_api::naming::ipam_spec(subnet) else {
            continue;
        };
        match ctx.ipam.add_or_update_subnet(&subnet.name_any(), &spec) {
            Ok(_) => count += 1,
            Err(err) => {
                tracing::warn!(subnet = %subnet.name_any(), error = %err, "the IPAM refused the subnet");
            }
        }
    }
    count
}

/// Registers every IPPool the IPAM accepts; how many. A refused one is left to the
/// IPPool reconciler, which reports it in the pool's conditions.
fn register_pools(ctx: &Context, pools: &[Arc<IPPool>]) -> usize {
    let mut count = 0;
    for pool in pools {
        if pool.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let spec = PoolSpec {
            ips: pool.spec.ips.clone(),
        };
        match ctx
            .ipam
            .add_or_update_pool(&pool.spec.subnet, &pool.name_any(), &spec)
        {
            Ok(()) => count += 1,
            Err(err) => {
                tracing::warn!(ippool = %pool.name_any(), error = %err, "the IPAM refused the IP pool");
            }
        }
    }
    count
}

fn annotation_map(meta: &kube::api::ObjectMeta) -> AnnotationMap {
    meta.annotations
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Whether a pod still holds its addresses: not host-networked, not finished.
pub(crate) fn pod_holds_addresses(pod: &Pod) -> bool {
    let host_network = pod
        .spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false);
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !host_network && !matches!(phase, Some("Succeeded" | "Failed"))
}

/// The allocated NICs of every pod that holds addresses.
fn pod_claims(pods: &[Arc<Pod>]) -> Vec<Claim> {
    let mut claims = Vec::new();
    for pod in pods.iter().filter(|p| pod_holds_addresses(p)) {
        let map = annotation_map(&pod.metadata);
        let (namespace, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        for provider in PodNetwork::allocated_providers(&map) {
            let (net, errors) = PodNetwork::parse_lenient(&provider, &map);
            for err in errors {
                tracing::warn!(pod = %name, namespace = %namespace, error = %err, "pod annotation ignored by the IPAM rebuild");
            }
            let (Some(true), Some(ips), Some(subnet)) =
                (net.allocated, net.ip_address, net.logical_switch)
            else {
                continue;
            };
            claims.push(Claim {
                subnet,
                entry: ExistingAllocation {
                    owner: pod_owner(&namespace, &name, provider.as_str()),
                    addresses: ips.addrs(),
                    mac: net.mac_address,
                },
                source: Source::Pod {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    provider: provider.as_str().to_owned(),
                },
                created: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            });
        }
    }
    claims
}

/// The join address of every node that has one.
fn node_claims(nodes: &[Arc<Node>], join_switch: &str) -> Vec<Claim> {
    let mut claims = Vec::new();
    for node in nodes {
        let (ann, _) = NodeAnnotations::parse_lenient(&annotation_map(&node.metadata));
        let (Some(true), Some(ips)) = (ann.allocated, ann.ip_address) else {
            continue;
        };
        claims.push(Claim {
            subnet: ann.logical_switch.unwrap_or_else(|| join_switch.to_owned()),
            entry: ExistingAllocation {
                owner: node_owner(&node.name_any()),
                addresses: ips.addrs(),
                mac: ann.mac_address,
            },
            source: Source::Node {
                name: node.name_any(),
            },
            created: node.metadata.creation_timestamp.as_ref().map(|t| t.0),
        });
    }
    claims
}

/// The owner an IP object records: `node-<node>` objects without a namespace are a
/// node's join address, the others a pod NIC named `<pod>.<ns>[.<provider>]`.
pub fn ip_object_owner(ip: &IP) -> Option<Owner> {
    let name = ip.name_any();
    let namespace = ip.spec.namespace.as_deref().unwrap_or_default();
    if namespace.is_empty() {
        return node_of_port_name(&name).map(node_owner);
    }
    let pod = ip.spec.pod_name.as_deref()?;
    let provider =
        provider_of_port_name(&name, namespace, pod).unwrap_or_else(|| OVN_PROVIDER.to_owned());
    Some(pod_owner(namespace, pod, &provider))
}

/// An IP object's addresses: the per-family fields, else the comma list.
fn ip_object_addresses(ip: &IP) -> Vec<IpAddr> {
    let per_family: Vec<IpAddr> = [&ip.spec.v4_ip_address, &ip.spec.v6_ip_address]
        .into_iter()
        .flatten()
        .filter_map(|a| a.trim().parse().ok())
        .collect();
    if !per_family.is_empty() {
        return per_family;
    }
    let all = ip.spec.ip_address.as_deref().unwrap_or_default();
    all.split(',')
        .filter_map(|a| a.trim().parse().ok())
        .collect()
}

/// Adds the IP objects whose owner has no live claim (an owner's live annotations win
/// over its IP object).
fn merge_ip_objects(claims: Vec<Claim>, ips: &[Arc<IP>]) -> Vec<Claim> {
    let mut by_owner: BTreeMap<Owner, Claim> = BTreeMap::new();
    for claim in claims {
        by_owner.entry(claim.entry.owner.clone()).or_insert(claim);
    }
    for ip in ips {
        let (Some(owner), Some(subnet)) = (ip_object_owner(ip), ip.spec.subnet.clone()) else {
            continue;
        };
        if by_owner.contains_key(&owner) {
            continue;
        }
        let mac = ip
            .spec
            .mac_address
            .as_deref()
            .and_then(|m| m.parse::<Mac>().ok());
        let claim = Claim {
            subnet,
            entry: ExistingAllocation {
                owner: owner.clone(),
                addresses: ip_object_addresses(ip),
                mac,
            },
            source: Source::IpObject {
                name: ip.name_any(),
            },
            created: ip.metadata.creation_timestamp.as_ref().map(|t| t.0),
        };
        by_owner.insert(owner, claim);
    }
    by_owner.into_values().collect()
}

/// Feeds the ordered claims to the IPAM subnet by subnet; returns the conflict losers.
fn load(ctx: &Context, claims: Vec<Claim>, summary: &mut RebuildSummary) -> Vec<(Conflict, Claim)> {
    let mut by_subnet: BTreeMap<String, Vec<Claim>> = ctx
        .ipam
        .subnet_names()
        .into_iter()
        .map(|s| (s, Vec::new()))
        .collect();
    for claim in claims {
        match by_subnet.get_mut(&claim.subnet) {
            Some(list) => list.push(claim),
            None => summary.refused.push(format!(
                "{}: subnet {} is not in the IPAM",
                claim.entry.owner, claim.subnet
            )),
        }
    }
    let mut losers = Vec::new();
    for (subnet, list) in by_subnet {
        let entries = list.iter().map(|c| c.entry.clone());
        let report = match ctx.ipam.rebuild(&subnet, entries) {
            Ok(report) => report,
            // the subnet went away meanwhile: nothing to load into
            Err(err) => {
                summary.refused.push(format!("subnet {subnet}: {err}"));
                continue;
            }
        };
        summary.loaded += report.loaded;
        for rejected in report.rejected {
            let Some(claim) = list.iter().find(|c| c.entry.owner == rejected.owner) else {
                continue;
            };
            let (contested, kept) = match rejected.problem {
                RebuildProblem::AddressConflict { address, kept } => (address.to_string(), kept),
                RebuildProblem::MacConflict { mac, kept } => (mac.to_string(), kept),
                other => {
                    summary
                        .refused
                        .push(format!("{}: {other:?}", rejected.owner));
                    continue;
                }
            };
            let conflict = Conflict {
                subnet: subnet.clone(),
                contested,
                kept,
                loser: rejected.owner,
                loser_source: claim.source.clone(),
            };
            tracing::warn!(
                ?conflict,
                "two owners claim one address; the earlier keeps it"
            );
            losers.push((conflict, claim.clone()));
        }
    }
    losers
}

/// The Event (and, for a pod NIC, the cleared `allocated` mark) of a conflict's loser.
async fn report_conflict(
    ctx: &Context,
    pods: &[Arc<Pod>],
    nodes: &[Arc<Node>],
    ips: &[Arc<IP>],
    conflict: &Conflict,
    claim: &Claim,
) {
    let message = format!(
        "{} of subnet {} is also claimed by {}, which keeps it; {} gets a new address",
        conflict.contested, conflict.subnet, conflict.kept, conflict.loser
    );
    match &claim.source {
        Source::Pod {
            namespace,
            name,
            provider,
        } => {
            let found = pods
                .iter()
                .find(|p| p.name_any() == *name && p.namespace().as_deref() == Some(namespace));
            if let Some(pod) = found {
                ctx.events
                    .record(
                        pod.as_ref(),
                        EventKind::Warning,
                        REASON_ADDRESS_CONFLICT,
                        &message,
                    )
                    .await;
                clear_allocated(&ctx.client, pod, provider).await;
            }
        }
        Source::Node { name } => {
            if let Some(node) = nodes.iter().find(|n| n.name_any() == *name) {
                ctx.events
                    .record(
                        node.as_ref(),
                        EventKind::Warning,
                        REASON_ADDRESS_CONFLICT,
                        &message,
                    )
                    .await;
            }
        }
        Source::IpObject { name } => {
            if let Some(ip) = ips.iter().find(|i| i.name_any() == *name) {
                ctx.events
                    .record(
                        ip.as_ref(),
                        EventKind::Warning,
                        REASON_ADDRESS_CONFLICT,
                        &message,
                    )
                    .await;
            }
        }
    }
}

/// Removes a losing NIC's `allocated` mark (only that key) so its reconciler
/// allocates it again.
async fn clear_allocated(client: &Client, pod: &Pod, provider: &str) {
    let Ok(provider) = Provider::new(provider) else {
        return;
    };
    // the key, spelled by the annotation struct that owns it
    let mut keys = AnnotationMap::new();
    let mark = PodNetwork {
        allocated: Some(true),
        ..PodNetwork::default()
    };
    mark.write_into(&provider, &mut keys);
    let changes: Map<String, Value> = keys.into_keys().map(|k| (k, Value::Null)).collect();
    let patch = json!({ "metadata": { "annotations": changes } });
    let api: Api<Pod> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    if let Err(err) = api
        .patch(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        tracing::warn!(pod = %pod.name_any(), error = %err, "cannot clear the allocated mark of a conflicting pod");
    }
}
