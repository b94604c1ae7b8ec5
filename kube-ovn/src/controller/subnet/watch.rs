//! The Subnet reconciler under kube-rs's runtime `Controller`: a watcher and reflector
//! of Subnets, plus a watch of Namespaces that re-reconciles the Subnets listing a
//! changed namespace, and a watch of Nodes that re-reconciles the Subnets naming a
//! changed node as gateway.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{watcher, Controller};

use super::gateway::names_node;
use super::reconcile::{error_policy, reconcile};
use crate::controller::Context;
use crate::crd::Subnet;

/// Reconciles Subnets until the returned future is dropped or the process is signalled.
pub async fn run(ctx: Arc<Context>) {
    let subnets: Api<Subnet> = Api::all(ctx.client.clone());
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    let controller = Controller::new(subnets, watcher::Config::default());
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
