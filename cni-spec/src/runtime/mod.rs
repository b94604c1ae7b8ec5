//! The runtime side: what a container runtime does with a configuration list.
//!
//! - ADD runs the plugins in list order; each one after the first gets the previous result
//!   as `prevResult`; the final result is cached per attachment (network, container,
//!   interface) under the cache directory.
//! - DEL runs them in reverse order with the cached result as `prevResult` (0.4.0+), then
//!   drops the cache entry; DEL of an unknown attachment still runs the plugins, so DEL is
//!   idempotent as the spec requires.
//! - CHECK (0.4.0+, unless `disableCheck`) runs them in order with the cached result.
//! - STATUS (1.1.0+) asks each plugin whether it can serve ADD.
//! - GC first DELs every cached attachment of the network not in the valid set, then (1.1.0+,
//!   unless `disableGC`) sends GC with `cni.dev/valid-attachments` to each plugin.
//!
//! Every plugin execution has a timeout; a plugin that is missing, times out, fails or
//! prints garbage gives a [`RuntimeError`] naming the plugin and the command.
//!
//! ```no_run
//! use cni_spec::runtime::{CniRuntime, RuntimeConf};
//! use cni_spec::NetworkConfigList;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let list = NetworkConfigList::from_file("/etc/cni/net.d/10-pods.conflist".as_ref())?;
//! let runtime = CniRuntime::new(vec!["/usr/lib/cni".into()], "/var/lib/cni".into());
//! let attachment = RuntimeConf::new("c0ffee", "/run/netns/pod1", "eth0");
//! let result = runtime.add_network_list(&list, &attachment)?;
//! println!("{}", result.to_json());
//! runtime.del_network_list(&list, &attachment)?;
//! # Ok(()) }
//! ```

mod cache;
mod gc;

pub use cache::CachedAttachment;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::args::CniArgs;
use crate::config::{ConfigError, NetworkConfigList, PluginConfig};
use crate::exec::{exec_plugin, find_plugin, garbage, ExecError};
use crate::plugin::Command;
use crate::result::{CniResult, ConversionError};
use crate::validate::{validate_container_id, validate_interface_name, ValidationError};
use crate::version::{CniVersion, VersionInfo};
use cache::ResultCache;

/// Default time one plugin execution may take.
pub const DEFAULT_PLUGIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Executes configuration lists.
#[derive(Debug, Clone)]
pub struct CniRuntime {
    plugin_dirs: Vec<PathBuf>,
    cache: ResultCache,
    timeout: Duration,
}

/// One attachment: which container, namespace and interface, plus runtime arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeConf {
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_NETNS`; optional for DEL.
    pub netns: Option<PathBuf>,
    /// `CNI_IFNAME`.
    pub ifname: String,
    /// `CNI_ARGS`.
    pub args: CniArgs,
    /// Values for plugin capabilities, e.g. `portMappings`; each plugin gets those it
    /// declared in `capabilities` as `runtimeConfig`.
    pub capability_args: Map<String, Value>,
}

impl RuntimeConf {
    /// An attachment with no arguments.
    pub fn new(container_id: &str, netns: impl Into<PathBuf>, ifname: &str) -> Self {
        RuntimeConf {
            container_id: container_id.to_owned(),
            netns: Some(netns.into()),
            ifname: ifname.to_owned(),
            ..RuntimeConf::default()
        }
    }
}

/// Why an operation on a configuration list failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The configuration list is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The container ID or interface name is invalid.
    #[error("invalid attachment: {0}")]
    Attachment(#[from] ValidationError),
    /// Running one plugin failed.
    #[error("{command} of plugin {plugin:?} (#{index} in network {network:?}) failed: {source}")]
    Plugin {
        /// The network.
        network: String,
        /// The plugin type.
        plugin: String,
        /// Its position in the list.
        index: usize,
        /// `ADD`, `DEL`, ...
        command: &'static str,
        /// What went wrong.
        #[source]
        source: Box<ExecError>,
    },
    /// A cached result cannot be expressed in the list's version.
    #[error("cached result of {container_id}/{ifname}: {source}")]
    Conversion {
        /// The container.
        container_id: String,
        /// The interface.
        ifname: String,
        /// The conversion failure.
        #[source]
        source: ConversionError,
    },
    /// CHECK on a list older than 0.4.0.
    #[error("configuration version {0} does not support the CHECK command")]
    CheckNotSupported(CniVersion),
    /// CHECK without a cached ADD result.
    #[error("no cached result for {container_id}/{ifname} in network {network:?}")]
    NotCached {
        /// The network.
        network: String,
        /// The container.
        container_id: String,
        /// The interface.
        ifname: String,
    },
    /// Reading or writing the cache failed.
    #[error("result cache {path}: {source}")]
    Cache {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A cache file is not valid.
    #[error("result cache {path} is corrupt: {source}")]
    CacheCorrupt {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Several steps of GC failed; GC continues past errors and reports them all.
    #[error("GC of network {network:?}: {} error(s): {}", .errors.len(), join(.errors))]
    Gc {
        /// The network.
        network: String,
        /// Every failure.
        errors: Vec<RuntimeError>,
    },
}

fn join(errors: &[RuntimeError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

impl CniRuntime {
    /// A runtime looking for plugins in `plugin_dirs` and caching under `cache_dir`.
    pub fn new(plugin_dirs: Vec<PathBuf>, cache_dir: PathBuf) -> Self {
        CniRuntime {
            plugin_dirs,
            cache: ResultCache::new(cache_dir),
            timeout: DEFAULT_PLUGIN_TIMEOUT,
        }
    }

    /// Sets the limit for each plugin execution.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// ADD: runs the chain and caches and returns the final result (in the list's version).
    pub fn add_network_list(
        &self,
        list: &NetworkConfigList,
        rt: &RuntimeConf,
    ) -> Result<CniResult, RuntimeError> {
        let version = list.version()?;
        validate_attachment(rt)?;
        let mut prev: Option<CniResult> = None;
        for (index, plugin) in list.plugins.iter().enumerate() {
            let config = request_config(list, plugin, version, rt, prev.as_ref());
            let (binary, out) = self.exec(list, index, Command::Add, rt, &config)?;
            let fail = |source| self.plugin_error(list, index, Command::Add, source);
            if out.iter().all(u8::is_ascii_whitespace) {
                return Err(fail(ExecError::NoOutput { binary }));
            }
            let result = CniResult::from_slice(&out)
                .map_err(|e| fail(garbage(&binary, &out, e)))?
                .convert_to(version)
                .map_err(|e| fail(garbage(&binary, &out, e)))?;
            prev = Some(result);
        }
        let result = prev.expect("a validated list has plugins");
        let list_json = serde_json::to_value(list).expect("lists serialize");
        let entry = cache::CachedAttachment::new(rt, &list.name, list_json, result.to_value());
        self.cache.store(&entry)?;
        Ok(result)
    }

    /// DEL: runs the chain in reverse and forgets the cached result.
    pub fn del_network_list(
        &self,
        list: &NetworkConfigList,
        rt: &RuntimeConf,
    ) -> Result<(), RuntimeError> {
        let version = list.version()?;
        validate_attachment(rt)?;
        let cached = if version.supports_prev_result_on_del() {
            // As libcni: a cached result that cannot be used is no reason to fail DEL.
            self.cached_result(list, rt, version).unwrap_or_else(|e| {
                tracing::warn!(%e, "ignoring unusable cached result for DEL");
                None
            })
        } else {
            None
        };
        for (index, plugin) in list.plugins.iter().enumerate().rev() {
            let config = request_config(list, plugin, version, rt, cached.as_ref());
            self.exec(list, index, Command::Del, rt, &config)?;
        }
        self.cache.remove(&list.name, &rt.container_id, &rt.ifname)
    }

    /// CHECK: runs the chain with the cached result; skipped when `disableCheck` is set.
    pub fn check_network_list(
        &self,
        list: &NetworkConfigList,
        rt: &RuntimeConf,
    ) -> Result<(), RuntimeError> {
        let version = list.version()?;
        if !version.supports_check() {
            return Err(RuntimeError::CheckNotSupported(version));
        }
        if list.disable_check {
            return Ok(());
        }
        validate_attachment(rt)?;
        let cached =
            self.cached_result(list, rt, version)?
                .ok_or_else(|| RuntimeError::NotCached {
                    network: list.name.clone(),
                    container_id: rt.container_id.clone(),
                    ifname: rt.ifname.clone(),
                })?;
        for (index, plugin) in list.plugins.iter().enumerate() {
            let config = request_config(list, plugin, version, rt, Some(&cached));
            self.exec(list, index, Command::Check, rt, &config)?;
        }
        Ok(())
    }

    /// The cached ADD result of an attachment, converted to `version`.
    pub fn cached_result(
        &self,
        list: &NetworkConfigList,
        rt: &RuntimeConf,
        version: CniVersion,
    ) -> Result<Option<CniResult>, RuntimeError> {
        let Some(entry) = self.cache.load(&list.name, &rt.container_id, &rt.ifname)? else {
            return Ok(None);
        };
        let path = self.cache.path(&list.name, &rt.container_id, &rt.ifname);
        let result = CniResult::from_value_or(entry.result, Some(version)).map_err(|e| {
            RuntimeError::CacheCorrupt {
                path,
                source: e.into(),
            }
        })?;
        let converted = result
            .convert_to(version)
            .map_err(|source| RuntimeError::Conversion {
                container_id: rt.container_id.clone(),
                ifname: rt.ifname.clone(),
                source,
            })?;
        Ok(Some(converted))
    }

    /// Asks a plugin binary which versions it supports (the VERSION command).
    pub fn plugin_versions(&self, plugin: &str) -> Result<VersionInfo, ExecError> {
        let binary = find_plugin(plugin, &self.plugin_dirs)?;
        let env = vec![("CNI_COMMAND".to_owned(), "VERSION".to_owned())];
        let out = exec_plugin(&binary, &env, b"{}", self.timeout)?;
        serde_json::from_slice(&out).map_err(|e| garbage(&binary, &out, e))
    }

    /// Runs one plugin of the list; the stdout on success.
    fn exec(
        &self,
        list: &NetworkConfigList,
        index: usize,
        command: Command,
        rt: &RuntimeConf,
        config: &PluginConfig,
    ) -> Result<(PathBuf, Vec<u8>), RuntimeError> {
        let plugin = &list.plugins[index].plugin_type;
        tracing::debug!(network = %list.name, plugin, command = command.as_str(), "exec plugin");
        let binary = find_plugin(plugin, &self.plugin_dirs)
            .map_err(|e| self.plugin_error(list, index, command, e))?;
        let env = self.env(command, rt);
        exec_plugin(&binary, &env, &config.to_bytes(), self.timeout)
            .map(|out| (binary, out))
            .map_err(|e| self.plugin_error(list, index, command, e))
    }

    fn plugin_error(
        &self,
        list: &NetworkConfigList,
        index: usize,
        command: Command,
        source: ExecError,
    ) -> RuntimeError {
        RuntimeError::Plugin {
            network: list.name.clone(),
            plugin: list.plugins[index].plugin_type.clone(),
            index,
            command: command.as_str(),
            source: Box::new(source),
        }
    }

    /// The `CNI_*` environment of one execution.
    fn env(&self, command: Command, rt: &RuntimeConf) -> Vec<(String, String)> {
        let path = std::env::join_paths(&self.plugin_dirs)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut env = vec![
            ("CNI_COMMAND".to_owned(), command.as_str().to_owned()),
            ("CNI_PATH".to_owned(), path),
        ];
        if matches!(command, Command::Add | Command::Del | Command::Check) {
            env.push(("CNI_CONTAINERID".to_owned(), rt.container_id.clone()));
            env.push(("CNI_IFNAME".to_owned(), rt.ifname.clone()));
            env.push(("CNI_ARGS".to_owned(), rt.args.to_string()));
            if let Some(netns) = &rt.netns {
                env.push(("CNI_NETNS".to_owned(), netns.display().to_string()));
            }
        }
        env
    }
}

fn validate_attachment(rt: &RuntimeConf) -> Result<(), ValidationError> {
    validate_container_id(&rt.container_id)?;
    validate_interface_name(&rt.ifname)
}

/// The configuration one plugin reads: its own object plus the list's `cniVersion` and
/// `name`, `runtimeConfig` for the capabilities it declared, and `prevResult`.
fn request_config(
    list: &NetworkConfigList,
    plugin: &PluginConfig,
    version: CniVersion,
    rt: &RuntimeConf,
    prev: Option<&CniResult>,
) -> PluginConfig {
    let mut config = plugin.clone();
    config.cni_version = version.to_string();
    config.name = list.name.clone();
    let runtime_config: Map<String, Value> = std::mem::take(&mut config.capabilities)
        .into_iter()
        .filter(|(_, enabled)| *enabled)
        .filter_map(|(cap, _)| rt.capability_args.get(&cap).map(|v| (cap, v.clone())))
        .collect();
    if !runtime_config.is_empty() {
        config.runtime_config = Some(runtime_config);
    }
    config.prev_result = prev.map(CniResult::to_value);
    config
}
