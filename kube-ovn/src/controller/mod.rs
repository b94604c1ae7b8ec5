//! One reconciler per kind, started after [`bootstrap()`] has written the cluster-wide
//! northbound rows every reconciler builds on; [`run()`] starts them.
//!
//! Only the Subnet reconciler exists so far; pods, nodes and IPAM come next.

pub mod bootstrap;
pub mod context;
pub mod defaults;
pub mod network_policy;
pub mod owners;
pub mod run;
pub mod subnet;

pub use bootstrap::{bootstrap, BootstrapError, BootstrapReport, BootstrapStep, VENDOR};
pub use context::Context;
pub use defaults::ensure_default_subnets;
pub use run::{run, run_reconcilers, RunError};
