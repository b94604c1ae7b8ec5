//! The record of a running sandbox: who its supervisor is and every process it
//! started, so `down` can stop them by pid even after the supervisor is gone.

use std::path::Path;

use ovn_harness::ProcessInfo;
use serde::{Deserialize, Serialize};

use super::error::SandboxError;

/// `<state-dir>/sandbox-processes.json`, written by the supervisor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    /// The prefix of the names it gives namespaces.
    pub prefix: String,
    /// How many nodes it runs.
    pub nodes: usize,
    /// The supervisor's pid, which is also its process group: everything it starts
    /// is in that group.
    pub supervisor: u32,
    /// Every daemon it started (OVN's, the controller, the node daemons).
    pub processes: Vec<ProcessInfo>,
    /// Set once everything runs and `sandbox.json` is written.
    pub ready: bool,
}

impl SandboxRecord {
    /// Reads the record at `path`; `None` when there is none.
    pub fn load(path: &Path) -> Result<Option<SandboxRecord>, SandboxError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(SandboxError::StateFile {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })
            }
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| SandboxError::StateFile {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })
    }

    /// Writes it atomically (a temporary file renamed over the old one), so `down`
    /// never reads half a record.
    pub fn save(&self, path: &Path) -> Result<(), SandboxError> {
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).expect("plain data serializes");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, path))
            .map_err(SandboxError::io(path))
    }
}
