//! The Subnet reconciler under kube-rs's runtime `Controller`: a watcher and reflector
//! of Subnets, plus a watch of Namespaces that re-reconciles the Subnets listing a
//! changed namespace, and a watch of Nodes that re-reconciles the Subnets naming a
//! changed node as gateway.
//!
//! A Subnet's own updates trigger a reconcile only when they change what the reconcile
//! reads from it ([`trigger_hash`]), not when only its status changes: every pod that
//! takes or gives back an address rewrites its subnet's usage figures, and Kube-OVN's
//! update handler likewise enqueues a Subnet only for a spec change or a deletion.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{watcher, Controller, WatchStreamExt};

use super::gateway::names_node;
use super::reconcile::{error_policy, reconcile};
use crate::Context;
use kube_ovn_api::crd::Subnet;

/// What a Subnet's reconcile reads from the object itself: its spec (through
/// `generation`, or the whole object where the server keeps no generation), its
/// finalizers, deletion, labels and annotations; never its status.
pub fn trigger_hash(subnet: &Subnet) -> Option<u64> {
    let meta = &subnet.metadata;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match meta.generation {
        Some(generation) => generation.hash(&mut hasher),
        None => meta.resource_version.hash(&mut hasher),
    }
    meta.finalizers.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    meta.labels.hash(&mut hasher);
    meta.annotations.hash(&mut hasher);
    Some(hasher.finish())
}

/// Reconciles Subnets until the returned future is dropped or the process is signalled.
pub async fn run(ctx: Arc<Context>) {
    let subnets: Api<Subnet> = Api::all(ctx.client.clone());
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    let (reader, writer) = reflector::store();
    let triggers = watcher(subnets, watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(trigger_hash, Default::default());
    let controller = Controller::for_stream(triggers, reader);
    let store = controller.store();
    let gateway_store = store.clone();
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    controller
        .watches(
            namespaces,
            watcher::Config::default(),
            move |ns: Namespace| {
                let name = ns.metadata.name.unwrap_or_default();
                store
                    .state()
                    .into_iter()
                    .filter(|s| s.spec.namespaces.contains(&name))
                    .map(|s| ObjectRef::from_obj(&*s))
                    .collect::<Vec<_>>()
            },
        )
        // a gateway node's join address (or its removal) changes the subnet's policy
        .watches(nodes, watcher::Config::default(), move |node: Node| {
            let name = node.metadata.name.unwrap_or_default();
            gateway_store
                .state()
                .into_iter()
                .filter(|s| names_node(s, &name))
                .map(|s| ObjectRef::from_obj(&*s))
                .collect::<Vec<_>>()
        })
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "subnet controller event");
            }
        })
        .await;
}
