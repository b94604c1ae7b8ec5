//! The controller's reflector caches (Kube-OVN's informer listers): one watch per kind
//! the reconcilers read, kept in kube-rs reflector stores, so a reconcile reads its
//! namespace, subnet, IP pools and IP object from memory instead of asking the API
//! server each time, and the start-up IPAM rebuild and the garbage collector read the
//! same lists instead of listing 100,000 pods three times.
//!
//! The Pod store is shared: the Pod reconciler is driven by the very watch that fills
//! it ([`PodEvents`]), so a pod is in the store before its reconcile writes a port
//! for it; the garbage collector, which reads NB first and the store
//! after, then never judges a port against a store that has not seen its pod yet.
//!
//! A store that has no answer (not filled yet, or an object created a moment ago) is
//! not taken as the truth where that matters: [`Context`](super::Context)'s lookups
//! fall back to the API server on a miss.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::{mpsc, Notify};

use kube_ovn_api::crd::{IPPool, Subnet, IP};

/// The reflector stores the reconcilers read.
#[derive(Clone)]
pub struct Caches {
    /// Every pod (the Pod reconciler's own store too).
    pub pods: Store<Pod>,
    /// Every namespace.
    pub namespaces: Store<Namespace>,
    /// Every node.
    pub nodes: Store<Node>,
    /// Every Subnet.
    pub subnets: Store<Subnet>,
    /// Every IPPool.
    pub ippools: Store<IPPool>,
    /// Every IP object.
    pub ips: Store<IP>,
}

impl std::fmt::Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("pods", &self.pods.len())
            .field("namespaces", &self.namespaces.len())
            .field("nodes", &self.nodes.len())
            .field("subnets", &self.subnets.len())
            .field("ippools", &self.ippools.len())
            .field("ips", &self.ips.len())
            .finish()
    }
}

type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A queue of pods handed out by the controller's Pod watch. Unbounded (a pointer per
/// pod): the watch never waits for a consumer, so the stores stay current while the
/// consumer catches up.
pub struct PodQueue(mpsc::UnboundedReceiver<Arc<Pod>>);

impl Stream for PodQueue {
    type Item = Arc<Pod>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Arc<Pod>>> {
        self.0.poll_recv(cx)
    }
}

impl std::fmt::Debug for PodQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PodQueue({} queued)", self.0.len())
    }
}

/// The pods the Pod store applies, in order, each as the store holds it: the Pod
/// reconciler's trigger. The listed pods come once the store holds the whole list
/// (so the start-up may read the store while the reconciler waits); later changes
/// come one by one.
///
/// kube-rs's own shared streams (`ReflectHandle`) were tried first: one stalls for
/// good when a pod leaves the store between its event and its read, which churn
/// does.
pub type PodEvents = PodQueue;

/// The pods the Pod watch saw deleted, each in its last state: the deleted-pod
/// worker's queue (Kube-OVN's `deletePodQueue`).
pub type DeletedPods = PodQueue;

/// What wakes the NetworkPolicy reconciler: any pod, namespace or node change the
/// caches applied. Changes that come while it is busy wake it once.
#[derive(Debug, Clone)]
pub struct PolicyTriggers(Arc<Notify>);

impl PolicyTriggers {
    /// A stream that yields once after each run of changes.
    pub fn wakes(self) -> impl Stream<Item = ()> + Send + 'static {
        futures::stream::unfold(self.0, |notify| async move {
            notify.notified().await;
            Some(((), notify))
        })
    }
}

/// What keeps the caches filled, and the reconcilers' triggers.
#[derive(Debug)]
pub struct CacheFeeds {
    /// The Pod reconciler's trigger (see [`PodEvents`]).
    pub pod_events: PodEvents,
    /// The pods deleted (see [`DeletedPods`]).
    pub deleted_pods: DeletedPods,
    /// The NetworkPolicy reconciler's trigger.
    pub policy_triggers: PolicyTriggers,
    /// The watches.
    pub watches: CacheWatches,
}

/// The watches that fill the stores.
pub struct CacheWatches(Vec<Driver>);

impl std::fmt::Debug for CacheWatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CacheWatches({})", self.0.len())
    }
}

impl CacheWatches {
    /// Runs every watch until the future is dropped (each retries with kube-rs's
    /// default backoff on errors).
    pub async fn drive(self) {
        futures::future::join_all(self.0).await;
    }
}

/// A watch of every `K` into `writer`, without `managedFields` (nobody here reads
/// them, and they are the bulk of a cached object); `on_event` sees each event once
/// the store has applied it.
fn feed<K, F>(client: &Client, writer: reflector::store::Writer<K>, mut on_event: F) -> Driver
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync,
    K: 'static,
    F: FnMut(&watcher::Event<K>) + Send + 'static,
{
    let api: Api<K> = Api::all(client.clone());
    let kind = K::kind(&()).into_owned();
    let events = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|obj: &mut K| obj.managed_fields_mut().clear())
        .reflect(writer);
    Box::pin(events.for_each(move |event| {
        match event {
            Ok(event) => on_event(&event),
            Err(err) => {
                tracing::warn!(kind = %kind, error = %err, "cache watch failed; retrying");
            }
        }
        futures::future::ready(())
    }))
}

/// An event handler that only wakes `notify`.
fn wake<K>(notify: &Arc<Notify>) -> impl FnMut(&watcher::Event<K>) + Send + 'static {
    let notify = notify.clone();
    move |_| notify.notify_one()
}

impl Caches {
    /// The stores, the triggers and the watches that fill them; nothing runs until
    /// [`CacheWatches::drive`] is polled.
    pub fn start(client: &Client) -> (Caches, CacheFeeds) {
        let (pods, pod_writer) = reflector::store::<Pod>();
        let (namespaces, ns_writer) = reflector::store::<Namespace>();
        let (nodes, node_writer) = reflector::store::<Node>();
        let (subnets, subnet_writer) = reflector::store::<Subnet>();
        let (ippools, pool_writer) = reflector::store::<IPPool>();
        let (ips, ip_writer) = reflector::store::<IP>();
        let (pod_tx, pod_rx) = mpsc::unbounded_channel();
        let (deleted_tx, deleted_rx) = mpsc::unbounded_channel();
        let notify = Arc::new(Notify::new());
        let pod_feed = {
            let (store, notify) = (pods.clone(), notify.clone());
            move |event: &watcher::Event<Pod>| {
                // a closed channel: the Pod reconciler is not running (tests, a stop)
                match event {
                    watcher::Event::Apply(pod) => {
                        if let Some(held) = store.get(&reflector::ObjectRef::from_obj(pod)) {
                            let _ = pod_tx.send(held);
                        }
                    }
                    watcher::Event::InitDone => {
                        for held in store.state() {
                            let _ = pod_tx.send(held);
                        }
                    }
                    watcher::Event::Delete(pod) => {
                        let _ = deleted_tx.send(Arc::new(pod.clone()));
                    }
                    watcher::Event::Init | watcher::Event::InitApply(_) => {}
                }
                notify.notify_one();
            }
        };
        let drivers = vec![
            feed(client, pod_writer, pod_feed),
            feed(client, ns_writer, wake(&notify)),
            feed(client, node_writer, wake(&notify)),
            feed(client, subnet_writer, |_: &_| {}),
            feed(client, pool_writer, |_: &_| {}),
            feed(client, ip_writer, |_: &_| {}),
        ];
        let caches = Caches {
            pods,
            namespaces,
            nodes,
            subnets,
            ippools,
            ips,
        };
        (
            caches,
            CacheFeeds {
                pod_events: PodQueue(pod_rx),
                deleted_pods: PodQueue(deleted_rx),
                policy_triggers: PolicyTriggers(notify),
                watches: CacheWatches(drivers),
            },
        )
    }

    /// Waits until every store holds its kind's first full list.
    pub async fn wait_until_ready(&self) {
        // a writer is dropped only with its feeds, i.e. when the controller stops
        let _ = futures::join!(
            self.pods.wait_until_ready(),
            self.namespaces.wait_until_ready(),
            self.nodes.wait_until_ready(),
            self.subnets.wait_until_ready(),
            self.ippools.wait_until_ready(),
            self.ips.wait_until_ready(),
        );
    }
}

/// A kind the caches hold: its store.
pub trait Cached: Resource<DynamicType = ()> + Clone + 'static {
    /// Its store in `caches`.
    fn store(caches: &Caches) -> &Store<Self>;
}

macro_rules! cached {
    ($($kind:ty => $field:ident),* $(,)?) => {
        $(impl Cached for $kind {
            fn store(caches: &Caches) -> &Store<Self> {
                &caches.$field
            }
        })*
    };
}

cached!(
    Pod => pods,
    Namespace => namespaces,
    Node => nodes,
    Subnet => subnets,
    IPPool => ippools,
    IP => ips,
);

/// The object `name` (in `namespace`, for a namespaced kind) as the store holds it.
pub fn cached<K: Cached>(caches: &Caches, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
    let mut key = reflector::ObjectRef::<K>::new(name);
    if let Some(ns) = namespace {
        key = key.within(ns);
    }
    K::store(caches).get(&key)
}
