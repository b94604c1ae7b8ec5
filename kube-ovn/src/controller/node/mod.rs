//! The Node reconciler (Kube-OVN's `pkg/controller/node.go`): each node gets a join
//! address on `--node-switch` from the IPAM, the port `node-<node>` on the join switch,
//! the cluster router's policies sending traffic for its internal IP to that port
//! ([`desired`]), its SB chassis ([`chassis`]) and the annotations the node daemon
//! reads ([`reconcile`]); all of it goes with the node.
//!
//! The distributed gateway's per-node port groups and policies are in [`distributed`].
//!
//! Not done: the `node-<node>` IP object, the port group `node.<node>` for network
//! policies, and the underlay address sets.

pub mod chassis;
pub mod desired;
pub mod distributed;
pub mod policies;
pub mod reconcile;
pub mod watch;

pub use reconcile::{apply, cleanup, error_policy, reconcile, NodeError, NodeReport, FINALIZER};
pub use watch::run;
