//! The node daemon (`kube-ovn-cni`'s long-running part). So far: the node bootstrap.
//!
//! [`ensure`] makes one node match a [`NodeBootstrap`], in Kube-OVN's order
//! (`start-ovs.sh`, then `InitNodeGateway` / `configureNodeNic`,
//! `pkg/daemon/init.go` and `ovs_linux.go`):
//!
//! 1. `Open_vSwitch` `external_ids` (`system-id`, `hostname`, `ovn-remote`,
//!    `ovn-encap-type`, `ovn-encap-ip`, `ovn-encap-csum`, `ovn-monitor-all`,
//!    `ovn-bridge-datapath-type`, `ovn-bridge-mappings`; other keys kept), `br-int`
//!    (datapath type, `fail_mode=secure`, `other_config:disable-in-band=true`) and the
//!    internal port `ovn0` bound to the join port `node-<node>`: one transaction
//!    through the typed `ovs-vsctl` crate, holding only what differs, then a wait for
//!    ovs-vswitchd to apply it ([`OvsChange`]);
//! 2. on the host, over rtnetlink: `ovn0`'s MAC, MTU, txqueuelen 1000, up, the join
//!    addresses, the join CIDR on-link, and every subnet CIDR and the service CIDR via
//!    the join gateway ([`LinkChange`]).
//!
//! Everything is checked before anything is written ([`NodeSpecError`]), and a run
//! that finds the node as wanted writes nothing ([`EnsureReport::is_noop`]).
//! [`keep_converged`] repeats [`ensure`] on a period, the repairing counterpart of
//! Kube-OVN's `loopOvn0Check` (which only exits the daemon when `ovn0` is down or its
//! gateway unreachable, for the pod to restart and redo the bootstrap).
//!
//! CNI: [`CniDaemon`] serves ADD ([`CniDaemon::add`]), DEL, CHECK and the stale-port GC
//! ([`keep_collecting`]) to the `kube-ovn` CNI binary over [`server`] ([`api`] holds the
//! wire types both sides share); [`flags`] are the binary's flags and [`cniconf`] the
//! conflist it installs.
//!
//! [`node`] builds the desired [`NodeBootstrap`] from the daemon's settings and the
//! cluster (the Node's join port, the Subnets) and keeps the node converged, as the
//! `kube-ovn-daemon` binary runs it. Not done yet: the Node's `NetworkUnavailable`
//! condition after the join gateway ping.

mod add;
pub mod cniconf;
mod del;
pub mod flags;
mod gc;
mod handler;
mod hostns;
pub mod nat;
pub mod node;
mod ovn0;
mod ovs;
pub mod qos;
pub mod server;
mod spec;

use std::future::Future;
use std::time::Duration;

use kube_ovn_cni::error_chain;
use ovs_vsctl::{VsClient, VsError};

pub use gc::{keep_collecting, GC_PERIOD};
pub use handler::{CniDaemon, CniFailure, CniSettings};
pub use hostns::{HostNamespace, HostNamespaceError};
pub use ovn0::{HostNetwork, LinkChange};
pub use ovs::OvsChange;
pub use spec::{
    DatapathType, EncapType, NodeBootstrap, NodeSpecError, INTEGRATION_BRIDGE, NODE_NIC,
};

/// How long ovs-vswitchd gets to apply a change and create `ovn0`.
pub const APPLY_TIMEOUT: Duration = Duration::from_secs(30);

/// Why the bootstrap stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// The desired values are invalid; nothing was written.
    #[error("invalid node bootstrap")]
    Spec(#[from] NodeSpecError),
    /// The `Open_vSwitch` transaction (or the wait for ovs-vswitchd) failed.
    #[error("Open_vSwitch bootstrap of {port} failed")]
    Ovs {
        /// The join port being plugged.
        port: String,
        /// Why (boxed: the database errors are large).
        #[source]
        source: Box<VsError>,
    },
    /// A netlink socket could not be opened in the namespace.
    #[error("cannot open netlink in namespace {namespace}")]
    Namespace {
        /// The namespace.
        namespace: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// ovs-vswitchd did not create the device.
    #[error("link {link} did not appear in namespace {namespace} within {waited:?}")]
    LinkMissing {
        /// The link.
        link: String,
        /// The namespace.
        namespace: String,
        /// How long we waited.
        waited: Duration,
    },
    /// A netlink request failed.
    #[error("netlink {op} of {what} in namespace {namespace} failed")]
    Netlink {
        /// The request (`set link`, `add route`, ...).
        op: &'static str,
        /// What it was about.
        what: String,
        /// The namespace.
        namespace: String,
        /// The kernel's answer (boxed: netlink errors carry the message).
        #[source]
        source: Box<rtnetlink::Error>,
    },
}

/// What one [`ensure`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnsureReport {
    /// `Open_vSwitch` writes (committed in one transaction).
    pub ovs: Vec<OvsChange>,
    /// Host-side changes to `ovn0`.
    pub link: Vec<LinkChange>,
}

impl EnsureReport {
    /// True when the node already matched and nothing was written.
    pub fn is_noop(&self) -> bool {
        self.ovs.is_empty() && self.link.is_empty()
    }
}

/// Makes the node match `boot`: `Open_vSwitch` through `vs`, `ovn0` through `net` (the
/// namespace ovs-vswitchd creates its devices in).
pub async fn ensure(
    vs: &VsClient,
    net: &HostNetwork,
    boot: &NodeBootstrap,
) -> Result<EnsureReport, NodeError> {
    let plan = boot.plan()?;
    let ovs_failed = |source| NodeError::Ovs {
        port: boot.port_name(),
        source: Box::new(source),
    };
    let mut txn = vs.txn();
    let ovs = ovs::build(&mut txn, vs, boot, &plan).map_err(ovs_failed)?;
    if !ovs.is_empty() {
        ovs::commit(vs, txn, APPLY_TIMEOUT)
            .await
            .map_err(ovs_failed)?;
    }
    let want = ovn0::Ovn0 {
        plan,
        mtu: boot.mtu,
    };
    let link = ovn0::ensure(net, &want, APPLY_TIMEOUT).await?;
    let report = EnsureReport { ovs, link };
    if !report.is_noop() {
        tracing::info!(node = %boot.node_name, ?report, "node bootstrap converged");
    }
    Ok(report)
}

/// Runs [`ensure`] every `period` until `shutdown` resolves; a failed round is logged
/// once and retried on the next tick (a deleted `ovn0`, port or route comes back).
pub async fn keep_converged(
    vs: &VsClient,
    net: &HostNetwork,
    boot: &NodeBootstrap,
    period: Duration,
    shutdown: impl Future<Output = ()>,
) {
    every(period, shutdown, || async {
        if let Err(error) = ensure(vs, net, boot).await {
            tracing::warn!(node = %boot.node_name, error = %error_chain(&error), "node bootstrap round failed");
        }
    })
    .await
}

/// The daemon's periodic loops: `round` now and every `period` until `shutdown`
/// resolves. A round that overruns delays the next rather than bunching them up; a
/// round in progress finishes before `shutdown` is seen.
pub(crate) async fn every<Round, Fut>(
    period: Duration,
    shutdown: impl Future<Output = ()>,
    mut round: Round,
) where
    Round: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tick.tick() => round().await,
        }
    }
}
