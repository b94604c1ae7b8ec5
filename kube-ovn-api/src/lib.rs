//! Kube-OVN's API as Rust types, for anything that reads or writes Kube-OVN's objects:
//! a UI, an operator, a policy tool, and this project's own controller and daemon.
//!
//! - [`crd`]: the `kubeovn.io/v1` custom resources (Subnet, IP, IPPool, Vpc, Vip, ...)
//!   with Kube-OVN's field names, and their CustomResourceDefinitions;
//! - [`annotations`]: the `ovn.kubernetes.io/*` annotations of pods, namespaces and
//!   nodes as typed structs, parsed and rendered in Kube-OVN's formats;
//! - [`naming`]: Kube-OVN's naming rules: port and IP object names, IPAM owners,
//!   `external_ids` keys, the `vendor` every row carries;
//! - [`key`]: typed object keys ([`NamespacedName`]) instead of `"ns/name"` strings.
//!
//! No async runtime and no client: the types are `kube::Resource`s, so any kube-rs
//! `Api` reads and writes them.
//!
//! Read a pod's network from its annotations:
//!
//! ```
//! use std::collections::BTreeMap;
//! use kube_ovn_api::annotations::{PodNetwork, Provider};
//!
//! let annotations = BTreeMap::from([
//!     ("ovn.kubernetes.io/allocated".to_string(), "true".to_string()),
//!     ("ovn.kubernetes.io/ip_address".to_string(), "10.16.0.5".to_string()),
//!     ("ovn.kubernetes.io/mac_address".to_string(), "00:00:00:53:6b:1a".to_string()),
//!     ("ovn.kubernetes.io/cidr".to_string(), "10.16.0.0/16".to_string()),
//!     ("ovn.kubernetes.io/gateway".to_string(), "10.16.0.1".to_string()),
//!     ("ovn.kubernetes.io/logical_switch".to_string(), "ovn-default".to_string()),
//! ]);
//! let network = PodNetwork::parse(&Provider::ovn(), &annotations).unwrap();
//! assert!(network.is_allocated());
//! let ip = network.ip_address.as_ref().unwrap();
//! assert_eq!(ip.v4, Some("10.16.0.5".parse().unwrap()));
//! assert_eq!(network.logical_switch.as_deref(), Some("ovn-default"));
//! ```
//!
//! Build a Subnet, as `kubectl apply` would send it:
//!
//! ```
//! use kube_ovn_api::crd::{Protocol, Subnet, SubnetSpec};
//!
//! let subnet = Subnet::new("tenant-a", SubnetSpec {
//!     cidr_block: Some("10.66.0.0/16".into()),
//!     protocol: Some(Protocol::IPv4),
//!     namespaces: vec!["tenant-a".into()],
//!     ..Default::default()
//! });
//! let cidr = kube_ovn_api::crd::parse_cidr(&subnet).unwrap();
//! assert_eq!(cidr.v4.unwrap().to_string(), "10.66.0.0/16");
//! ```

pub mod annotations;
pub mod crd;
pub mod key;
pub mod naming;

pub use key::NamespacedName;
