//! The IPPool reconciler (Kube-OVN's `pkg/controller/ippool.go`): an IPPool is a part
//! of a subnet's addresses reserved for the pods of some namespaces. Each IPPool is
//! registered in the IPAM (`add_or_update_pool`, which carves it out of the subnet's
//! default pool and refuses entries outside the subnet or overlapping another pool);
//! its status carries the pool's usage in Kube-OVN's fields and a Ready/Error
//! condition pair (`UpdateIPAMSucceeded` / `UpdateIPAMFailed`, with the IPAM's error
//! naming the offending entry); and every namespace it lists carries the pool's name in
//! `ovn.kubernetes.io/ip_pool` (comma-joined when several pools list it, as Kube-OVN's
//! namespace handler writes it). A refused IPPool changes nothing: the IPAM keeps the
//! pool as it was and the namespaces are not touched.
//!
//! Deleting an IPPool goes through the finalizer: the pool's addresses go back to the
//! subnet's default pool and the namespaces lose its name before the object goes.
//! Choosing a pool for a pod is the pod reconciler's part.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{finalizer, Event};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{watcher, Controller};
use kube::ResourceExt;
use serde_json::{json, Value};

use super::events::EventKind;
use super::Context;
use kube_ovn_api::annotations::{AnnotationMap, Names, NamespaceAnnotations};
use kube_ovn_api::crd::conditions::{self, ConditionStatus, ERROR, READY};
use kube_ovn_api::crd::IpCount;
use kube_ovn_api::crd::{IPPool, IPPoolStatus};

/// The finalizer Kube-OVN's controller puts on the objects it cleans up after.
pub const FINALIZER: &str = super::subnet::FINALIZER;
/// Condition and Event reason of a pool the IPAM accepted.
pub const REASON_SUCCEEDED: &str = "UpdateIPAMSucceeded";
/// Condition and Event reason of a pool the IPAM refused.
pub const REASON_FAILED: &str = "UpdateIPAMFailed";

/// How soon a refused pool is tried again: its subnet may appear or change.
const REFUSED_RECHECK: Duration = Duration::from_secs(30);
/// How often an accepted pool's usage figures are refreshed.
const USAGE_REFRESH: Duration = Duration::from_secs(60);

/// Why a reconcile failed; it is retried.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IPPoolError {
    /// Reading or writing the API server failed.
    #[error("ippool {pool}: {what} failed")]
    Api {
        /// The pool.
        pool: String,
        /// What was being done.
        what: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Adding or removing the finalizer failed, or the step it guards did.
    #[error("ippool {pool}: finalizer {FINALIZER}")]
    Finalizer {
        /// The pool.
        pool: String,
        /// Why.
        #[source]
        source: Box<kube::runtime::finalizer::Error<IPPoolError>>,
    },
}

/// What one apply did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolApply {
    /// The IPAM's refusal, reported in the conditions (None: accepted).
    pub refused: Option<String>,
    /// Whether the status was written.
    pub status_written: bool,
    /// Namespaces whose `ip_pool` annotation was patched.
    pub namespaces_patched: usize,
}

fn api_err(pool: &str, what: &'static str) -> impl FnOnce(kube::Error) -> IPPoolError {
    let pool = pool.to_owned();
    move |source| IPPoolError::Api { pool, what, source }
}

/// Registers `pool` in the IPAM, writes its status and binds its namespaces.
pub async fn apply(ctx: &Context, pool: &IPPool) -> Result<PoolApply, IPPoolError> {
    let name = pool.name_any();
    let spec = ipam::PoolSpec {
        ips: pool.spec.ips.clone(),
    };
    let mut report = PoolApply::default();
    match ctx.ipam.add_or_update_pool(&pool.spec.subnet, &name, &spec) {
        Err(err) => {
            let message = err.to_string();
            tracing::warn!(ippool = %name, error = %message, "the IPAM refused the IP pool; nothing changed");
            report.status_written = write_status(ctx, pool, Some(&message)).await?;
            if report.status_written {
                ctx.events
                    .record(pool, EventKind::Warning, REASON_FAILED, &message)
                    .await;
            }
            report.refused = Some(message);
        }
        Ok(()) => {
            report.status_written = write_status(ctx, pool, None).await?;
            report.namespaces_patched = bind_namespaces(ctx, &name).await?;
        }
    }
    tracing::info!(ippool = %name, ?report, "ippool reconciled");
    Ok(report)
}

/// The pool's usage figures and conditions; whether anything changed and was written.
async fn write_status(
    ctx: &Context,
    pool: &IPPool,
    refused: Option<&str>,
) -> Result<bool, IPPoolError> {
    let name = pool.name_any();
    let old = pool.status.clone().unwrap_or_default();
    let mut status = old.clone();
    if refused.is_none() {
        if let Ok(usage) = ctx.ipam.pool_usage(&pool.spec.subnet, &name) {
            let u = usage.pool_status();
            status.v4_available_ips = Some(IpCount(u.v4_available_ips));
            status.v4_available_ip_range = Some(u.v4_available_ip_range);
            status.v4_using_ips = Some(IpCount(u.v4_using_ips));
            status.v4_using_ip_range = Some(u.v4_using_ip_range);
            status.v6_available_ips = Some(IpCount(u.v6_available_ips));
            status.v6_available_ip_range = Some(u.v6_available_ip_range);
            status.v6_using_ips = Some(IpCount(u.v6_using_ips));
            status.v6_using_ip_range = Some(u.v6_using_ip_range);
        }
    }
    set_conditions(&mut status, refused);
    if status == old {
        return Ok(false);
    }
    let patch = json!({ "status": status });
    Api::<IPPool>::all(ctx.client.clone())
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(api_err(&name, "status write"))?;
    Ok(true)
}

/// Kube-OVN's `Ready()` / `SetError()` + `NotReady()`.
fn set_conditions(status: &mut IPPoolStatus, refused: Option<&str>) {
    let now = || Time(k8s_openapi::jiff::Timestamp::now());
    let (t, f) = (ConditionStatus::True, ConditionStatus::False);
    let conds = &mut status.conditions;
    match refused {
        Some(message) => {
            conditions::set(conds, ERROR, t, REASON_FAILED, message, now());
            conditions::set(conds, READY, f, REASON_FAILED, message, now());
        }
        None => {
            conditions::set(conds, ERROR, f, REASON_SUCCEEDED, "", now());
            conditions::set(conds, READY, t, REASON_SUCCEEDED, "", now());
        }
    }
}

/// The `ip_pool` value a namespace should carry: the names of the pools (not being
/// deleted) that list it, sorted; `None` when no pool does.
pub fn pools_of(namespace: &str, pools: &[IPPool]) -> Option<Names> {
    let mut names: Vec<String> = pools
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.spec.namespaces.iter().any(|n| n == namespace))
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    (!names.is_empty()).then_some(Names(names))
}

/// Patches `ip_pool` on every namespace whose value should change because of `pool`
/// (those it lists and those naming it); how many were patched.
async fn bind_namespaces(ctx: &Context, pool: &str) -> Result<usize, IPPoolError> {
    let pools = Api::<IPPool>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await
        .map_err(api_err(pool, "listing ippools"))?
        .items;
    let ns_api = Api::<Namespace>::all(ctx.client.clone());
    let namespaces = ns_api
        .list(&ListParams::default())
        .await
        .map_err(api_err(pool, "listing namespaces"))?
        .items;
    let key = NamespaceAnnotations::ip_pool_key();
    let mut patched = 0;
    for ns in &namespaces {
        let name = ns.name_any();
        let map: AnnotationMap = ns
            .annotations()
            .clone()
            .into_iter()
            .collect::<BTreeMap<_, _>>();
        let (current, _) = NamespaceAnnotations::parse_lenient(&map);
        let names_it = current
            .ip_pool
            .as_ref()
            .is_some_and(|n| n.0.iter().any(|p| p == pool));
        let listed = pools
            .iter()
            .any(|p| p.name_any() == pool && p.spec.namespaces.contains(&name));
        if !names_it && !listed {
            continue;
        }
        let wanted = NamespaceAnnotations {
            ip_pool: pools_of(&name, &pools),
            ..NamespaceAnnotations::default()
        };
        let mut rendered = AnnotationMap::new();
        wanted.write_into(&mut rendered);
        if map.get(&key) == rendered.get(&key) {
            continue;
        }
        let value = rendered
            .get(&key)
            .map_or(Value::Null, |v| Value::String(v.clone()));
        let patch = json!({ "metadata": { "annotations": { key.clone(): value } } });
        ns_api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(api_err(pool, "namespace annotation patch"))?;
        tracing::info!(namespace = %name, ippool = pool, "namespace ip_pool binding updated");
        patched += 1;
    }
    Ok(patched)
}

/// Returns the pool's addresses to the subnet's default pool and unbinds its
/// namespaces.
pub async fn cleanup(ctx: &Context, pool: &IPPool) -> Result<usize, IPPoolError> {
    let name = pool.name_any();
    if let Err(err) = ctx.ipam.delete_pool(&pool.spec.subnet, &name) {
        // never registered (refused) or its subnet is gone: nothing to return
        tracing::debug!(ippool = %name, error = %err, "no pool to remove from the IPAM");
    }
    let patched = bind_namespaces(ctx, &name).await?;
    tracing::info!(ippool = %name, patched, "ippool removed");
    Ok(patched)
}

/// The reconcile `kube::runtime::Controller` runs: finalizer first, then [`apply`]
/// or [`cleanup`].
pub async fn reconcile(pool: Arc<IPPool>, ctx: Arc<Context>) -> Result<Action, IPPoolError> {
    let name = pool.name_any();
    let api = Api::<IPPool>::all(ctx.client.clone());
    finalizer(&api, FINALIZER, pool, |event| async {
        match event {
            Event::Apply(pool) => {
                let report = apply(&ctx, &pool).await?;
                Ok(Action::requeue(match report.refused {
                    Some(_) => REFUSED_RECHECK,
                    None => USAGE_REFRESH,
                }))
            }
            Event::Cleanup(pool) => {
                cleanup(&ctx, &pool).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|source| IPPoolError::Finalizer {
        pool: name,
        source: Box::new(source),
    })
}

/// Retries a failed reconcile after a pause.
pub fn error_policy(pool: Arc<IPPool>, error: &IPPoolError, _ctx: Arc<Context>) -> Action {
    tracing::warn!(ippool = %pool.name_any(), error = %error, "ippool reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}

/// Reconciles IPPools until the returned future is dropped or the process is
/// signalled; a namespace change re-reconciles the pools listing it.
pub async fn run(ctx: Arc<Context>) {
    let pools: Api<IPPool> = Api::all(ctx.client.clone());
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    let controller = Controller::new(pools, watcher::Config::default());
    let store = controller.store();
    controller
        .watches(
            namespaces,
            watcher::Config::default(),
            move |ns: Namespace| {
                let name = ns.metadata.name.unwrap_or_default();
                store
                    .state()
                    .into_iter()
                    .filter(|p| p.spec.namespaces.contains(&name))
                    .map(|p| ObjectRef::from_obj(&*p))
                    .collect::<Vec<_>>()
            },
        )
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "ippool controller event");
            }
        })
        .await;
}
