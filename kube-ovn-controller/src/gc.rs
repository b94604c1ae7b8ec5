//! Garbage collection (Kube-OVN's `pkg/controller/gc.go`): at start-up, before any
//! reconciler runs, and every `--gc-interval`, the northbound rows and IP objects
//! whose owner is gone are removed, and their addresses released from the IPAM.
//!
//! - A Logical_Switch_Port with `external_ids:vendor=kube-ovn` and `pod=<ns>/<pod>`
//!   whose pod does not hold addresses any more (gone, finished or host-networked);
//!   a join port `node-<node>` (no `pod` id) whose node is gone.
//! - An IP object whose pod or node is gone. IP objects of StatefulSet and VM pods
//!   (`podType` set) outlive their pods by design and are left alone.
//! - A Logical_Router_Policy or Logical_Router_Static_Route with `vendor=kube-ovn` and
//!   a `node` id naming a gone node, or a `subnet` id naming a gone Subnet.
//!
//! The NB rows are read before the API objects are listed: a port the pod reconciler
//! adds after the NB read belongs to a pod that the later pod list already shows, so a
//! port is never judged against an older pod list (Kube-OVN's #4304 in reverse). An
//! address is released only after its port is gone from NB.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ipam::Owner;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams};
use kube::{Client, ResourceExt};
use ovn_nb::{LogicalRouter, LogicalRouterPolicy, LogicalRouterStaticRoute, LogicalSwitchPort};
use ovn_nb::{NbError, Table};

use super::cache::Cached;
use super::ipam_rebuild::{ip_object_owner, pod_holds_addresses};
use super::{Context, VENDOR};
use kube_ovn_api::crd::{Subnet, IP};
use kube_ovn_api::naming::{
    node_of_port_name, node_owner, pod_owner, provider_of_port_name, EXTERNAL_ID_LS,
    EXTERNAL_ID_NODE, EXTERNAL_ID_POD, EXTERNAL_ID_SUBNET, EXTERNAL_ID_VENDOR,
};
use kube_ovn_api::NamespacedName;

/// Why a collection round failed (the next round tries again).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GcError {
    /// Listing a kind from the API server failed.
    #[error("garbage collection: listing {what} failed")]
    List {
        /// `pods`, `nodes`, `subnets` or `ips`.
        what: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Reading or writing NB failed.
    #[error("garbage collection: NB {what} failed")]
    Nb {
        /// What was being done.
        what: &'static str,
        /// Why.
        #[source]
        source: NbError,
    },
    /// Deleting an IP object failed.
    #[error("garbage collection: deleting IP object {name} failed")]
    DeleteIp {
        /// The IP object.
        name: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

/// What one round removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Logical switch ports removed, by name.
    pub ports: Vec<String>,
    /// IP objects deleted, by name.
    pub ips: Vec<String>,
    /// Router policies removed.
    pub policies: usize,
    /// Router static routes removed.
    pub routes: usize,
    /// IPAM allocations released.
    pub released: usize,
}

/// A kube-ovn port as read from NB: its name, switch and the owner it names.
struct PortOwner {
    name: String,
    ls: Option<String>,
    owner: PortOwnerKind,
}

enum PortOwnerKind {
    /// The pod (its `external_ids:pod`) and the provider the port's name encodes.
    Pod(NamespacedName, String),
    /// A node's join port.
    Node(String),
}

fn ours(external_ids: &BTreeMap<String, String>) -> bool {
    external_ids.get(EXTERNAL_ID_VENDOR).map(String::as_str) == Some(VENDOR)
}

/// The kube-ovn ports of NB and whom each is for.
fn nb_ports(ctx: &Context) -> Result<Vec<PortOwner>, GcError> {
    let rows = ctx
        .nb
        .store()
        .rows::<LogicalSwitchPort>()
        .map_err(|e| GcError::Nb {
            what: "read of Logical_Switch_Port",
            source: e.into(),
        })?;
    let join = &ctx.config.node_switch.name;
    let mut out = Vec::new();
    for port in rows.into_iter().map(|s| s.row) {
        if !ours(&port.external_ids) || !port.r#type.is_empty() {
            continue;
        }
        let ls = port.external_ids.get(EXTERNAL_ID_LS).cloned();
        let owner = match port.external_ids.get(EXTERNAL_ID_POD) {
            Some(key) => {
                // a port of ours naming no pod in Kube-OVN's form is not judged here
                let Ok(pod) = key.parse::<NamespacedName>() else {
                    continue;
                };
                let provider = provider_of_port_name(&port.name, &pod.namespace, &pod.name)
                    .unwrap_or_else(|| kube_ovn_api::naming::OVN_PROVIDER.to_owned());
                PortOwnerKind::Pod(pod, provider)
            }
            None if ls.as_ref().is_none_or(|l| l == join) => match node_of_port_name(&port.name) {
                Some(node) => PortOwnerKind::Node(node.to_owned()),
                None => continue,
            },
            None => continue,
        };
        out.push(PortOwner {
            name: port.name,
            ls,
            owner,
        });
    }
    Ok(out)
}

/// The cluster's owners, listed after NB was read.
struct Owners {
    pods: BTreeSet<NamespacedName>,
    nodes: BTreeSet<String>,
    subnets: BTreeSet<String>,
}

async fn list<K>(ctx: &Context, what: &'static str) -> Result<Vec<Arc<K>>, GcError>
where
    K: Cached + serde::de::DeserializeOwned + std::fmt::Debug,
{
    ctx.list_all::<K>()
        .await
        .map_err(|source| GcError::List { what, source })
}

async fn list_owners(ctx: &Context) -> Result<Owners, GcError> {
    let pods = list::<Pod>(ctx, "pods").await?;
    let nodes = list::<Node>(ctx, "nodes").await?;
    let subnets = list::<Subnet>(ctx, "subnets").await?;
    Ok(Owners {
        pods: pods
            .iter()
            .filter(|p| pod_holds_addresses(p))
            .map(|p| NamespacedName::of(p.as_ref()))
            .collect(),
        nodes: nodes.iter().map(|n| n.name_any()).collect(),
        subnets: subnets.iter().map(|s| s.name_any()).collect(),
    })
}

/// One collection round; see the module docs.
pub async fn collect_garbage(ctx: &Context) -> Result<GcReport, GcError> {
    // NB first, then the API: see the module docs for why the order matters
    let ports = nb_ports(ctx)?;
    let router_entries = router_entries(ctx)?;
    let ips = list::<IP>(ctx, "ips").await?;
    let owners = list_owners(ctx).await?;
    let mut report = GcReport::default();
    let join = ctx.config.node_switch.name.clone();
    let mut release: Vec<(String, Owner)> = Vec::new();
    let mut txn = ctx.nb.txn();
    for port in &ports {
        let (gone, owner) = match &port.owner {
            PortOwnerKind::Pod(pod, provider) => (
                !owners.pods.contains(pod),
                pod_owner(&pod.namespace, &pod.name, provider),
            ),
            PortOwnerKind::Node(node) => (!owners.nodes.contains(node), node_owner(node)),
        };
        if !gone {
            continue;
        }
        let nb_err = |source| GcError::Nb {
            what: "port delete",
            source,
        };
        txn.if_exists().lsp_del(&port.name).map_err(nb_err)?;
        report.ports.push(port.name.clone());
        release.push((port.ls.clone().unwrap_or_else(|| join.clone()), owner));
    }
    let (policies, routes) = remove_router_entries(&mut txn, &router_entries, &owners);
    report.policies = policies;
    report.routes = routes;
    if !txn.ops().is_empty() {
        ctx.nb.commit(txn).await.map_err(|source| GcError::Nb {
            what: "commit",
            source,
        })?;
    }
    for ip in &ips {
        if let Some((subnet, owner)) = orphan_ip(ip, &owners) {
            delete_ip(&ctx.client, &ip.name_any()).await?;
            report.ips.push(ip.name_any());
            release.push((subnet, owner));
        }
    }
    for (subnet, owner) in release {
        if let Ok(Some(_)) = ctx.ipam.release(&subnet, &owner) {
            report.released += 1;
        }
    }
    if report != GcReport::default() {
        tracing::info!(?report, "garbage collected");
    }
    Ok(report)
}

/// The subnet and owner of an IP object whose owner is gone.
fn orphan_ip(ip: &IP, owners: &Owners) -> Option<(String, Owner)> {
    if ip.spec.pod_type.as_deref().is_some_and(|t| !t.is_empty()) {
        return None;
    }
    let owner = ip_object_owner(ip)?;
    let subnet = ip.spec.subnet.clone().unwrap_or_default();
    let namespace = ip.spec.namespace.as_deref().unwrap_or_default();
    let gone = if namespace.is_empty() {
        let node = node_of_port_name(&ip.name_any())?.to_owned();
        !owners.nodes.contains(&node)
    } else {
        let pod = ip.spec.pod_name.as_deref()?;
        !owners.pods.contains(&NamespacedName::new(namespace, pod))
    };
    gone.then_some((subnet, owner))
}

async fn delete_ip(client: &Client, name: &str) -> Result<(), GcError> {
    match Api::<IP>::all(client.clone())
        .delete(name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        // deleted meanwhile
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(source) => Err(GcError::DeleteIp {
            name: name.to_owned(),
            source,
        }),
    }
}

/// A kube-ovn router entry naming an owner.
struct RouterEntry {
    router: ovn_nb::RowId<LogicalRouter>,
    kind: EntryKind,
    node: Option<String>,
    subnet: Option<String>,
}

enum EntryKind {
    Policy(ovn_nb::RowId<LogicalRouterPolicy>),
    Route(ovn_nb::RowId<LogicalRouterStaticRoute>),
}

/// Every kube-ovn policy and static route that names a node or subnet.
fn router_entries(ctx: &Context) -> Result<Vec<RouterEntry>, GcError> {
    let nb_err = |e: ovn_nb::DecodeError| GcError::Nb {
        what: "read of the routers",
        source: e.into(),
    };
    let store = ctx.nb.store();
    let mut out = Vec::new();
    let owner_of = |ids: &BTreeMap<String, String>| {
        let node = ids.get(EXTERNAL_ID_NODE).cloned();
        let subnet = ids.get(EXTERNAL_ID_SUBNET).cloned();
        (ours(ids) && (node.is_some() || subnet.is_some())).then_some((node, subnet))
    };
    for lr in store.rows::<LogicalRouter>().map_err(nb_err)? {
        for id in &lr.row.policies {
            let Some(policy) = store.get(*id).map_err(nb_err)? else {
                continue;
            };
            if let Some((node, subnet)) = owner_of(&policy.external_ids) {
                let kind = EntryKind::Policy(*id);
                out.push(RouterEntry {
                    router: lr.id,
                    kind,
                    node,
                    subnet,
                });
            }
        }
        for id in &lr.row.static_routes {
            let Some(route) = store.get(*id).map_err(nb_err)? else {
                continue;
            };
            if let Some((node, subnet)) = owner_of(&route.external_ids) {
                let kind = EntryKind::Route(*id);
                out.push(RouterEntry {
                    router: lr.id,
                    kind,
                    node,
                    subnet,
                });
            }
        }
    }
    Ok(out)
}

/// Adds the removal of each entry whose node or subnet is gone; (policies, routes).
fn remove_router_entries(
    txn: &mut ovn_nb::NbTxn<'_>,
    entries: &[RouterEntry],
    owners: &Owners,
) -> (usize, usize) {
    let (mut policies, mut routes) = (0, 0);
    for entry in entries {
        let node_gone = entry
            .node
            .as_ref()
            .is_some_and(|n| !owners.nodes.contains(n));
        let subnet_gone = entry
            .subnet
            .as_ref()
            .is_some_and(|s| !owners.subnets.contains(s));
        if !node_gone && !subnet_gone {
            continue;
        }
        // the rows are not roots: dropping the router's reference deletes them
        let filter = LogicalRouter::ROW_UUID_COLUMN.eq(entry.router);
        let op = match entry.kind {
            EntryKind::Policy(id) => {
                policies += 1;
                ovsdb::typed::mutate(filter).with([LogicalRouter::POLICIES.delete([id])])
            }
            EntryKind::Route(id) => {
                routes += 1;
                ovsdb::typed::mutate(filter).with([LogicalRouter::STATIC_ROUTES.delete([id])])
            }
        };
        txn.push(op);
    }
    (policies, routes)
}

/// Collects garbage every `--gc-interval` (the start-up round runs in
/// `controller::run`, before the reconcilers); returns at once when it is 0.
pub async fn run(ctx: Arc<Context>) {
    let Some(interval) = ctx.config.gc_interval else {
        return;
    };
    let rounds = async {
        let mut ticker = tokio::time::interval(interval);
        // the first tick is immediate; the start-up round already ran
        ticker.tick().await;
        loop {
            ticker.tick().await;
            if let Err(err) = collect_garbage(&ctx).await {
                tracing::warn!(error = %err, "garbage collection failed; the next round retries");
            }
        }
    };
    // stop with the other reconcilers (kube-rs's `shutdown_on_signal`)
    tokio::select! {
        () = rounds => {}
        () = kube_ovn_cmd::shutdown_signal() => {}
    }
}
