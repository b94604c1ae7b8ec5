//! The Pod reconciler (Kube-OVN's `pkg/controller/pod.go`, primary NIC on the `ovn`
//! provider): [`choice`] picks the subnet and pools, [`allocate`] asks the IPAM,
//! [`conflict`] settles two pods claiming one address, [`port`] holds the logical
//! switch port, [`annotate`] the result annotations, [`ip_object`] the IP object,
//! [`statefulset`] who keeps an address across deletion, [`status`] the subnet's usage
//! figures, [`events`] the Warning Events, [`delete`] what a deleted pod gives back,
//! [`serial`] keeps a pod's reconcile and its deletion's clean-up apart, and
//! [`reconcile`] ties them together behind the finalizer.
//!
//! Not done yet: Multus attachments (other providers), KubeVirt VMs, QoS, security
//! groups, VIPs, EIP/SNAT, port groups and policy routes of the "route" phase.

pub mod allocate;
pub mod annotate;
pub mod choice;
pub mod conflict;
pub mod delete;
pub mod events;
pub mod ip_object;
pub mod port;
pub mod reconcile;
pub mod serial;
pub mod statefulset;
pub mod status;
pub mod watch;

use std::sync::Arc;

pub use delete::{clean_deleted, cleanup, CleanupReport};
pub use reconcile::{apply, error_policy, reconcile, PodError, PodOutcome, ReadyReport, FINALIZER};
pub use watch::{run, PodFeeds};

/// What the Pod reconciler keeps in memory beside the shared caches and IPAM (one per
/// process, in the [`Context`](crate::Context)).
#[derive(Debug, Clone, Default)]
pub struct PodState {
    /// A pod's reconcile and the clean-up of its deletion take its lock.
    pub locks: Arc<serial::PodLocks>,
    /// The usage figures this process last wrote, per subnet.
    pub usage_written: Arc<status::UsageLedger>,
    /// Where subnets' usage figures are sent to be written together; without it each
    /// allocation writes them itself.
    pub usage: Option<status::UsageQueue>,
}
