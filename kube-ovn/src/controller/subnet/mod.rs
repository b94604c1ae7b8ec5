//! The Subnet reconciler (Kube-OVN's `pkg/controller/subnet.go`, the part that does
//! not need IPAM): [`validate`] judges a Subnet beyond its enum checks, [`desired`]
//! holds its NB rows, [`namespaces`] its namespaces' binding, and [`reconcile`] ties
//! them together behind the finalizer; [`gateway`] keeps a centralized gateway's
//! policy (the distributed gateway's per-node rows are the node reconciler's).
//!
//! Not done yet: the status usage counts (`v4usingIPs`, `v4availableIPs`, ...) wait
//! for IPAM to be wired in; ACLs, DHCP options, load balancers on the switch, the
//! 31000 allow policy, `gatewayNodeSelectors`, underlay (vlan) and non-`ovn`
//! providers are not written.

pub mod acl;
pub mod desired;
pub mod gateway;
pub mod namespaces;
pub mod reconcile;
pub mod validate;
pub mod watch;

pub use reconcile::{
    apply, cleanup, error_policy, reconcile, ApplyReport, SubnetContext, SubnetError, FINALIZER,
};
pub use validate::{validate, SubnetInvalid, ValidSubnet};
pub use watch::run;
