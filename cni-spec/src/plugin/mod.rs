//! The plugin side: a skeleton that turns a process invocation into a call on a
//! [`Plugin`] and prints the answer the way the spec wants.
//!
//! A plugin binary is started by the runtime with
//!
//! | variable          | meaning                                                    |
//! |-------------------|------------------------------------------------------------|
//! | `CNI_COMMAND`     | `ADD`, `DEL`, `CHECK`, `STATUS`, `GC` or `VERSION`          |
//! | `CNI_CONTAINERID` | the container (ADD/DEL/CHECK)                              |
//! | `CNI_NETNS`       | path of the container's network namespace (ADD/CHECK)     |
//! | `CNI_IFNAME`      | interface name to create inside the container (ADD/DEL/CHECK) |
//! | `CNI_ARGS`        | `K=V;K2=V2` extras, e.g. `K8S_POD_NAME`                    |
//! | `CNI_PATH`        | where to find plugins to delegate to                       |
//!
//! and the configuration on stdin. It prints a result (ADD), nothing (DEL/CHECK/STATUS/GC)
//! or `{"supportedVersions": [...]}` (VERSION) on stdout and exits 0, or prints an error
//! object and exits 1. The skeleton validates like the reference `skel` package and
//! converts the plugin's result to the configuration's `cniVersion`.
//!
//! ```no_run
//! use cni_spec::plugin::{self, CmdArgs, Plugin};
//! use cni_spec::{CniError, CniResult, PluginConfig, V1Result};
//!
//! #[derive(Debug)]
//! struct Noop;
//! impl Plugin for Noop {
//!     fn add(&self, _: &CmdArgs, conf: &PluginConfig) -> Result<CniResult, CniError> {
//!         Ok(V1Result::empty().into())
//!     }
//!     fn del(&self, _: &CmdArgs, _: &PluginConfig) -> Result<(), CniError> { Ok(()) }
//!     fn check(&self, _: &CmdArgs, _: &PluginConfig) -> Result<(), CniError> { Ok(()) }
//! }
//! fn main() -> std::process::ExitCode { plugin::run(&Noop) }
//! ```

mod delegate;
mod env;
mod skel;

pub use delegate::{
    delegate_add, delegate_check, delegate_del, delegate_gc, delegate_status,
    DEFAULT_DELEGATE_TIMEOUT,
};
pub use env::{CmdArgs, Command};
pub use skel::{run, run_with};

use crate::config::PluginConfig;
use crate::error::CniError;
use crate::result::CniResult;
use crate::version::{CniVersion, ALL_VERSIONS};

/// What a plugin implements; the skeleton calls one method per invocation.
pub trait Plugin {
    /// The versions the plugin accepts; a configuration of another version gets error 1.
    fn supported_versions(&self) -> Vec<CniVersion> {
        ALL_VERSIONS.to_vec()
    }

    /// ADD: attach the container; the result may be of any version (the skeleton converts
    /// it to the configuration's).
    fn add(&self, args: &CmdArgs, config: &PluginConfig) -> Result<CniResult, CniError>;

    /// DEL: release everything ADD set up; must succeed when called twice.
    fn del(&self, args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError>;

    /// CHECK: verify the attachment described by `prevResult` is still in place.
    fn check(&self, args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError>;

    /// STATUS: whether the plugin is ready to serve ADD (error 50/51 if not).
    fn status(&self, _args: &CmdArgs, _config: &PluginConfig) -> Result<(), CniError> {
        Ok(())
    }

    /// GC: release resources of attachments not in `cni.dev/valid-attachments`.
    fn gc(&self, _args: &CmdArgs, _config: &PluginConfig) -> Result<(), CniError> {
        Ok(())
    }
}
