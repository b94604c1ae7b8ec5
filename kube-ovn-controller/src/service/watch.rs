//! The Service reconciler under kube-runtime's [`Controller`]: one watch of Services
//! and one of EndpointSlices, each applied to its reflector store here, and one
//! scheduler of Service keys ([`ObjectRef<Service>`]) fed by both (a slice names its
//! Service in the `kubernetes.io/service-name` label). The scheduler coalesces a key
//! queued again before it runs, and never runs one key twice at once, so a burst of
//! endpoint churn on one Service becomes one reconcile, one transaction.
//!
//! A failed reconcile is retried through [`error_policy`] without waiting for a new
//! event: after [`RETRY_MIN`](crate::retry::RETRY_MIN), doubling with each failure of the same key in a row up
//! to [`RETRY_MAX`](crate::retry::RETRY_MAX).
//!
//! A deleted Service is not in the store any more, so the runtime would not reconcile
//! its key: its deletion queues instead the [orphan sweep](orphans_key), which removes
//! every VIP in the service CIDR that no live Service holds. The sweep's key stands
//! for a stand-in object without namespace (no real Service has one) kept in the
//! store; it is also queued after every full list of Services (at start-up, for the
//! Services deleted while the controller was down, and after a watch had to list
//! again, for those deleted while it could not see).

use kube_ovn_cmd::Causes;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, Controller, WatchStreamExt};

use super::desired::{balancer_for, cluster_ips, has_cluster_ips, service_vips, slice_service};
use super::reconcile::{service_name, sync_orphans, sync_service, ServiceError, SyncReport};
use crate::Context;

/// Reconciles running at once (each touches only its own Service's keys).
pub const CONCURRENCY: u16 = 16;
use crate::retry::retry_delay;

/// The name of the orphan sweep's stand-in Service (it has no namespace).
const ORPHANS: &str = "orphan-vips";

/// The key of the orphan sweep: removing the VIPs no live Service holds.
pub fn orphans_key() -> ObjectRef<Service> {
    ObjectRef::new(ORPHANS)
}

/// The stand-in object of [`orphans_key`] (the scheduler reconciles objects of its
/// store only).
fn orphans_object() -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(ORPHANS.to_string()),
            ..ObjectMeta::default()
        },
        ..Service::default()
    }
}

/// Each Service's EndpointSlices, kept beside the slice store so that a reconcile
/// reads its own slices without a scan of all of them.
#[derive(Debug, Default)]
struct SliceIndex {
    by_service: HashMap<ObjectRef<Service>, HashSet<ObjectRef<EndpointSlice>>>,
    service_of: HashMap<ObjectRef<EndpointSlice>, ObjectRef<Service>>,
}

impl SliceIndex {
    fn remove(&mut self, slice: &ObjectRef<EndpointSlice>) {
        if let Some(service) = self.service_of.remove(slice) {
            if let Some(slices) = self.by_service.get_mut(&service) {
                slices.remove(slice);
                if slices.is_empty() {
                    self.by_service.remove(&service);
                }
            }
        }
    }

    fn insert(&mut self, slice: &EndpointSlice) {
        let key = ObjectRef::from_obj(slice);
        self.remove(&key);
        if let Some(service) = slice_service(slice) {
            self.by_service
                .entry(service.clone())
                .or_default()
                .insert(key.clone());
            self.service_of.insert(key, service);
        }
    }

    /// Follows one event already applied to `store`.
    fn apply(&mut self, event: &watcher::Event<EndpointSlice>, store: &Store<EndpointSlice>) {
        match event {
            watcher::Event::Apply(slice) => self.insert(slice),
            watcher::Event::Delete(slice) => self.remove(&ObjectRef::from_obj(slice)),
            // a new full list replaced the store: index it again
            watcher::Event::InitDone => {
                *self = SliceIndex::default();
                for slice in store.state() {
                    self.insert(&slice);
                }
            }
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }
}

/// The caches a reconcile reads.
pub struct Caches {
    /// Services, and the orphan sweep's stand-in.
    pub services: Store<Service>,
    /// EndpointSlices.
    pub slices: Store<EndpointSlice>,
    index: Mutex<SliceIndex>,
}

impl Caches {
    /// The live Services (the store without the orphan sweep's stand-in).
    fn live(&self) -> impl Iterator<Item = Arc<Service>> {
        self.services
            .state()
            .into_iter()
            .filter(|s| s.metadata.namespace.is_some())
    }

    /// The cluster IPs of every live Service with VIPs.
    pub fn live_ips(&self) -> HashSet<IpAddr> {
        self.live().flat_map(|s| cluster_ips(&s).0).collect()
    }

    /// Per session balancer, the longest ClientIP timeout of its Services.
    pub fn session_timeouts(&self, ctx: &Context) -> BTreeMap<String, i32> {
        let lbs = &ctx.config.load_balancers;
        let mut out: BTreeMap<String, i32> = BTreeMap::new();
        for svc in self.live() {
            let wanted = service_vips(&svc, &[], lbs);
            let Some(timeout) = wanted.affinity_timeout.filter(|_| has_cluster_ips(&svc)) else {
                continue;
            };
            for port in svc.spec.iter().flat_map(|s| s.ports.iter().flatten()) {
                let lb = balancer_for(lbs, port.protocol.as_deref().unwrap_or("TCP"), true);
                let slot = out.entry(lb.to_string()).or_insert(timeout);
                *slot = (*slot).max(timeout);
            }
        }
        out
    }

    /// The EndpointSlices of `service`.
    fn slices_of(&self, service: &ObjectRef<Service>) -> Vec<Arc<EndpointSlice>> {
        let index = self.index.lock().expect("slice index lock");
        index
            .by_service
            .get(service)
            .into_iter()
            .flatten()
            .filter_map(|slice| self.slices.get(slice))
            .collect()
    }
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("services", &self.services.len())
            .field("slices", &self.slices.len())
            .finish()
    }
}

/// What the reconciler's runs share.
#[derive(Debug)]
pub struct ServiceContext {
    /// The controller's context (NB, config).
    pub ctx: Arc<Context>,
    /// The Service and EndpointSlice caches.
    pub caches: Caches,
    /// Failures in a row per key, for the retry delay.
    failures: Mutex<HashMap<ObjectRef<Service>, u32>>,
}

impl ServiceContext {
    fn forget_failures(&self, key: &ObjectRef<Service>) {
        self.failures.lock().expect("failures lock").remove(key);
    }

    fn count_failure(&self, key: &ObjectRef<Service>) -> u32 {
        let mut failures = self.failures.lock().expect("failures lock");
        let n = failures.entry(key.clone()).or_default();
        *n = n.saturating_add(1);
        *n
    }
}

/// Reconciles one key: a live Service's VIPs if it has cluster IPs; else (the orphan
/// sweep, a headless or ExternalName Service) the VIPs no live Service holds.
pub async fn reconcile_key(
    ctx: &Context,
    caches: &Caches,
    key: &ObjectRef<Service>,
) -> Result<SyncReport, ServiceError> {
    let lbs = &ctx.config.load_balancers;
    let live = caches
        .services
        .get(key)
        .filter(|s| s.metadata.namespace.is_some() && has_cluster_ips(s));
    let Some(svc) = live else {
        let cidr = &ctx.config.service_cluster_ip_range;
        return sync_orphans(&ctx.nb, lbs, &caches.live_ips(), cidr).await;
    };
    let slices = caches.slices_of(key);
    let refs: Vec<&EndpointSlice> = slices.iter().map(|s| s.as_ref()).collect();
    let wanted = service_vips(&svc, &refs, lbs);
    for problem in &wanted.problems {
        tracing::warn!(service = %service_name(key), %problem, "skipped bad input");
    }
    let timeouts = match wanted.affinity_timeout {
        Some(_) => caches.session_timeouts(ctx),
        None => BTreeMap::new(),
    };
    sync_service(&ctx.nb, lbs, key, &wanted, &timeouts).await
}

/// The name a key is logged by.
fn shown(key: &ObjectRef<Service>) -> String {
    match key.namespace {
        Some(_) => service_name(key),
        None => key.name.clone(),
    }
}

/// The runtime's reconcile: [`reconcile_key`] once both caches are listed.
pub async fn reconcile(
    svc: Arc<Service>,
    sctx: Arc<ServiceContext>,
) -> Result<Action, ServiceError> {
    // nothing is reconciled from half a cache (the runtime waits for the Services)
    sctx.caches
        .slices
        .wait_until_ready()
        .await
        .map_err(ServiceError::SlicesUnlisted)?;
    let key = ObjectRef::from_obj(svc.as_ref());
    let report = reconcile_key(&sctx.ctx, &sctx.caches, &key).await?;
    sctx.forget_failures(&key);
    if key == orphans_key() && report.vips_changed > 0 {
        tracing::info!(?report, "orphan VIPs removed");
    } else {
        tracing::debug!(service = %shown(&key), ?report, "service reconciled");
    }
    Ok(Action::await_change())
}

/// The runtime's error policy: the failure logged once, with its causes, and the key
/// retried after [`retry_delay`] of its failures in a row.
pub fn error_policy(svc: Arc<Service>, error: &ServiceError, sctx: Arc<ServiceContext>) -> Action {
    let key = ObjectRef::from_obj(svc.as_ref());
    let delay = retry_delay(sctx.count_failure(&key));
    tracing::warn!(service = %shown(&key), error = %Causes(error), retry_in = ?delay, "service reconcile failed; retrying");
    Action::requeue(delay)
}

type Triggers<K> = futures::stream::BoxStream<'static, Result<K, watcher::Error>>;

/// The Service watch applied to `writer`, as the keys it queues: an applied Service
/// its own, a deleted one and the end of a full list the orphan sweep.
fn service_triggers(
    api: Api<Service>,
    mut writer: reflector::store::Writer<Service>,
    sctx: Arc<ServiceContext>,
) -> Triggers<Service> {
    watcher(api, watcher::Config::default())
        .default_backoff()
        .flat_map(move |event| {
            let keys = match event {
                Ok(event) => {
                    writer.apply_watcher_event(&event);
                    match event {
                        watcher::Event::Apply(svc) | watcher::Event::InitApply(svc) => {
                            vec![Ok(svc)]
                        }
                        watcher::Event::Delete(svc) => {
                            sctx.forget_failures(&ObjectRef::from_obj(&svc));
                            vec![Ok(orphans_object())]
                        }
                        watcher::Event::InitDone => {
                            // the new list replaced the store, stand-in included
                            let sweep = watcher::Event::Apply(orphans_object());
                            writer.apply_watcher_event(&sweep);
                            vec![Ok(orphans_object())]
                        }
                        watcher::Event::Init => vec![],
                    }
                }
                Err(err) => vec![Err(err)],
            };
            futures::stream::iter(keys)
        })
        .boxed()
}

/// The EndpointSlice watch applied to `writer` and the index, as the slices touched.
fn slice_triggers(
    api: Api<EndpointSlice>,
    mut writer: reflector::store::Writer<EndpointSlice>,
    sctx: Arc<ServiceContext>,
) -> Triggers<EndpointSlice> {
    watcher(api, watcher::Config::default())
        .default_backoff()
        .map(move |event| {
            if let Ok(event) = &event {
                writer.apply_watcher_event(event);
                let mut index = sctx.caches.index.lock().expect("slice index lock");
                index.apply(event, &sctx.caches.slices);
            }
            event
        })
        .touched_objects()
        .boxed()
}

/// Logs what the runtime reports besides reconciles (watch errors, keys whose
/// Service went away before its turn).
fn log_outcome<E: std::error::Error + 'static>(result: Result<impl Sized, E>) {
    if let Err(err) = result {
        tracing::debug!(error = %Causes(&err), "service controller");
    }
}

/// Reconciles Services into the cluster load balancers until the returned future is
/// dropped or the process is signalled (then the reconciles under way finish first).
pub async fn run(ctx: Arc<Context>) {
    let (services, svc_writer) = reflector::store::<Service>();
    let (slices, eps_writer) = reflector::store::<EndpointSlice>();
    let sctx = Arc::new(ServiceContext {
        ctx: ctx.clone(),
        caches: Caches {
            services: services.clone(),
            slices,
            index: Mutex::default(),
        },
        failures: Mutex::default(),
    });
    let svc_api = Api::<Service>::all(ctx.client.clone());
    let eps_api = Api::<EndpointSlice>::all(ctx.client.clone());
    Controller::for_stream(
        service_triggers(svc_api, svc_writer, sctx.clone()),
        services,
    )
    .watches_stream(slice_triggers(eps_api, eps_writer, sctx.clone()), |slice| {
        slice_service(&slice)
    })
    .with_config(controller::Config::default().concurrency(CONCURRENCY))
    .graceful_shutdown_on(kube_ovn_cmd::shutdown_signal())
    .run(reconcile, error_policy, sctx)
    .for_each(|result| async move { log_outcome(result) })
    .await;
    tracing::info!("service reconciler stopped");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_orphan_sweep_key_is_no_real_service() {
        let sweep = orphans_key();
        assert_eq!(ObjectRef::from_obj(&orphans_object()), sweep);
        assert!(sweep.namespace.is_none(), "every Service has a namespace");
    }

    #[test]
    fn slices_are_indexed_by_their_service_label() {
        let slice = |name: &str, svc: &str| -> EndpointSlice {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "default",
                             "labels": {"kubernetes.io/service-name": svc}},
                "addressType": "IPv4", "endpoints": [],
            }))
            .expect("a slice")
        };
        let web = ObjectRef::<Service>::new("web").within("default");
        let db = ObjectRef::<Service>::new("db").within("default");
        let mut index = SliceIndex::default();
        index.insert(&slice("web-a", "web"));
        index.insert(&slice("web-b", "web"));
        assert_eq!(index.by_service[&web].len(), 2);
        // relabelled to another Service: moves
        index.insert(&slice("web-b", "db"));
        assert_eq!(index.by_service[&web].len(), 1);
        assert_eq!(index.by_service[&db].len(), 1);
        index.remove(&ObjectRef::from_obj(&slice("web-a", "web")));
        assert!(!index.by_service.contains_key(&web));
    }
}
