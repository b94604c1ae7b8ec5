//! NetworkPolicy in OVN (Kube-OVN's `pkg/controller/network_policy.go` with
//! `--enable-np`): per policy a port group of the pods it selects, address sets per
//! rule and direction, and ACLs with Kube-OVN's names and priorities.
//!
//! [`validate`] judges a policy as the API server would; [`selection`] reads who it is
//! about from the reflector stores; [`acl`] renders its ACLs from the policy alone;
//! [`rows`] writes the rows as desired state; [`reconcile`] is one idempotent pass
//! (policy level, then membership level); [`watch`] runs passes as the cluster changes.
//!
//! A named port resolves to the numbers its name has on any destination pod (the
//! selected pods for ingress, the peer pods for egress), as one set per rule port:
//! pods that give one name different numbers are allowed on each of them.
//!
//! [`node_access`] keeps every node reaching its own pods (kubelet probes) while any
//! policy exists: Kube-OVN's `node.<node>` port groups and their 3000 allows.
//!
//! Not done: ACL logging (`enable_log`) and the lax mode's DHCP exceptions.

pub mod acl;
pub mod names;
pub mod node_access;
pub mod reconcile;
pub mod rows;
pub mod selection;
pub mod validate;
pub mod watch;

pub use reconcile::{families_of, sync, NpError, PassReport};
pub use validate::{validate, NpInvalid, ValidPolicy};
pub use watch::run;
