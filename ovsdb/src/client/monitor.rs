//! Monitors: `monitor_cond` (update2) and `monitor_cond_since` (update3), their
//! condition changes and cancellation, and resuming them after a reconnect.
//!
//! Wire forms (ovsdb-server(7) §4.1.12–4.1.15):
//! - `monitor_cond` params `[db, id, {table: [{columns?, where?}]}]`, result
//!   `<table-updates2>`; then `update2` notifications `[id, <table-updates2>]`.
//! - `monitor_cond_since` params `[db, id, requests, last-txn-id]`, result
//!   `[found, last-txn-id, <table-updates2>]`; then `update3` notifications
//!   `[id, last-txn-id, <table-updates2>]`. With `found=true` the updates are only what
//!   changed since `last-txn-id` (clustered servers); with `found=false` they are the
//!   full contents and the replica starts over (standalone servers always answer
//!   `found=false` with the all-zero id).
//! - `monitor_cond_change` params `[old-id, new-id, {table: [{where}]}]`, result `{}`;
//!   the updates it causes arrive *before* the reply and already carry the new id.
//! - `monitor_cancel` params `[id]`, result `{}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::ser::SerializeMap;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tracing::{debug, warn};

use super::error::Error;
use crate::cache::Writer;
use crate::operation::Condition;
use crate::schema::DatabaseSchema;
use crate::update::{MonitorCondSinceReply, TableUpdates2, Update3Notification};
use crate::value::Uuid;

/// The all-zero transaction id: "no history", asks for the full contents.
pub(crate) const ZERO_TXN_ID: &str = "00000000-0000-0000-0000-000000000000";

/// Which monitor method to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MonitorMethod {
    /// `monitor_cond` / `update2`: a reconnect downloads everything again.
    Cond,
    /// `monitor_cond_since` / `update3` (OVS ≥ 2.12): a reconnect to a clustered server
    /// only downloads what changed.
    #[default]
    CondSince,
}

impl MonitorMethod {
    fn as_str(self) -> &'static str {
        match self {
            MonitorMethod::Cond => "monitor_cond",
            MonitorMethod::CondSince => "monitor_cond_since",
        }
    }
}

/// What to monitor in one table: all or some columns, all or some rows.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorRequest {
    /// Table name.
    pub table: String,
    /// Columns to replicate; `None` means all.
    pub columns: Option<Vec<String>>,
    /// Conjunction of conditions rows must satisfy; `None` means every row.
    pub conditions: Option<Vec<Condition>>,
}

impl MonitorRequest {
    /// Every column of every row of `table`.
    pub fn table(table: impl Into<String>) -> Self {
        MonitorRequest {
            table: table.into(),
            columns: None,
            conditions: None,
        }
    }

    /// Replicate only these columns.
    pub fn with_columns<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Replicate only rows matching all of `conditions`.
    pub fn with_conditions(mut self, conditions: Vec<Condition>) -> Self {
        self.conditions = Some(conditions);
        self
    }
}

/// `{table: [{columns?, where?}], ...}`; `with_columns` false for `monitor_cond_change`,
/// which does not support changing columns.
struct RequestsJson<'a> {
    requests: &'a [MonitorRequest],
    with_columns: bool,
}

impl Serialize for RequestsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.requests.len()))?;
        for request in self.requests {
            let mut body = serde_json::Map::new();
            if let (true, Some(columns)) = (self.with_columns, &request.columns) {
                body.insert("columns".into(), json!(columns));
            }
            if let Some(conditions) = &request.conditions {
                let conditions =
                    serde_json::to_value(conditions).map_err(serde::ser::Error::custom)?;
                body.insert("where".into(), conditions);
            }
            map.serialize_entry(&request.table, &[Value::Object(body)])?;
        }
        map.end()
    }
}

#[derive(Debug)]
struct Entry {
    database: String,
    id: String,
    method: MonitorMethod,
    requests: Vec<MonitorRequest>,
    /// Resume point for `monitor_cond_since` (the nil uuid on standalone servers).
    last_txn_id: Option<Uuid>,
    /// Started on some connection: resumed by the session set-up after a reconnect.
    active: bool,
    /// How many times the server sent the full contents (`found=false` or `monitor_cond`)
    /// rather than a delta.
    full_loads: u64,
    /// Why the replica is being reloaded from scratch, while that reload is in flight:
    /// updates from the old monitor are ignored until the full contents arrive.
    resync: Option<String>,
    schema: Arc<DatabaseSchema>,
    /// The replica this monitor feeds; written only on the client's background task.
    writer: Writer,
}

#[derive(Debug, Default)]
struct Registry {
    entries: HashMap<u64, Entry>,
    /// Monitor id on the wire -> entry key (two ids during a condition change).
    ids: HashMap<String, u64>,
}

/// What the reply to a monitor (re)start did to the replica.
#[derive(Debug, Default)]
pub(crate) struct Started {
    /// The reply ended a resync: the monitor's id on the wire and why it was needed.
    pub resynced: Option<(String, String)>,
    /// A delta did not apply: the replica must be reloaded from scratch (the transaction
    /// id is already forgotten).
    pub diverged: bool,
}

/// The client's monitors, shared by the handles and the background task.
#[derive(Debug, Clone, Default)]
pub(crate) struct Monitors {
    registry: Arc<Mutex<Registry>>,
}

impl Monitors {
    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn register(
        &self,
        key: u64,
        database: &str,
        method: MonitorMethod,
        requests: Vec<MonitorRequest>,
        writer: Writer,
    ) -> String {
        let id = format!("m{key}");
        let mut registry = self.lock();
        registry.ids.insert(id.clone(), key);
        registry.entries.insert(
            key,
            Entry {
                database: database.to_owned(),
                id: id.clone(),
                method,
                requests,
                last_txn_id: None,
                active: false,
                full_loads: 0,
                resync: None,
                schema: writer.store().schema().clone(),
                writer,
            },
        );
        id
    }

    pub fn keys(&self) -> Vec<u64> {
        let registry = self.lock();
        let mut keys: Vec<u64> = registry
            .entries
            .iter()
            .filter(|(_, e)| e.active)
            .map(|(k, _)| *k)
            .collect();
        keys.sort_unstable();
        keys
    }

    pub fn forget(&self, key: u64) {
        let mut registry = self.lock();
        if let Some(entry) = registry.entries.remove(&key) {
            registry.ids.retain(|_, k| *k != key);
            drop(entry);
        }
    }

    pub fn on_canceled(&self, id: &str) {
        let key = self.lock().ids.get(id).copied();
        if let Some(key) = key {
            self.forget(key);
        }
    }

    pub fn current_id(&self, key: u64) -> Option<String> {
        self.lock().entries.get(&key).map(|e| e.id.clone())
    }

    pub fn last_txn_id(&self, key: u64) -> Option<Uuid> {
        self.lock().entries.get(&key).and_then(|e| e.last_txn_id)
    }

    pub fn full_loads(&self, key: u64) -> u64 {
        self.lock().entries.get(&key).map_or(0, |e| e.full_loads)
    }

    /// The method and params that (re)start monitor `key`, resuming from its last
    /// transaction id when it has one.
    pub fn start_request(&self, key: u64) -> (&'static str, Value) {
        let registry = self.lock();
        let Some(entry) = registry.entries.get(&key) else {
            return ("monitor_cond", json!([]));
        };
        let requests = serde_json::to_value(RequestsJson {
            requests: &entry.requests,
            with_columns: true,
        })
        .unwrap_or(Value::Null);
        let mut params = json!([entry.database, entry.id, requests]);
        if entry.method == MonitorMethod::CondSince {
            let since = entry.last_txn_id.map(|u| u.to_string());
            if let Some(params) = params.as_array_mut() {
                params.push(json!(since.as_deref().unwrap_or(ZERO_TXN_ID)));
            }
        }
        (entry.method.as_str(), params)
    }

    /// Applies the reply to a monitor (re)start to its replica.
    pub fn on_start_reply(&self, key: u64, result: &RawValue) -> Result<Started, Error> {
        let mut registry = self.lock();
        let Some(entry) = registry.entries.get_mut(&key) else {
            return Ok(Started::default());
        };
        let method = entry.method.as_str();
        let (applied, delta) = match entry.method {
            MonitorMethod::Cond => {
                let updates = TableUpdates2::from_str(result.get(), &entry.schema)
                    .map_err(|e| Error::bad_reply(method, e))?;
                (entry.writer.replace(updates), false)
            }
            MonitorMethod::CondSince => {
                let reply = MonitorCondSinceReply::from_str(result.get(), &entry.schema)
                    .map_err(|e| Error::bad_reply(method, e))?;
                debug!(monitor = %entry.id, found = reply.found, rows = reply.updates.row_count(), "monitor_cond_since reply");
                entry.last_txn_id = Some(reply.last_txn_id);
                entry.full_loads += u64::from(!reply.found);
                let delta = reply.found;
                (entry.writer.apply_monitor_cond_since(reply), delta)
            }
        };
        entry.active = true;
        let mut started = Started {
            resynced: entry.resync.take().map(|why| (entry.id.clone(), why)),
            diverged: false,
        };
        if let Err(error) = applied {
            warn!(monitor = %entry.id, %error, "monitor reply did not apply cleanly");
            // A delta on a replica that diverged: reload. A full load that does not apply
            // cleanly is what the server has; reloading it again would not help.
            if delta {
                entry.last_txn_id = None;
                entry.resync = Some(format!("resuming did not apply: {error}"));
                started.diverged = true;
            }
        }
        Ok(started)
    }

    /// Applies an `update2` or `update3` notification to its monitor's replica. An error
    /// means the notification could not be decoded (the replica would diverge). `Some`
    /// names a monitor whose replica diverged (the update did not apply): its transaction
    /// id is forgotten and it must be restarted from scratch.
    pub fn on_update(&self, method: &str, params: &RawValue) -> Result<Option<u64>, String> {
        let (id, last, updates): (String, Option<&str>, &RawValue) = match method {
            "update3" => {
                let (id, last, updates): (String, &str, &RawValue) =
                    serde_json::from_str(params.get()).map_err(|e| e.to_string())?;
                (id, Some(last), updates)
            }
            "update2" => {
                let (id, updates): (String, &RawValue) =
                    serde_json::from_str(params.get()).map_err(|e| e.to_string())?;
                (id, None, updates)
            }
            other => return Err(format!("unsupported notification {other}")),
        };
        let mut registry = self.lock();
        let Some(key) = registry.ids.get(&id).copied() else {
            // A monitor we canceled; its last updates may still be in flight.
            return Ok(None);
        };
        let Some(entry) = registry.entries.get_mut(&key) else {
            return Ok(None);
        };
        if entry.resync.is_some() {
            // From the monitor being replaced: the full contents supersede it.
            return Ok(None);
        }
        let decoded = TableUpdates2::from_str(updates.get(), &entry.schema);
        let updates = decoded.inspect_err(|_| entry.last_txn_id = None);
        let updates = updates.map_err(|e| e.to_string())?;
        let applied = match last {
            Some(last) => {
                let last_txn_id: Uuid =
                    last.parse().map_err(|e| format!("bad last-txn-id: {e}"))?;
                entry.last_txn_id = Some(last_txn_id);
                entry.writer.apply_update3(Update3Notification {
                    monitor_id: Value::String(id),
                    last_txn_id,
                    updates,
                })
            }
            None => entry.writer.apply_update2(updates),
        };
        match applied {
            Ok(()) => Ok(None),
            Err(error) => {
                // The replica no longer matches the server, and resuming from this
                // transaction id would only send what comes after: start over.
                warn!(monitor = %entry.id, %error, "update did not apply; reloading the monitor from scratch");
                entry.last_txn_id = None;
                entry.resync = Some(format!("{method} did not apply: {error}"));
                Ok(Some(key))
            }
        }
    }

    /// Prepares `monitor_cond_change`: returns its params and maps the new id to the
    /// monitor already (the server sends the resulting updates under the new id before
    /// it replies).
    pub fn begin_change(
        &self,
        key: u64,
        new_key: u64,
        requests: &[MonitorRequest],
    ) -> Option<(String, Value)> {
        let mut registry = self.lock();
        let old_id = registry.entries.get(&key)?.id.clone();
        let new_id = format!("m{key}.{new_key}");
        registry.ids.insert(new_id.clone(), key);
        let conditions = serde_json::to_value(RequestsJson {
            requests,
            with_columns: false,
        })
        .ok()?;
        Some((new_id.clone(), json!([old_id, new_id, conditions])))
    }

    /// Completes (or rolls back) a condition change.
    pub fn end_change(&self, key: u64, new_id: &str, requests: Option<Vec<MonitorRequest>>) {
        let mut registry = self.lock();
        match requests {
            Some(requests) => {
                let Some(entry) = registry.entries.get_mut(&key) else {
                    return;
                };
                let old_id = std::mem::replace(&mut entry.id, new_id.to_owned());
                for change in requests {
                    // Columns cannot change; keep them, take the new conditions.
                    if let Some(request) =
                        entry.requests.iter_mut().find(|r| r.table == change.table)
                    {
                        request.conditions = change.conditions;
                    }
                }
                registry.ids.remove(&old_id);
            }
            None => {
                registry.ids.remove(new_id);
            }
        }
    }
}
