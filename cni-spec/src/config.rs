//! Network configuration: the configuration list a runtime loads (`*.conflist`) and the
//! per-plugin configuration a plugin reads on stdin.
//!
//! ```json
//! {"cniVersion":"1.0.0","name":"pods","disableCheck":false,
//!  "plugins":[
//!    {"type":"bridge","bridge":"cni0","ipam":{"type":"host-local","subnet":"10.1.0.0/16"}},
//!    {"type":"portmap","capabilities":{"portMappings":true}}]}
//! ```
//!
//! Plugin-specific keys (`bridge` above) are kept in `extra` and written back unchanged;
//! the runtime adds `cniVersion`, `name`, `runtimeConfig`, `prevResult` (and for GC
//! `cni.dev/valid-attachments`) to each plugin's object before executing it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::result::{CniResult, Dns, ResultParseError};
use crate::validate::{validate_network_name, ValidationError};
use crate::version::{select_list_version, CniVersion, UnknownVersion};

/// The GC key listing attachments that are still in use (spec 1.1.0).
pub const VALID_ATTACHMENTS_KEY: &str = "cni.dev/valid-attachments";
/// The key the spec-v1.1.0 text used for the same list; libcni sends both.
pub const LEGACY_ATTACHMENTS_KEY: &str = "cni.dev/attachments";

/// One plugin's configuration: an element of a list's `plugins`, or the stdin of a plugin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PluginConfig {
    /// The version of this configuration (set by the runtime from the list).
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub cni_version: String,
    /// The network name (set by the runtime from the list).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The plugin binary to execute.
    #[serde(rename = "type", default)]
    pub plugin_type: String,
    /// Capabilities this plugin supports (e.g. `portMappings`); the runtime passes matching
    /// runtime values in `runtimeConfig`. Not sent to the plugin.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capabilities: BTreeMap<String, bool>,
    /// The IPAM plugin to delegate address management to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipam: Option<IpamConfig>,
    /// DNS settings the plugin should return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<Dns>,
    /// Extra runtime arguments (e.g. `args.cni.ips` for host-local).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// Values for the capabilities this plugin declared (runtime-generated).
    #[serde(
        rename = "runtimeConfig",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub runtime_config: Option<Map<String, Value>>,
    /// The result of the previous plugin in the chain (runtime-generated).
    #[serde(
        rename = "prevResult",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub prev_result: Option<Value>,
    /// Every other key, kept as is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `ipam` section: a plugin type and its own settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IpamConfig {
    /// The IPAM plugin binary, e.g. `host-local`.
    #[serde(rename = "type", default)]
    pub plugin_type: String,
    /// The IPAM plugin's own keys (`subnet`, `ranges`, `dataDir`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An attachment named in GC's `cni.dev/valid-attachments`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AttachmentRef {
    /// The container ID.
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// The interface name inside the container.
    pub ifname: String,
}

/// A configuration that could not be decoded or breaks the spec's rules.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("reading network configuration {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The JSON could not be decoded.
    #[error("decoding network configuration: {0}")]
    Json(#[from] serde_json::Error),
    /// The network name is missing or invalid.
    #[error("invalid network configuration: {0}")]
    Name(#[from] ValidationError),
    /// A list without plugins.
    #[error("invalid network configuration {name:?}: no plugins in list")]
    NoPlugins {
        /// The network.
        name: String,
    },
    /// A plugin entry without `type`.
    #[error("invalid network configuration {name:?}: plugin {index} has no type")]
    MissingType {
        /// The network.
        name: String,
        /// Position in `plugins`.
        index: usize,
    },
    /// No usable version among `cniVersion` and `cniVersions`.
    #[error("invalid network configuration {name:?}: no supported CNI version in {versions:?}")]
    NoSupportedVersion {
        /// The network.
        name: String,
        /// The versions offered.
        versions: Vec<String>,
    },
    /// `cniVersion` names no known version.
    #[error("invalid network configuration: {0}")]
    Version(#[from] UnknownVersion),
    /// `prevResult` is not a valid result.
    #[error("invalid prevResult: {0}")]
    PrevResult(#[from] ResultParseError),
}

impl PluginConfig {
    /// Decodes a plugin's stdin.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ConfigError> {
        Ok(serde_json::from_slice(bytes)?)
    }

    /// The configuration's version (empty means 0.1.0, as in libcni).
    pub fn version(&self) -> Result<CniVersion, UnknownVersion> {
        CniVersion::parse(&self.cni_version)
    }

    /// `prevResult` decoded at the configuration's version when it lacks its own.
    pub fn prev_result(&self) -> Result<Option<CniResult>, ConfigError> {
        let Some(value) = &self.prev_result else {
            return Ok(None);
        };
        let version = self.version()?;
        Ok(Some(CniResult::from_value_or(
            value.clone(),
            Some(version),
        )?))
    }

    /// The GC list of attachments still in use (either key), if present.
    pub fn valid_attachments(&self) -> Result<Option<Vec<AttachmentRef>>, ConfigError> {
        for key in [VALID_ATTACHMENTS_KEY, LEGACY_ATTACHMENTS_KEY] {
            if let Some(v) = self.extra.get(key) {
                return Ok(Some(serde_json::from_value(v.clone())?));
            }
        }
        Ok(None)
    }

    /// The JSON bytes a plugin reads.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("configurations always serialize")
    }
}

/// A configuration list (`*.conflist`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetworkConfigList {
    /// The list's version.
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub cni_version: String,
    /// 1.1.0: further versions the list is valid for; the runtime picks the highest known.
    #[serde(rename = "cniVersions", default, skip_serializing_if = "Vec::is_empty")]
    pub cni_versions: Vec<String>,
    /// The network name.
    #[serde(default)]
    pub name: String,
    /// 0.4.0: do not run CHECK for this network (bool, or "true"/"false" as libcni accepts).
    #[serde(
        rename = "disableCheck",
        default,
        deserialize_with = "bool_or_string",
        skip_serializing_if = "is_false"
    )]
    pub disable_check: bool,
    /// 1.1.0: do not run GC for this network.
    #[serde(
        rename = "disableGC",
        default,
        deserialize_with = "bool_or_string",
        skip_serializing_if = "is_false"
    )]
    pub disable_gc: bool,
    /// The plugins, executed in order for ADD and in reverse for DEL.
    #[serde(default)]
    pub plugins: Vec<PluginConfig>,
    /// Every other key, kept as is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn bool_or_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::Bool(b) => Ok(b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        other => Err(serde::de::Error::custom(format!(
            "expected true or false, got {other}"
        ))),
    }
}

impl NetworkConfigList {
    /// Decodes and validates a list. A single plugin configuration (no `plugins` key) is
    /// turned into a one-element list, as libcni does for `*.conf` files.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ConfigError> {
        let value: Value = serde_json::from_slice(bytes)?;
        let list = if value.get("plugins").is_some() {
            serde_json::from_value(value)?
        } else {
            let plugin: PluginConfig = serde_json::from_value(value)?;
            NetworkConfigList::from_plugin(plugin)
        };
        list.validate()?;
        Ok(list)
    }

    /// Reads and validates a list from a file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_slice(&bytes)
    }

    /// Wraps one plugin configuration into a list of one.
    pub fn from_plugin(mut plugin: PluginConfig) -> Self {
        let list = NetworkConfigList {
            cni_version: std::mem::take(&mut plugin.cni_version),
            name: std::mem::take(&mut plugin.name),
            ..NetworkConfigList::default()
        };
        NetworkConfigList {
            plugins: vec![plugin],
            ..list
        }
    }

    /// Checks the name, the plugins' types and that some version is usable.
    pub fn validate(&self) -> Result<(), ConfigError> {
        validate_network_name(&self.name)?;
        if self.plugins.is_empty() {
            return Err(ConfigError::NoPlugins {
                name: self.name.clone(),
            });
        }
        if let Some(index) = self.plugins.iter().position(|p| p.plugin_type.is_empty()) {
            return Err(ConfigError::MissingType {
                name: self.name.clone(),
                index,
            });
        }
        self.version().map(|_| ())
    }

    /// The version the runtime speaks for this list: the highest known of `cniVersion` and
    /// `cniVersions` (an absent `cniVersion` counts as 0.1.0).
    pub fn version(&self) -> Result<CniVersion, ConfigError> {
        select_list_version(&self.cni_version, &self.cni_versions).ok_or_else(|| {
            ConfigError::NoSupportedVersion {
                name: self.name.clone(),
                versions: std::iter::once(self.cni_version.clone())
                    .chain(self.cni_versions.iter().cloned())
                    .collect(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_survive() {
        let text = r#"{"cniVersion":"1.0.0","name":"n","disableCheck":"true","x-top":1,
            "plugins":[{"type":"bridge","bridge":"cni0","isGateway":true,
              "ipam":{"type":"host-local","subnet":"10.1.0.0/16"},
              "capabilities":{"portMappings":true}}]}"#;
        let list = NetworkConfigList::from_slice(text.as_bytes()).unwrap();
        assert!(list.disable_check);
        assert_eq!(list.extra["x-top"], 1);
        let bridge = &list.plugins[0];
        assert_eq!(bridge.extra["bridge"], "cni0");
        assert_eq!(bridge.ipam.as_ref().unwrap().extra["subnet"], "10.1.0.0/16");
        let again = serde_json::to_string(&list).unwrap();
        let reparsed = NetworkConfigList::from_slice(again.as_bytes()).unwrap();
        assert_eq!(reparsed, list);
        assert!(again.contains(r#""disableCheck":true"#));
    }

    #[test]
    fn single_conf_becomes_list() {
        let list =
            NetworkConfigList::from_slice(br#"{"cniVersion":"0.2.0","name":"a","type":"bridge"}"#)
                .unwrap();
        assert_eq!(list.version().unwrap(), CniVersion::V0_2_0);
        assert_eq!(list.plugins.len(), 1);
        assert!(list.plugins[0].name.is_empty());
    }

    #[test]
    fn rejects_bad_lists() {
        let err = NetworkConfigList::from_slice(br#"{"name":"a","plugins":[]}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid network configuration \"a\": no plugins in list"
        );
        let err = NetworkConfigList::from_slice(br#"{"name":"a b","plugins":[{"type":"x"}]}"#)
            .unwrap_err();
        assert!(matches!(
            err,
            ConfigError::Name(ValidationError::InvalidNetworkName(_))
        ));
        let err =
            NetworkConfigList::from_slice(br#"{"name":"a","plugins":[{"mtu":1}]}"#).unwrap_err();
        assert!(matches!(err, ConfigError::MissingType { index: 0, .. }));
        let err = NetworkConfigList::from_slice(
            br#"{"cniVersion":"7.0.0","name":"a","plugins":[{"type":"x"}]}"#,
        )
        .unwrap_err();
        assert!(matches!(err, ConfigError::NoSupportedVersion { .. }));
        let err = NetworkConfigList::from_slice(
            br#"{"name":"a","disableGC":"maybe","plugins":[{"type":"x"}]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("expected true or false"));
    }

    #[test]
    fn prev_result_takes_config_version() {
        let conf = PluginConfig::from_slice(
            br#"{"cniVersion":"0.4.0","name":"n","type":"t",
                "prevResult":{"ips":[{"version":"4","address":"10.0.0.2/24"}]}}"#,
        )
        .unwrap();
        let prev = conf.prev_result().unwrap().unwrap();
        assert_eq!(prev.version(), CniVersion::V0_4_0);
    }

    #[test]
    fn valid_attachments_either_key() {
        let conf = PluginConfig::from_slice(
            br#"{"cniVersion":"1.1.0","name":"n","type":"t",
                "cni.dev/attachments":[{"containerID":"c1","ifname":"eth0"}]}"#,
        )
        .unwrap();
        let list = conf.valid_attachments().unwrap().unwrap();
        assert_eq!(list[0].container_id, "c1");
    }
}
