//! The Subnet reconciler (Kube-OVN's `pkg/controller/subnet.go`, the part that does
//! not need IPAM): [`validate`] judges a Subnet beyond its enum checks, [`desired`]
//! holds its NB rows, [`namespaces`] its namespaces' binding, and [`reconcile`] ties
//! them together behind the finalizer; [`gateway`] keeps a centralized gateway's
//! policy (the distributed gateway's per-node rows are the node reconciler's).
//!
//! [`defaults`] writes Kube-OVN's defaults into empty spec fields, [`acl`] the subnet's
//! ACLs (private, allowSubnets, allowEWTraffic, `spec.acls`).
//!
//! Not done yet: DHCP options, the 31000 allow policy, `gatewayNodeSelectors`, underlay
//! (vlan) and non-`ovn` providers (refused by validation, naming the field).

pub mod acl;
pub mod defaults;
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

/// What the Subnet reconciler keeps in memory (one per process, in the
/// [`Context`](crate::Context)).
#[derive(Debug, Clone, Default)]
pub struct SubnetState {
    /// Subnets' own validations, remembered per resourceVersion.
    pub validations: std::sync::Arc<validate::Validations>,
}
