//! # cni-spec
//!
//! The Container Network Interface (CNI) for Rust: the wire types of every spec version
//! (0.1.0 to 1.1.0), conversion of results between versions, a synchronous skeleton for
//! writing plugins, and the runtime side that executes plugin chains.
//!
//! ## The protocol in one paragraph
//!
//! A *runtime* (containerd, CRI-O, kubelet's dockershim, ...) loads a *configuration list*
//! ([`NetworkConfigList`]) naming a chain of *plugins*. For ADD it executes each plugin
//! binary in order, passing parameters in `CNI_*` environment variables and that plugin's
//! configuration ([`PluginConfig`]) on stdin, with the previous plugin's *result*
//! ([`CniResult`]) injected as `prevResult`. Each plugin prints a result (or an error,
//! [`CniError`]) on stdout. DEL runs the chain in reverse; CHECK (0.4.0+) verifies;
//! STATUS and GC (1.1.0+) report readiness and clean up leftovers. Results come in three
//! layouts (see [`version`]) and a plugin must answer in the configuration's version.
//!
//! ## Layout of the crate
//!
//! - [`version`]: versions, negotiation and the VERSION answer;
//! - [`config`], [`result`], [`error`], [`args`]: wire types;
//! - [`plugin`]: the skeleton ([`plugin::run`]) and delegation to IPAM plugins;
//! - [`runtime`]: executing a configuration list, caching results, GC;
//! - [`exec`]: running one plugin binary with a timeout.

pub mod args;
pub mod config;
pub mod error;
pub mod exec;
pub mod plugin;
pub mod result;
pub mod runtime;
pub mod validate;
pub mod version;

pub use args::{CniArgs, K8sPod};
pub use config::{AttachmentRef, ConfigError, IpamConfig, NetworkConfigList, PluginConfig};
pub use error::{CniError, ErrorCode};
pub use result::{
    CniResult, ConversionError, Dns, Interface, IpConfig, IpFamily, LegacyIpConfig, LegacyResult,
    ResultParseError, RichInterface, RichIpConfig, RichResult, Route, V1Result,
};
pub use version::{CniVersion, VersionInfo, ALL_VERSIONS, CURRENT_VERSION};
