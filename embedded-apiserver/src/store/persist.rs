//! Saving and loading the store, so a sandbox cluster survives a restart.
//!
//! The file is one JSON document: `{"resourceVersion": N, "objects": [{
//! "group", "resource", "namespace", "name", "object"}, ...]}`. The watch
//! history is not saved: after a restart every watch resumes with 410 Gone
//! and relists, as clients of a restarted kube-apiserver do after an etcd
//! compaction.

use super::{ObjectKey, State};
use serde_json::{json, Value};
use std::io;
use std::path::Path;
use std::sync::Arc;

impl State {
    /// The saveable form of the store.
    pub fn snapshot(&self) -> Value {
        let objects: Vec<Value> = self
            .objects
            .iter()
            .map(|(k, v)| {
                json!({"group": k.group, "resource": k.resource, "namespace": k.namespace,
                       "name": k.name, "object": v.as_ref()})
            })
            .collect();
        json!({"resourceVersion": self.resource_version, "objects": objects})
    }

    /// Writes the snapshot atomically (temp file, then rename).
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let tmp = path.with_extension("tmp");
        let bytes = serde_json::to_vec(&self.snapshot()).map_err(io::Error::other)?;
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)
    }

    /// A store restored from a saved file.
    pub fn load(path: &Path, history_limit: usize) -> io::Result<State> {
        let bytes = std::fs::read(path)?;
        let saved: Value = serde_json::from_slice(&bytes).map_err(io::Error::other)?;
        let bad =
            |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("state file: {what}"));
        let mut state = State::new(history_limit);
        state.objects.clear();
        state.history.clear();
        let entries = saved["objects"]
            .as_array()
            .ok_or_else(|| bad("missing objects"))?;
        for entry in entries {
            let field = |f: &str| entry[f].as_str().map(String::from).ok_or_else(|| bad(f));
            let key = ObjectKey {
                group: field("group")?,
                resource: field("resource")?,
                namespace: field("namespace")?,
                name: field("name")?,
            };
            let object = entry["object"].clone();
            if key.group == "apiextensions.k8s.io" && key.resource == "customresourcedefinitions" {
                state.registry.register_crd(&object);
            }
            state.objects.insert(key, Arc::new(object));
        }
        state.resource_version = saved["resourceVersion"]
            .as_u64()
            .ok_or_else(|| bad("missing resourceVersion"))?;
        state.oldest_watchable = state.resource_version;
        Ok(state)
    }
}
