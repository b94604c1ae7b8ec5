//! The kube-controller-manager and kube-scheduler stand-ins, run together:
//! Deployments, ReplicaSets, the scheduler and EndpointSlices, one pass of
//! each every `resync` (a failed pass is logged and retried next time).

use super::endpointslices::reconcile_endpoint_slices;
use super::scheduler::Scheduler;
use super::workloads::{reconcile_deployments, reconcile_replica_sets};
use std::time::Duration;

/// One pass of every controller, in dependency order (a Deployment's new
/// ReplicaSet gets its pods, which get scheduled, in the same pass).
pub async fn control_once(
    client: &kube::Client,
    scheduler: &mut Scheduler,
) -> Result<(), kube::Error> {
    reconcile_deployments(client).await?;
    reconcile_replica_sets(client).await?;
    scheduler.schedule_once(client).await?;
    reconcile_endpoint_slices(client).await
}

/// Runs the controllers until the future is dropped.
pub async fn run_controllers(client: kube::Client, resync: Duration) {
    let mut scheduler = Scheduler::default();
    loop {
        if let Err(e) = control_once(&client, &mut scheduler).await {
            tracing::warn!(error = %e, "sandbox controllers pass failed");
        }
        tokio::time::sleep(resync).await;
    }
}
