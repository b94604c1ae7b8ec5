//! One reconciler per kind, started after [`bootstrap()`] has written the cluster-wide
//! northbound rows every reconciler builds on.
//!
//! Only the start-up exists so far; the reconcilers come next.

pub mod bootstrap;

pub use bootstrap::{bootstrap, BootstrapError, BootstrapReport, BootstrapStep, VENDOR};
