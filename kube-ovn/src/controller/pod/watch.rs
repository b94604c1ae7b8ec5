//! The Pod reconciler under kube-rs's runtime `Controller`, over every namespace.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{controller, watcher, Controller};

use super::reconcile::{error_policy, reconcile};
use crate::controller::cache::PodEvents;
use crate::controller::Context;

/// Pods reconciled at once. A reconcile mostly waits on a few API and NB round trips,
/// so a few dozen keep both busy; kube-rs's default is no bound, and a restart over
/// 100,000 pods then started them all at once (40,075 failed reconciles, retried).
/// Kube-OVN likewise runs a fixed number of workers per queue.
pub const WORKERS: u16 = 64;

/// Reconciles Pods until the returned future is dropped or the process is signalled:
/// driven by `events` (the controller's cached Pod watch, whose store `ctx.caches`
/// holds) when given, else by a watch of its own.
pub async fn run(ctx: Arc<Context>, events: Option<PodEvents>) {
    let config = controller::Config::default().concurrency(WORKERS);
    let controller = match (events, &ctx.caches) {
        (Some(events), Some(caches)) => Controller::for_shared_stream(events, caches.pods.clone()),
        _ => Controller::new(
            Api::<Pod>::all(ctx.client.clone()),
            watcher::Config::default(),
        ),
    };
    controller
        .with_config(config)
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "pod controller event");
            }
        })
        .await;
}
