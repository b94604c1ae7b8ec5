//! The per-attachment result cache.
//!
//! After ADD the runtime stores the final result and the configuration it used, so DEL and
//! CHECK can pass `prevResult` and GC can find attachments that are no longer wanted. One
//! JSON file per attachment, `<dir>/results/<network>-<containerID>-<ifname>`, as libcni
//! names them (the content is this crate's own format).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::RuntimeError;

/// The `kind` written into every cache file.
const CACHE_KIND: &str = "cniCacheV1";

/// One cached attachment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedAttachment {
    /// Always `cniCacheV1`.
    pub kind: String,
    /// The container.
    #[serde(rename = "containerId")]
    pub container_id: String,
    /// The interface in the container.
    #[serde(rename = "ifName")]
    pub ifname: String,
    /// The network (configuration list) name.
    #[serde(rename = "networkName")]
    pub network: String,
    /// The container's network namespace at ADD time.
    #[serde(rename = "netns", default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<PathBuf>,
    /// `CNI_ARGS` at ADD time.
    #[serde(rename = "cniArgs", default)]
    pub cni_args: Vec<(String, String)>,
    /// Capability arguments at ADD time.
    #[serde(rename = "capabilityArgs", default)]
    pub capability_args: Map<String, Value>,
    /// The configuration list used.
    pub config: Value,
    /// The final ADD result.
    pub result: Value,
}

impl CachedAttachment {
    /// A cache record.
    pub(crate) fn new(
        rt: &super::RuntimeConf,
        network: &str,
        config: Value,
        result: Value,
    ) -> Self {
        CachedAttachment {
            kind: CACHE_KIND.to_owned(),
            container_id: rt.container_id.clone(),
            ifname: rt.ifname.clone(),
            network: network.to_owned(),
            netns: rt.netns.clone(),
            cni_args: rt.args.pairs().to_vec(),
            capability_args: rt.capability_args.clone(),
            config,
            result,
        }
    }
}

/// The cache directory.
#[derive(Debug, Clone)]
pub(crate) struct ResultCache {
    dir: PathBuf,
}

impl ResultCache {
    pub(crate) fn new(dir: PathBuf) -> Self {
        ResultCache { dir }
    }

    fn results_dir(&self) -> PathBuf {
        self.dir.join("results")
    }

    pub(crate) fn path(&self, network: &str, container_id: &str, ifname: &str) -> PathBuf {
        self.results_dir()
            .join(format!("{network}-{container_id}-{ifname}"))
    }

    pub(crate) fn store(&self, entry: &CachedAttachment) -> Result<(), RuntimeError> {
        let path = self.path(&entry.network, &entry.container_id, &entry.ifname);
        let io = |source| RuntimeError::Cache {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(self.results_dir()).map_err(io)?;
        let tmp = path.with_extension("tmp");
        let bytes = serde_json::to_vec(entry).expect("cache entries serialize");
        // Write then rename, so a crash never leaves a half-written entry behind.
        std::fs::write(&tmp, bytes).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    pub(crate) fn load(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
    ) -> Result<Option<CachedAttachment>, RuntimeError> {
        read_entry(&self.path(network, container_id, ifname))
    }

    pub(crate) fn remove(
        &self,
        network: &str,
        container_id: &str,
        ifname: &str,
    ) -> Result<(), RuntimeError> {
        let path = self.path(network, container_id, ifname);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(RuntimeError::Cache { path, source: e })
            }
            _ => Ok(()),
        }
    }

    /// Every cached attachment of `network`.
    pub(crate) fn list(&self, network: &str) -> Result<Vec<CachedAttachment>, RuntimeError> {
        let dir = self.results_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(RuntimeError::Cache { path: dir, source }),
        };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| RuntimeError::Cache {
                path: dir.clone(),
                source,
            })?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !name.starts_with(&format!("{network}-")) || name.ends_with(".tmp") {
                continue;
            }
            if let Some(cached) = read_entry(&entry.path())? {
                if cached.network == network {
                    found.push(cached);
                }
            }
        }
        Ok(found)
    }
}

fn read_entry(path: &Path) -> Result<Option<CachedAttachment>, RuntimeError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(RuntimeError::Cache {
                path: path.to_owned(),
                source,
            })
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| RuntimeError::CacheCorrupt {
            path: path.to_owned(),
            source: source.into(),
        })
}
