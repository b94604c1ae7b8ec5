//! The reconciler's loop: reflector stores of Pods, Namespaces, NetworkPolicies and
//! Nodes (for node access),
//! and one [`sync`] pass from their contents for each burst of events: an event after
//! a quiet spell starts a pass at once; events that arrive while a pass runs, or
//! within [`SETTLE`] after it, are taken together by the next one. The first pass
//! waits until all three stores hold a full list, so nothing is removed for want of a
//! list.
//!
//! A pass that fails (NB unreachable, a transaction refused) is run again on a timer,
//! with or without a new event: after [`RETRY_MIN`](crate::retry::RETRY_MIN), doubling with each failure in a
//! row up to [`RETRY_MAX`](crate::retry::RETRY_MAX), back to [`RETRY_MIN`](crate::retry::RETRY_MIN) once a pass succeeds ([`Backoff`]).
//! An event that comes before the timer runs the pass at once, as always.

use kube_ovn_cmd::Causes;
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
use crate::retry::Backoff;

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
        () = kube_ovn_cmd::shutdown_signal() => {}
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

/// Whether `store` holds a full list.
fn listed<K>(store: &Store<K>) -> bool
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    store
        .wait_until_ready()
        .now_or_never()
        .is_some_and(|r| r.is_ok())
}

async fn follow(ctx: Arc<Context>, triggers: Option<PolicyTriggers>) {
    let (pods, namespaces, nodes, [pod_events, ns_events, node_events]) =
        cluster_stores(&ctx, triggers);
    let (policies, np_events) = reflect(Api::<NetworkPolicy>::all(ctx.client.clone()));
    let mut events =
        futures::stream::select_all([pod_events, ns_events, np_events.boxed(), node_events]);
    let families = families_of(&ctx.config.default_subnet.cidr);
    let mut rested = tokio::time::Instant::now();
    let mut backoff = Backoff::default();
    // when a failed pass is due again; None while the last pass succeeded
    let mut retry_at: Option<tokio::time::Instant> = None;
    loop {
        let retry = async {
            match retry_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => futures::future::pending().await,
            }
        };
        tokio::select! {
            event = events.next() => if event.is_none() { return },
            () = retry => {}
        }
        // at once after a quiet spell (a policy written alone shows in NB without a
        // wait); right after another pass, the rest lets a burst gather first
        tokio::time::sleep_until(rested).await;
        while let Some(Some(())) = events.next().now_or_never() {}
        if !(listed(&pods) && listed(&namespaces) && listed(&policies) && listed(&nodes)) {
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
                backoff.succeeded();
                retry_at = None;
                tracing::debug!(?report.policy_ops, ?report.member_ops, "network policies synced")
            }
            Err(err) => {
                let delay = backoff.failed();
                retry_at = Some(tokio::time::Instant::now() + delay);
                tracing::warn!(error = %Causes(&err), retry_in = ?delay, "network policy pass failed; retrying");
            }
        }
    }
}
