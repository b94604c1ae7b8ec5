//! The Pod reconciler under kube-rs's runtime `Controller`, over every namespace.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{controller, watcher, Controller};

use super::reconcile::{error_policy, reconcile};
use crate::controller::Context;

/// Pods reconciled at once. A reconcile mostly waits on a few API and NB round trips,
/// so a few dozen keep both busy; kube-rs's default is no bound, and a restart over
/// 100,000 pods then started them all at once (40,075 failed reconciles, retried).
/// Kube-OVN likewise runs a fixed number of workers per queue.
pub const WORKERS: u16 = 64;

/// Reconciles Pods until the returned future is dropped or the process is signalled.
pub async fn run(ctx: Arc<Context>) {
    let pods: Api<Pod> = Api::all(ctx.client.clone());
    Controller::new(pods, watcher::Config::default())
        .with_config(controller::Config::default().concurrency(WORKERS))
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "pod controller event");
            }
        })
        .await;
}
