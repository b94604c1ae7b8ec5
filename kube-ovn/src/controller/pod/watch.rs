//! The Pod reconciler under kube-rs's runtime `Controller`, over every namespace.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{watcher, Controller};

use super::reconcile::{error_policy, reconcile};
use crate::controller::Context;

/// Reconciles Pods until the returned future is dropped or the process is signalled.
pub async fn run(ctx: Arc<Context>) {
    let pods: Api<Pod> = Api::all(ctx.client.clone());
    Controller::new(pods, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "pod controller event");
            }
        })
        .await;
}
