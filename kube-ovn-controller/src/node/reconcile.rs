//! One node's reconcile (Kube-OVN's `handleAddNode` / `handleDeleteNode`): its join
//! address from the IPAM (read back from its annotations after a restart), its port and
//! router policies in NB, its chassis from SB, and the annotations that tell the node
//! daemon about all of it. Deletion goes through the finalizer [`FINALIZER`], so the
//! address, rows and chassis are released before the Node object goes.

use std::sync::Arc;
use std::time::Duration;

use ipam::{AllocError, Allocation, AllocationRequest, MacRequest};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{finalizer, Event};
use ovn_nb::NbError;
use ovn_sb::SbError;
use serde_json::json;

use super::chassis::{chassis_of, delete_chassis, tag_chassis};
use super::desired::{delete_node, write_node, NodeRows};
use super::distributed::DistributedSubnet;
use crate::subnet::validate;
use crate::Context;
use kube_ovn_api::annotations::{AnnotationError, AnnotationMap, IpPair, NodeAnnotations};
use kube_ovn_api::crd::{GatewayType, Subnet};
use kube_ovn_api::naming;

/// The finalizer Kube-OVN's controller puts on the objects whose rows it owns.
pub const FINALIZER: &str = crate::subnet::FINALIZER;

/// Why a node's reconcile failed; it is retried.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// One of the node's `ovn.kubernetes.io/*` annotations does not parse; nothing
    /// was written.
    #[error("node {node}: {source}")]
    Annotation {
        /// The node.
        node: String,
        /// Which annotation, and why.
        #[source]
        source: AnnotationError,
    },
    /// The IPAM refused the join address (join subnet not registered yet, full, or the
    /// annotated address taken).
    #[error("node {node}: no join address on subnet {subnet}: {source}")]
    Ipam {
        /// The node.
        node: String,
        /// The join subnet.
        subnet: String,
        /// Why.
        #[source]
        source: Box<AllocError>,
    },
    /// Building or committing the NB transaction failed.
    #[error("node {node}: NB transaction failed")]
    Nb {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: Box<NbError>,
    },
    /// Reading or writing the node's chassis failed.
    #[error("node {node}: SB chassis")]
    Sb {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: Box<SbError>,
    },
    /// Listing the Subnets failed.
    #[error("node {node}: listing subnets failed")]
    List {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Patching the node's annotations failed.
    #[error("node {node}: patching its annotations failed")]
    Patch {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Writing the join subnet's usage figures (its status) failed.
    #[error("node {node}: writing the usage of subnet {subnet} failed")]
    Usage {
        /// The node.
        node: String,
        /// The join subnet.
        subnet: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Adding or removing the finalizer failed, or the step it guards did.
    #[error("node {node}: finalizer {FINALIZER}")]
    Finalizer {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: Box<kube::runtime::finalizer::Error<NodeError>>,
    },
}

/// What one apply did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeReport {
    /// The join addresses and MAC.
    pub join: Allocation,
    /// NB operations sent (0: the rows already looked right).
    pub nb_ops: usize,
    /// The node's chassis, if SB has one for it.
    pub chassis: Option<String>,
    /// Whether the annotations were patched.
    pub annotations_patched: bool,
}

fn name_of(node: &Node) -> String {
    node.metadata.name.clone().unwrap_or_default()
}

/// The node's `InternalIP` addresses, one per family (Kube-OVN's `GetNodeInternalIP`).
pub fn internal_ips(node: &Node) -> IpPair {
    let mut pair = IpPair { v4: None, v6: None };
    let addresses = node.status.as_ref().and_then(|s| s.addresses.as_ref());
    for addr in addresses.into_iter().flatten() {
        if addr.type_ != "InternalIP" {
            continue;
        }
        match addr.address.parse() {
            Ok(std::net::IpAddr::V4(v4)) if pair.v4.is_none() => pair.v4 = Some(v4),
            Ok(std::net::IpAddr::V6(v6)) if pair.v6.is_none() => pair.v6 = Some(v6),
            _ => {}
        }
    }
    pair
}

/// The join address: the IPAM's if it has one, else the annotated one (after a
/// restart), else the next free one.
fn join_address(
    ctx: &Context,
    node: &str,
    annotations: &NodeAnnotations,
) -> Result<Allocation, NodeError> {
    let subnet = &ctx.config.node_switch.name;
    let owner = naming::node_owner(node);
    let ipam_err = |source| NodeError::Ipam {
        node: node.to_string(),
        subnet: subnet.clone(),
        source: Box::new(source),
    };
    if let Some(held) = ctx.ipam.get(subnet, &owner).map_err(ipam_err)? {
        return Ok(held);
    }
    let request = match (&annotations.ip_address, &annotations.mac_address) {
        (Some(ips), Some(mac)) if annotations.is_allocated() => AllocationRequest {
            addresses: ips.addrs(),
            mac: MacRequest::Static(*mac),
            ..AllocationRequest::default()
        },
        _ => AllocationRequest::next_free(),
    };
    ctx.ipam
        .allocate(subnet, &owner, &request)
        .map_err(ipam_err)
}

/// The node's chassis name, tagging the chassis as Kube-OVN does; None without SB or
/// before ovn-controller registered it.
async fn chassis(ctx: &Context, node: &str) -> Result<Option<String>, NodeError> {
    let Some(sb) = &ctx.sb else {
        return Ok(None);
    };
    let sb_err = |source| NodeError::Sb {
        node: node.to_string(),
        source: Box::new(source),
    };
    let found = chassis_of(sb, node).map_err(sb_err)?;
    let Some(first) = found.first() else {
        return Ok(None);
    };
    tag_chassis(sb, first, node).await.map_err(sb_err)?;
    Ok(Some(first.name.clone()))
}

/// The valid overlay Subnets of the default VPC with a distributed gateway (all but
/// the join subnet, centralized ones, and underlay ones without a logical gateway).
async fn distributed_subnets(
    ctx: &Context,
    node: &str,
) -> Result<Vec<DistributedSubnet>, NodeError> {
    let all = Api::<Subnet>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|source| NodeError::List {
            node: node.to_string(),
            source,
        })?
        .items;
    let router = &ctx.config.cluster_router;
    let distributed = all
        .iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .filter(|s| s.spec.gateway_type != Some(GatewayType::Centralized))
        .filter(|s| {
            s.spec.vlan.as_deref().unwrap_or_default().is_empty()
                || s.spec.logical_gateway == Some(true)
        })
        .filter_map(|s| validate(s, &all, router).ok())
        .filter(|v| &v.vpc == router && v.name != ctx.config.node_switch.name)
        .map(|v| DistributedSubnet {
            name: v.name,
            cidr: v.cidr,
        })
        .collect();
    Ok(distributed)
}

/// The annotations Kube-OVN's controller writes on a node.
fn desired_annotations(
    ctx: &Context,
    node: &str,
    mut current: NodeAnnotations,
    join: &Allocation,
    chassis: Option<String>,
) -> NodeAnnotations {
    let join_switch = &ctx.config.node_switch;
    current.allocated = Some(true);
    current.ip_address = Some(IpPair {
        v4: join.v4,
        v6: join.v6,
    });
    current.mac_address = join.mac;
    current.cidr = Some(join_switch.cidr);
    current.gateway = Some(join_switch.gateway);
    current.logical_switch = Some(join_switch.name.clone());
    current.port_name = Some(naming::node_port_name(node));
    if chassis.is_some() {
        current.chassis = chassis;
    }
    current
}

async fn patch_annotations(
    ctx: &Context,
    node: &str,
    before: &AnnotationMap,
    wanted: &NodeAnnotations,
) -> Result<bool, NodeError> {
    let mut after = before.clone();
    wanted.write_into(&mut after);
    let changed: AnnotationMap = after
        .into_iter()
        .filter(|(k, v)| before.get(k) != Some(v))
        .collect();
    if changed.is_empty() {
        return Ok(false);
    }
    let patch = json!({ "metadata": { "annotations": changed } });
    Api::<Node>::all(ctx.client.clone())
        .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| NodeError::Patch {
            node: node.to_string(),
            source,
        })?;
    Ok(true)
}

/// Makes the IPAM, NB, SB's chassis tag and the node's annotations match the node. A
/// malformed annotation fails the apply before anything is written.
pub async fn apply(ctx: &Context, node: &Node) -> Result<NodeReport, NodeError> {
    let name = name_of(node);
    let before = node.metadata.annotations.clone().unwrap_or_default();
    let parsed = NodeAnnotations::parse(&before).map_err(|source| NodeError::Annotation {
        node: name.clone(),
        source,
    })?;
    let join = join_address(ctx, &name, &parsed)?;
    let rows = NodeRows {
        node: name.clone(),
        join_switch: ctx.config.node_switch.name.clone(),
        router: ctx.config.cluster_router.clone(),
        join,
        internal: internal_ips(node),
        distributed: distributed_subnets(ctx, &name).await?,
    };
    let nb_err = |source| NodeError::Nb {
        node: name.clone(),
        source: Box::new(source),
    };
    let mut txn = ctx.nb.txn();
    write_node(&mut txn, &rows).map_err(nb_err)?;
    let nb_ops = txn.ops().len();
    if nb_ops > 0 {
        ctx.nb.commit(txn).await.map_err(nb_err)?;
    }
    let chassis = chassis(ctx, &name).await?;
    let wanted = desired_annotations(ctx, &name, parsed, &join, chassis.clone());
    let annotations_patched = patch_annotations(ctx, &name, &before, &wanted).await?;
    write_join_usage(ctx, &name).await?;
    let report = NodeReport {
        join,
        nb_ops,
        chassis,
        annotations_patched,
    };
    tracing::info!(node = %name, ?report, "node reconciled");
    Ok(report)
}

/// Removes the node's port, policies and chassis, then releases its join address.
pub async fn cleanup(ctx: &Context, node: &Node) -> Result<(), NodeError> {
    let name = name_of(node);
    let nb_err = |source| NodeError::Nb {
        node: name.clone(),
        source: Box::new(source),
    };
    let mut txn = ctx.nb.txn();
    delete_node(&mut txn, &name, &ctx.config.cluster_router).map_err(nb_err)?;
    if !txn.ops().is_empty() {
        ctx.nb.commit(txn).await.map_err(nb_err)?;
    }
    if let Some(sb) = &ctx.sb {
        delete_chassis(sb, &name)
            .await
            .map_err(|source| NodeError::Sb {
                node: name.clone(),
                source: Box::new(source),
            })?;
    }
    let subnet = &ctx.config.node_switch.name;
    // an unknown join subnet holds nothing to release
    let released = ctx.ipam.release(subnet, &naming::node_owner(&name)).ok();
    tracing::info!(node = %name, ?released, "node rows removed");
    write_join_usage(ctx, &name).await
}

/// Keeps the join Subnet's usage figures (`v4usingIPs`, ...) current: nodes are what
/// use its addresses, as pods use other subnets'.
async fn write_join_usage(ctx: &Context, node: &str) -> Result<(), NodeError> {
    let subnet = &ctx.config.node_switch.name;
    crate::pod::status::write_usage(ctx, subnet)
        .await
        .map(drop)
        .map_err(|source| NodeError::Usage {
            node: node.to_string(),
            subnet: subnet.clone(),
            source,
        })
}

/// The reconcile `kube::runtime::Controller` runs: finalizer first, then [`apply`]
/// or [`cleanup`].
pub async fn reconcile(node: Arc<Node>, ctx: Arc<Context>) -> Result<Action, NodeError> {
    let name = name_of(&node);
    let api = Api::<Node>::all(ctx.client.clone());
    finalizer(&api, FINALIZER, node, |event| async {
        match event {
            Event::Apply(node) => apply(&ctx, &node).await.map(|_| Action::await_change()),
            Event::Cleanup(node) => cleanup(&ctx, &node).await.map(|()| Action::await_change()),
        }
    })
    .await
    .map_err(|source| NodeError::Finalizer {
        node: name,
        source: Box::new(source),
    })
}

/// Retries a failed reconcile after a pause.
pub fn error_policy(node: Arc<Node>, error: &NodeError, _ctx: Arc<Context>) -> Action {
    tracing::warn!(node = %name_of(&node), error = %error, "node reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}
