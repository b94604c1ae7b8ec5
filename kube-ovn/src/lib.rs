//! Kube-OVN, composed: the `kubeovn.io/v1` custom resources, the `ovn.kubernetes.io/*`
//! annotations as one typed struct, the controller's flags, one reconciler per kind, and
//! the node daemon's bootstrap (`br-int`, `ovn0`, host routes).
//!
//! This crate is translation and wiring only: OVSDB, IPAM, CNI and netlink live in the
//! workspace's other crates.

pub mod annotations;
pub mod cni;
pub mod config;
pub mod controller;
pub mod crd;
pub mod daemon;
pub mod ko;
pub mod kube_client;
pub mod sandbox;
