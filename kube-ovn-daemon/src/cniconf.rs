//! The conflist the daemon installs with `--install-cni-config`: Kube-OVN's
//! `01-kube-ovn.conflist`, the `kube-ovn` plugin (naming the daemon's socket) chained with
//! `portmap`, in CNI 0.3.1 as Kube-OVN's (containerd 1.6 refuses 1.1.0 results).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

/// Kube-OVN's file name.
pub const DEFAULT_CONF_NAME: &str = "01-kube-ovn.conflist";
/// The network name and the plugin type.
pub const PLUGIN_TYPE: &str = "kube-ovn";
/// The conflist's version.
pub const CONF_VERSION: &str = "0.3.1";

/// The conflist naming `server_socket`.
pub fn conflist(server_socket: &Path) -> serde_json::Value {
    json!({
        "name": PLUGIN_TYPE,
        "cniVersion": CONF_VERSION,
        "plugins": [
            {"type": PLUGIN_TYPE, "server_socket": server_socket.display().to_string()},
            {"type": "portmap", "capabilities": {"portMappings": true}},
        ],
    })
}

/// The conflist could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot install the CNI configuration {path}")]
pub struct InstallError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// Writes the conflist to `dir/name` atomically (a temporary file renamed over it), so a
/// runtime never reads half a file; returns the path.
pub fn install(dir: &Path, name: &str, server_socket: &Path) -> Result<PathBuf, InstallError> {
    let path = dir.join(name);
    let fail = |source| InstallError {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let text =
        serde_json::to_string_pretty(&conflist(server_socket)).map_err(|e| fail(e.into()))?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut file = std::fs::File::create(&tmp).map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.sync_all().map_err(fail)?;
    std::fs::rename(&tmp, &path).map_err(fail)?;
    Ok(path)
}
