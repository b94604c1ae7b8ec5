//! The NetworkPolicy truth table's parts: the e2e layout, the sandbox's evaluator of
//! the policy semantics (independent of the controller; `eval`), and `ovn-trace`
//! probes.

#![allow(dead_code)] // each test binary uses a different part

pub use kube_ovn_sandbox::policy_eval as eval;
pub mod layout;
pub mod table;
pub mod trace;

/// No Node objects: the truth tables leave node access out.
pub const NO_NODES: &[k8s_openapi::api::core::v1::Node] = &[];
