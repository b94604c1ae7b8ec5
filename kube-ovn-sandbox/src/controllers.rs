//! The kube-controller-manager and kube-scheduler stand-ins, run together:
//! Deployments, ReplicaSets, the scheduler and EndpointSlices, one pass of
//! each when a pod changes and every `resync` (a failed pass is logged and
//! retried next time).

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

/// Runs the controllers until the future is dropped: a pass when a pod changes, and at
/// the latest every `resync`.
pub async fn run_controllers(client: kube::Client, resync: Duration) {
    let mut scheduler = Scheduler::default();
    let mut changes = super::wake::pod_changes(&client);
    loop {
        if let Err(e) = control_once(&client, &mut scheduler).await {
            tracing::warn!(error = %e, "sandbox controllers pass failed");
        }
        super::wake::next_pass(&mut changes, resync).await;
    }
}
