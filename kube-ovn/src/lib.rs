//! Kube-OVN, the Kubernetes CNI built on OVN and Open vSwitch, in Rust: one dependency
//! for the whole family. The API types are always here; each part comes with its feature.
//!
//! | module | crate | feature |
//! |---|---|---|
//! | [`api`] (`crd`, `annotations`, `naming`) | `kube-ovn-api` | always |
//! | `cni` | `kube-ovn-cni`: the CNI binary and the daemon's wire types | `cni` |
//! | `controller` | `kube-ovn-controller`: the reconcilers and their runtime | `controller` |
//! | `daemon` | `kube-ovn-daemon`: the node daemon | `daemon` |
//! | `ko` | `kubectl-ko`: the kubectl plugin | `ko` |
//!
//! ```
//! use kube_ovn::api::crd::{Subnet, SubnetSpec};
//!
//! let subnet = Subnet::new("tenant-a", SubnetSpec {
//!     cidr_block: Some("10.66.0.0/16".into()),
//!     ..Default::default()
//! });
//! assert_eq!(subnet.metadata.name.as_deref(), Some("tenant-a"));
//! ```
//!
//! The binaries are installed from their own crates: `cargo install kube-ovn-controller`,
//! `kube-ovn-daemon`, `kube-ovn-cni` (the `kube-ovn` CNI binary) and `kubectl-ko`.

pub use kube_ovn_api as api;
pub use kube_ovn_api::{annotations, crd, naming};

#[cfg(feature = "cni")]
pub use kube_ovn_cni as cni;
#[cfg(feature = "controller")]
pub use kube_ovn_controller as controller;
#[cfg(feature = "daemon")]
pub use kube_ovn_daemon as daemon;
#[cfg(feature = "ko")]
pub use kubectl_ko as ko;
