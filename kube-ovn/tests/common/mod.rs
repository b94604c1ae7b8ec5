//! Helpers shared by the test binaries: a real OVN central and the real tools (`ovn`),
//! Kube-OVN's chart CRDs and ours as JSON (`crd`), the embedded API server with our
//! CRDs (`api`), the `kube-ovn-sandbox` binary driven as a person drives it
//! (`sandbox`).

#![allow(dead_code, unused_imports)] // each test binary uses a different part

mod api;
mod crd;
mod ovn;
pub mod sandbox;

pub use api::*;
pub use crd::*;
pub use ovn::*;
