//! Helpers shared by the test binaries: a real OVN central and the real tools (`ovn`),
//! the embedded API server with our
//! CRDs (`api`), the controller's test environment of both with a context
//! ([`ControllerEnv`]), and the NetworkPolicy truth table's layout, evaluator and
//! `ovn-trace` probes (`netpol`). Not published: only tests and benches depend on it.

mod api;
mod bin;
mod controller;
pub mod netpol;
mod ovn;

pub use api::*;
pub use bin::workspace_binary;
pub use controller::{ControllerEnv, ControllerEnvBuilder};
pub use ovn::*;
