//! The Pod reconciler under kube-rs's runtime `Controller`, over every namespace.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{controller, watcher, Controller};
use tokio::sync::mpsc;

use super::delete::clean_deleted;
use super::reconcile::{error_policy, pod_key, reconcile};
use crate::cache::{DeletedPods, PodEvents};
use crate::Context;

/// How long a deleted pod whose clean-up failed waits before it is tried again.
const DELETED_RETRY: Duration = Duration::from_secs(2);

/// The controller's Pod watch, as its caches hand it out.
#[derive(Debug)]
pub struct PodFeeds {
    /// Pods applied to the store: the reconciler's trigger.
    pub events: PodEvents,
    /// Pods deleted: the deleted-pod worker's queue.
    pub deleted: DeletedPods,
}

/// Pods reconciled at once. A reconcile mostly waits on a few API and NB round trips,
/// so a few dozen keep both busy; kube-rs's default is no bound, and a restart over
/// 100,000 pods then started them all at once (40,075 failed reconciles, retried).
/// Kube-OVN likewise runs a fixed number of workers per queue.
pub const WORKERS: u16 = 64;

/// Reconciles Pods until the returned future is dropped or the process is signalled:
/// driven by `feeds` (the controller's cached Pod watch, whose store `ctx.caches`
/// holds) when given, with a worker cleaning up after deleted pods beside it; else
/// by a watch of its own (deleted pods then rely on the finalizer and the garbage
/// collector).
pub async fn run(ctx: Arc<Context>, feeds: Option<PodFeeds>) {
    let config = controller::Config::default().concurrency(WORKERS);
    let (controller, deleted) = match (feeds, &ctx.caches) {
        (Some(feeds), Some(caches)) => (
            Controller::for_shared_stream(feeds.events, caches.pods.clone()),
            Some(feeds.deleted),
        ),
        _ => (
            Controller::new(
                Api::<Pod>::all(ctx.client.clone()),
                watcher::Config::default(),
            ),
            None,
        ),
    };
    let reconciler = controller
        .with_config(config)
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "pod controller event");
            }
        });
    match deleted {
        // the worker ends with the watch; the reconciler with a signal
        Some(deleted) => {
            tokio::select! {
                () = reconciler => {}
                () = clean_deleted_pods(ctx, deleted) => {}
            }
        }
        None => reconciler.await,
    }
}

/// The deleted-pod worker: each deleted pod's leftovers given back, one pod at a
/// time (most hold nothing: the finalizer took it back already); a failed clean-up
/// is queued again after [`DELETED_RETRY`].
async fn clean_deleted_pods(ctx: Arc<Context>, mut deleted: DeletedPods) {
    let (retry_tx, mut retry_rx) = mpsc::unbounded_channel::<Arc<Pod>>();
    loop {
        let pod = tokio::select! {
            next = deleted.next() => match next {
                Some(pod) => pod,
                None => return,
            },
            // never closed: this loop holds a sender
            Some(pod) = retry_rx.recv() => pod,
        };
        match clean_deleted(&ctx, &pod).await {
            Ok(None) => {}
            Ok(Some(report)) => {
                tracing::info!(pod = %pod_key(&pod), ?report, "deleted pod's leftovers given back");
            }
            Err(err) => {
                tracing::warn!(pod = %pod_key(&pod), error = %err, "cleaning up after a deleted pod failed; retrying");
                let retry_tx = retry_tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(DELETED_RETRY).await;
                    let _ = retry_tx.send(pod);
                });
            }
        }
    }
}
