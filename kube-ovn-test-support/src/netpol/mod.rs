//! The NetworkPolicy truth table's parts: the e2e layout, an independent evaluator
//! of the policy semantics, and `ovn-trace` probes.

#![allow(dead_code)] // each test binary uses a different part

pub mod eval;
pub mod layout;
pub mod table;
pub mod trace;

/// No Node objects: the truth tables leave node access out.
pub const NO_NODES: &[k8s_openapi::api::core::v1::Node] = &[];
