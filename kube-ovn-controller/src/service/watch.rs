//! The Service reconciler's loop: reflectors of Services and EndpointSlices, and one
//! queue of Service keys fed by both (a slice names its Service in the
//! `kubernetes.io/service-name` label). Keys are deduplicated while they wait, so a
//! burst of endpoint churn on one Service becomes one reconcile, one transaction.
//!
//! A deleted Service is a key whose Service is gone: its VIPs are removed as orphans
//! (in the service CIDR, held by no live Service). The same clean-up runs once when
//! both caches are first complete, for the Services deleted while the controller was
//! down.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use tokio::sync::Notify;

use super::desired::{
    balancer_for, cluster_ips, has_cluster_ips, object_key, service_vips, slice_service_key,
};
use super::reconcile::{sync_orphans, sync_service, ServiceError, SyncReport};
use crate::Context;

/// Transactions in flight at once (each touches only its own Service's keys).
const CONCURRENCY: usize = 16;
/// How soon a failed reconcile is retried.
const RETRY: Duration = Duration::from_secs(2);

/// Service keys waiting, and whether an orphan clean-up is due.
#[derive(Debug, Default)]
pub struct Queue {
    waiting: Mutex<(BTreeSet<String>, bool)>,
    notify: Notify,
}

impl Queue {
    /// Queues a Service key (once, however often it is pushed before it is taken).
    pub fn push(&self, key: String) {
        self.waiting.lock().expect("queue lock").0.insert(key);
        self.notify.notify_one();
    }

    /// Asks for an orphan clean-up.
    pub fn push_orphans(&self) {
        self.waiting.lock().expect("queue lock").1 = true;
        self.notify.notify_one();
    }

    /// Waits for work and takes all of it.
    pub async fn take(&self) -> (Vec<String>, bool) {
        loop {
            {
                let mut waiting = self.waiting.lock().expect("queue lock");
                if !waiting.0.is_empty() || waiting.1 {
                    let keys = std::mem::take(&mut waiting.0).into_iter().collect();
                    return (keys, std::mem::take(&mut waiting.1));
                }
            }
            self.notify.notified().await;
        }
    }
}

/// The caches one batch of reconciles reads.
pub struct Caches {
    /// Services.
    pub services: Store<Service>,
    /// EndpointSlices.
    pub slices: Store<EndpointSlice>,
}

impl Caches {
    /// The cluster IPs of every live Service with VIPs.
    pub fn live_ips(&self) -> HashSet<IpAddr> {
        self.services
            .state()
            .iter()
            .flat_map(|s| cluster_ips(s).0)
            .collect()
    }

    /// Per session balancer, the longest ClientIP timeout of its Services.
    pub fn session_timeouts(&self, ctx: &Context) -> BTreeMap<String, i32> {
        let lbs = &ctx.config.load_balancers;
        let mut out: BTreeMap<String, i32> = BTreeMap::new();
        for svc in self.services.state() {
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

    /// The EndpointSlices of each of `keys`.
    fn slices_of(&self, keys: &HashSet<&str>) -> HashMap<String, Vec<Arc<EndpointSlice>>> {
        let mut out: HashMap<String, Vec<Arc<EndpointSlice>>> = HashMap::new();
        for slice in self.slices.state() {
            if let Some(key) = slice_service_key(&slice).filter(|k| keys.contains(k.as_str())) {
                out.entry(key).or_default().push(slice);
            }
        }
        out
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

fn service_ref(key: &str) -> ObjectRef<Service> {
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    ObjectRef::new(name).within(ns)
}

/// Reconciles one Service key: its VIPs if it is live with cluster IPs, else the
/// orphans it may have left.
pub async fn reconcile_key(
    ctx: &Context,
    caches: &Caches,
    key: &str,
    slices: &[Arc<EndpointSlice>],
) -> Result<SyncReport, ServiceError> {
    let lbs = &ctx.config.load_balancers;
    let Some(svc) = caches
        .services
        .get(&service_ref(key))
        .filter(|s| has_cluster_ips(s))
    else {
        let cidr = &ctx.config.service_cluster_ip_range;
        return sync_orphans(&ctx.nb, lbs, &caches.live_ips(), cidr).await;
    };
    let refs: Vec<&EndpointSlice> = slices.iter().map(|s| s.as_ref()).collect();
    let wanted = service_vips(&svc, &refs, lbs);
    for problem in &wanted.problems {
        tracing::warn!(service = %key, %problem, "skipped bad input");
    }
    let timeouts = match wanted.affinity_timeout {
        Some(_) => caches.session_timeouts(ctx),
        None => BTreeMap::new(),
    };
    let report = sync_service(&ctx.nb, lbs, key, &wanted, &timeouts).await?;
    tracing::debug!(service = %key, ?report, "service reconciled");
    Ok(report)
}

/// Takes batches from the queue and reconciles them until dropped; failed keys are
/// queued again after [`RETRY`].
pub async fn work(ctx: Arc<Context>, caches: Arc<Caches>, queue: Arc<Queue>) {
    loop {
        let (keys, orphans) = queue.take().await;
        if orphans {
            let live = caches.live_ips();
            let cidr = &ctx.config.service_cluster_ip_range;
            match sync_orphans(&ctx.nb, &ctx.config.load_balancers, &live, cidr).await {
                Ok(report) => tracing::info!(?report, "orphan VIPs removed"),
                Err(err) => {
                    tracing::warn!(error = %err, "orphan clean-up failed; retrying");
                    requeue(queue.clone(), None);
                }
            }
        }
        let mut slices = {
            let wanted: HashSet<&str> = keys.iter().map(String::as_str).collect();
            caches.slices_of(&wanted)
        };
        let jobs: Vec<(String, Vec<Arc<EndpointSlice>>)> = keys
            .into_iter()
            .map(|key| {
                let of = slices.remove(&key).unwrap_or_default();
                (key, of)
            })
            .collect();
        futures::stream::iter(jobs)
            .map(|(key, of)| {
                let (ctx, caches) = (ctx.clone(), caches.clone());
                async move {
                    let result = reconcile_key(&ctx, &caches, &key, &of).await;
                    (key, result)
                }
            })
            .buffer_unordered(CONCURRENCY)
            .for_each(|(key, result)| {
                if let Err(err) = result {
                    tracing::warn!(service = %key, error = %err, "service reconcile failed; retrying");
                    requeue(queue.clone(), Some(key));
                }
                async {}
            })
            .await;
    }
}

fn requeue(queue: Arc<Queue>, key: Option<String>) {
    tokio::spawn(async move {
        tokio::time::sleep(RETRY).await;
        match key {
            Some(key) => queue.push(key),
            None => queue.push_orphans(),
        }
    });
}

/// Feeds `queue` from a reflected watch of `K`; `key_of` names the Service concerned.
async fn feed<K, S>(events: S, queue: Arc<Queue>, key_of: fn(&K) -> Option<String>)
where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    events
        .for_each(|event| {
            match event {
                Ok(watcher::Event::Apply(obj) | watcher::Event::Delete(obj))
                | Ok(watcher::Event::InitApply(obj)) => {
                    if let Some(key) = key_of(&obj) {
                        queue.push(key);
                    }
                }
                Ok(_) => {}
                Err(err) => tracing::debug!(error = %err, "watch error; the watcher retries"),
            }
            async {}
        })
        .await;
}

/// Reconciles Services into the cluster load balancers until the returned future is
/// dropped or the process is signalled.
pub async fn run(ctx: Arc<Context>) {
    let (services, svc_writer) = reflector::store::<Service>();
    let (slices, eps_writer) = reflector::store::<EndpointSlice>();
    let queue = Arc::new(Queue::default());
    let svc_events = watcher(
        Api::<Service>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(svc_writer);
    let eps_events = watcher(
        Api::<EndpointSlice>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .reflect(eps_writer);
    let caches = Arc::new(Caches { services, slices });
    let start = {
        let (caches, queue, ctx) = (caches.clone(), queue.clone(), ctx.clone());
        async move {
            // nothing is reconciled from half a cache: wait for both lists
            if caches.services.wait_until_ready().await.is_err()
                || caches.slices.wait_until_ready().await.is_err()
            {
                return;
            }
            queue.push_orphans();
            work(ctx, caches, queue).await;
        }
    };
    let everything = async {
        futures::join!(
            feed(
                svc_events.map_err(|e| e),
                queue.clone(),
                |s: &Service| Some(object_key(&s.metadata))
            ),
            feed(eps_events, queue.clone(), slice_service_key),
            start,
        );
    };
    tokio::select! {
        () = everything => {}
        () = shutdown_signal() => tracing::info!("service reconciler stopping"),
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => futures::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = futures::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
