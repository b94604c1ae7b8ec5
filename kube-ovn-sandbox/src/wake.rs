//! Waking a polling loop early: the node agents and the controllers make a pass as
//! soon as a pod changes, and at the latest after their resync period (which stays the
//! fallback when the watch fails).

use futures::future::FutureExt;
use futures::stream::{BoxStream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::runtime::{watcher, WatchStreamExt};
use std::time::Duration;

/// One item per change of any pod (or watch error, after the watcher's backoff).
pub(crate) fn pod_changes(client: &kube::Client) -> BoxStream<'static, ()> {
    watcher(Api::<Pod>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .map(|_| ())
        .boxed()
}

/// Waits for a change or `resync`, whichever comes first, then takes every change
/// already queued (the next pass sees them all).
pub(crate) async fn next_pass(changes: &mut BoxStream<'static, ()>, resync: Duration) {
    tokio::select! {
        () = tokio::time::sleep(resync) => {}
        changed = changes.next() => {
            if changed.is_none() {
                // the watch ended: plain polling from here on
                tokio::time::sleep(resync).await;
            }
        }
    }
    while let Some(Some(())) = changes.next().now_or_never() {}
}
