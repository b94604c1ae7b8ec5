//! The Node reconciler under kube-rs's runtime `Controller`, re-run for every node
//! when SB's `Chassis` table changes (ovn-controller registering a chassis) and when a
//! Subnet changes (its distributed gateway's per-node rows).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{watcher, Controller};

use super::chassis::chassis_changes;
use super::reconcile::{error_policy, reconcile};
use crate::Context;
use kube_ovn_api::crd::Subnet;

/// Reconciles Nodes until the returned future is dropped or the process is signalled.
pub async fn run(ctx: Arc<Context>) {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let subnets: Api<Subnet> = Api::all(ctx.client.clone());
    let mut controller = Controller::new(nodes, watcher::Config::default());
    let store = controller.store();
    // a Subnet's gateway type decides every node's distributed-gateway rows
    controller = controller.watches(subnets, watcher::Config::default(), move |_: Subnet| {
        store
            .state()
            .into_iter()
            .map(|n| ObjectRef::from_obj(&*n))
            .collect::<Vec<_>>()
    });
    if let Some(sb) = &ctx.sb {
        controller = controller.reconcile_all_on(chassis_changes(sb));
    }
    controller
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "node controller event");
            }
        })
        .await;
}
