//! Helpers shared by the test binaries: a real OVN central and the real tools (`ovn`),
//! Kube-OVN's chart CRDs and ours as JSON (`crd`), the embedded API server with our
//! CRDs (`api`), and the NetworkPolicy truth table's layout, evaluator and `ovn-trace`
//! probes (`netpol`). Not published: only tests and benches depend on it.

mod api;
mod bin;
mod crd;
pub mod netpol;
mod ovn;

pub use api::*;
pub use bin::workspace_binary;
pub use crd::*;
pub use ovn::*;
