//! Saving and loading the store, so a sandbox cluster survives a restart
//! (and a crash) the way a Kubernetes cluster survives one: every write the
//! server acknowledged is durable, and no resourceVersion is handed out
//! twice.
//!
//! Two files: the snapshot `STATE` (one JSON document, `{"resourceVersion":
//! N, "objects": [{"group", "resource", "namespace", "name", "object"},
//! ...]}`) and the journal `STATE.journal`, one JSON line per change
//! committed since the snapshot, appended (and, by default, fsynced) before
//! the write is answered. Loading replays the journal over the snapshot; a
//! torn last line (a crash mid-append) is the one write that was never
//! acknowledged. A checkpoint writes a new snapshot (fsynced, then renamed
//! over the old one) and empties the journal.
//!
//! The watch history is not saved: after a restart a watch from any older
//! resourceVersion gets 410 Gone and relists, as clients of a restarted
//! kube-apiserver do (its watch cache starts at the current revision).

use super::watch::{Change, EventType};
use super::{ObjectKey, State};
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The append-only change log next to a snapshot.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    fsync: bool,
}

/// `STATE.journal` for a snapshot at `STATE`.
pub fn journal_path(snapshot: &Path) -> PathBuf {
    let mut name = snapshot.as_os_str().to_owned();
    name.push(".journal");
    PathBuf::from(name)
}

impl Journal {
    fn append(&mut self, change: &Change) -> io::Result<()> {
        let k = &change.key;
        let mut line = serde_json::to_vec(&json!({
            "rv": change.rv, "group": k.group, "resource": k.resource,
            "namespace": k.namespace, "name": k.name,
            "deleted": change.event == EventType::Deleted,
            "object": change.object.as_ref(),
        }))
        .map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        if self.fsync {
            self.file.sync_data()?;
        }
        Ok(())
    }
}

fn key_of(entry: &Value) -> io::Result<ObjectKey> {
    let field = |f: &str| {
        entry[f].as_str().map(String::from).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("state file: missing {f}"),
            )
        })
    };
    Ok(ObjectKey {
        group: field("group")?,
        resource: field("resource")?,
        namespace: field("namespace")?,
        name: field("name")?,
    })
}

/// Writes `bytes` to `path` so that after a crash the file holds either the
/// old or the new content, whole.
fn write_durably(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut file = File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

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

    /// Writes the snapshot durably (temp file, fsync, rename).
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let bytes = serde_json::to_vec(&self.snapshot()).map_err(io::Error::other)?;
        write_durably(path, &bytes)
    }

    /// A store restored from a snapshot (if the file exists) and its journal
    /// (if that exists).
    pub fn load(path: &Path, history_limit: usize) -> io::Result<State> {
        let mut state = State::new(history_limit);
        if path.exists() {
            let saved: Value =
                serde_json::from_slice(&std::fs::read(path)?).map_err(io::Error::other)?;
            state.objects.clear();
            let entries = saved["objects"].as_array().ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "state file: missing objects")
            })?;
            for entry in entries {
                state.restore(key_of(entry)?, Some(entry["object"].clone()));
            }
            state.resource_version = saved["resourceVersion"].as_u64().ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "state file: missing resourceVersion",
                )
            })?;
        }
        state.replay_journal(&journal_path(path))?;
        state.history.clear();
        state.oldest_watchable = state.resource_version;
        state.dirty = false;
        Ok(state)
    }

    fn replay_journal(&mut self, path: &Path) -> io::Result<()> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for line in io::BufReader::new(file).lines() {
            let line = line?;
            let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                // Only the last append can be torn, and it was never answered.
                tracing::warn!(path = %path.display(), "ignoring a torn journal entry");
                break;
            };
            let rv = entry["rv"].as_u64().unwrap_or_default();
            if rv <= self.resource_version {
                continue; // already in the snapshot
            }
            let object =
                (!entry["deleted"].as_bool().unwrap_or(false)).then(|| entry["object"].clone());
            self.restore(key_of(&entry)?, object);
            self.resource_version = rv;
        }
        Ok(())
    }

    /// Puts back (or removes, for `None`) one object while loading.
    fn restore(&mut self, key: ObjectKey, object: Option<Value>) {
        let is_crd =
            key.group == "apiextensions.k8s.io" && key.resource == "customresourcedefinitions";
        match object {
            Some(object) => {
                if is_crd {
                    self.registry.register_crd(&object);
                }
                self.objects.insert(key, Arc::new(object));
            }
            None => {
                if let Some(old) = self.objects.remove(&key).filter(|_| is_crd) {
                    let group = old["spec"]["group"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let plural = old["spec"]["names"]["plural"].as_str().unwrap_or_default();
                    self.registry.unregister(&group, plural);
                }
            }
        }
    }

    /// From now on, appends every committed change to `STATE.journal`
    /// (fsynced if `fsync`) before the write returns.
    pub fn attach_journal(&mut self, snapshot: &Path, fsync: bool) -> io::Result<()> {
        let path = journal_path(snapshot);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        self.journal = Some(Journal { file, path, fsync });
        Ok(())
    }

    /// Logs a committed change. A failure cannot undo the change (it is
    /// already visible to watchers), so it is reported loudly; the next
    /// checkpoint writes the whole state again.
    pub(super) fn journal_change(&mut self, change: &Change) {
        if let Some(journal) = self.journal.as_mut() {
            if let Err(e) = journal.append(change) {
                tracing::error!(path = %journal.path.display(), error = %e,
                    "failed to journal a change: it is not durable until the next checkpoint");
            }
        }
    }

    /// Writes the snapshot durably and empties the journal.
    pub fn checkpoint(&mut self, snapshot: &Path) -> io::Result<()> {
        self.save(snapshot)?;
        if let Some(journal) = self.journal.as_mut() {
            journal.file.set_len(0)?;
            journal.file.sync_all()?;
        }
        Ok(())
    }
}
