//! The Node reconciler (Kube-OVN's `pkg/controller/node.go`): each node gets a join
//! address on `--node-switch` from the IPAM, the port `node-<node>` on the join switch,
//! the cluster router's policies sending traffic for its internal IP to that port
//! ([`desired`]), its SB chassis ([`chassis`]) and the annotations the node daemon
//! reads ([`reconcile`]); all of it goes with the node.
//!
//! The distributed gateway's per-node port groups and policies are in [`distributed`].
//!
//! The port group `node.<node>` that keeps nodes reaching their pods through network
//! policies is written by the NetworkPolicy reconciler
//! ([`crate::network_policy::node_access`]), which follows pod placement.
//!
//! Not done: the `node-<node>` IP object and the underlay address sets.

pub mod chassis;
pub mod desired;
pub mod distributed;
pub mod policies;
pub mod reconcile;
pub mod watch;

pub use reconcile::{
    apply, cleanup, error_policy, internal_ips, reconcile, NodeError, NodeReport, FINALIZER,
};
pub use watch::run;
