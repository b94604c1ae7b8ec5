//! The Node reconciler under kube-rs's runtime `Controller`, re-run for every node
//! when SB's `Chassis` table changes (ovn-controller registering a chassis).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::{watcher, Controller};

use super::chassis::chassis_changes;
use super::reconcile::{error_policy, reconcile};
use crate::controller::Context;

/// Reconciles Nodes until the returned future is dropped or the process is signalled.
pub async fn run(ctx: Arc<Context>) {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let mut controller = Controller::new(nodes, watcher::Config::default());
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
