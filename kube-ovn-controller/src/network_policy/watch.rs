//! The reconciler's loop: reflector stores of Pods, Namespaces, NetworkPolicies and
//! Nodes (for node access),
//! and one [`sync`] pass from their contents for each burst of events: an event after
//! a quiet spell starts a pass at once; events that arrive while a pass runs, or
//! within [`SETTLE`] after it, are taken together by the next one. The first pass
//! waits until all three stores hold a full list, so nothing is removed for want of a
//! list.

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::Resource;

use super::reconcile::{families_of, sync};
use crate::cache::PolicyTriggers;
use crate::Context;

/// The least time from the end of one pass to the start of the next: under a stream
/// of events, passes take turns with this much rest.
pub const SETTLE: Duration = Duration::from_millis(100);

fn reflect<K>(api: Api<K>) -> (Store<K>, impl Stream<Item = ()> + Send)
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let (store, writer) = reflector::store();
    let events = watcher(api, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .map(|event| {
            if let Err(err) = event {
                tracing::debug!(error = %err, "network policy watch");
            }
        });
    (store, events)
}

/// Keeps NB in line with the cluster's NetworkPolicies until the process is signalled.
/// With `triggers` (and `ctx.caches`), pods, namespaces and nodes are read from the
/// controller's caches and woken by their changes; else this watches them itself.
pub async fn run(ctx: Arc<Context>, triggers: Option<PolicyTriggers>) {
    tokio::select! {
        () = follow(ctx, triggers) => {}
        () = signalled() => {}
    }
}

/// SIGINT or SIGTERM, as the other reconcilers' `shutdown_on_signal`.
async fn signalled() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

type Wakes = futures::stream::BoxStream<'static, ()>;

/// The pod, namespace and node stores and what wakes a pass when they change.
fn cluster_stores(
    ctx: &Context,
    triggers: Option<PolicyTriggers>,
) -> (Store<Pod>, Store<Namespace>, Store<Node>, [Wakes; 3]) {
    if let (Some(caches), Some(t)) = (&ctx.caches, triggers) {
        return (
            caches.pods.clone(),
            caches.namespaces.clone(),
            caches.nodes.clone(),
            // one trigger for the three kinds: the other two never wake
            [
                t.wakes().boxed(),
                futures::stream::pending().boxed(),
                futures::stream::pending().boxed(),
            ],
        );
    }
    let (pods, pod_events) = reflect(Api::<Pod>::all(ctx.client.clone()));
    let (namespaces, ns_events) = reflect(Api::<Namespace>::all(ctx.client.clone()));
    let (nodes, node_events) = reflect(Api::<Node>::all(ctx.client.clone()));
    (
        pods,
        namespaces,
        nodes,
        [pod_events.boxed(), ns_events.boxed(), node_events.boxed()],
    )
}

async fn follow(ctx: Arc<Context>, triggers: Option<PolicyTriggers>) {
    let (pods, namespaces, nodes, [pod_events, ns_events, node_events]) =
        cluster_stores(&ctx, triggers);
    let (policies, np_events) = reflect(Api::<NetworkPolicy>::all(ctx.client.clone()));
    let mut events =
        futures::stream::select_all([pod_events, ns_events, np_events.boxed(), node_events]);
    let families = families_of(&ctx.config.default_subnet.cidr);
    let mut rested = tokio::time::Instant::now();
    while events.next().await.is_some() {
        // at once after a quiet spell (a policy written alone shows in NB without a
        // wait); right after another pass, the rest lets a burst gather first
        tokio::time::sleep_until(rested).await;
        while let Some(Some(())) = events.next().now_or_never() {}
        let ready = pods
            .wait_until_ready()
            .now_or_never()
            .is_some_and(|r| r.is_ok())
            && namespaces
                .wait_until_ready()
                .now_or_never()
                .is_some_and(|r| r.is_ok())
            && policies
                .wait_until_ready()
                .now_or_never()
                .is_some_and(|r| r.is_ok())
            && nodes
                .wait_until_ready()
                .now_or_never()
                .is_some_and(|r| r.is_ok());
        if !ready {
            continue;
        }
        let (p, n, np) = (pods.state(), namespaces.state(), policies.state());
        let no = nodes.state();
        let result = sync(
            &ctx.nb,
            np.iter().map(|o| &**o),
            p.iter().map(|o| &**o),
            n.iter().map(|o| &**o),
            no.iter().map(|o| &**o),
            &families,
        )
        .await;
        rested = tokio::time::Instant::now() + SETTLE;
        match result {
            Ok(report) => {
                tracing::debug!(?report.policy_ops, ?report.member_ops, "network policies synced")
            }
            Err(err) => {
                tracing::warn!(error = %err, "network policy pass failed; retried on the next event")
            }
        }
    }
}
