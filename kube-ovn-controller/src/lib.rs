//! Kube-OVN's controller: one reconciler per kind (a folder each: [`subnet`], [`pod`],
//! [`node`], [`service`], [`network_policy`], and [`ippool`]), started after
//! [`bootstrap()`] has written the cluster-wide northbound rows every reconciler builds
//! on; [`run()`] fills the shared caches ([`cache`]), rebuilds the IPAM, then starts them.
//! What they share is the [`Context`]; what one kind keeps in memory is that kind's
//! (`pod::PodState`, `subnet::SubnetState`).

pub mod bootstrap;
pub mod cache;
pub mod config;
pub mod context;
pub mod defaults;
pub mod network_policy;
pub mod node;
pub mod pod;
pub mod retry;
pub mod run;
pub mod service;
pub mod subnet;

pub use bootstrap::{bootstrap, BootstrapError, BootstrapReport, BootstrapStep, VENDOR};
pub use context::Context;
pub use defaults::ensure_default_subnets;
pub use run::{run, run_reconcilers, RunError};
pub mod events;
pub mod gc;
pub mod ipam_rebuild;
pub mod ippool;
pub mod leader;
