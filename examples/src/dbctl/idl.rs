//! The tables one run of a tool touches, plus the transaction that run builds — a small
//! cousin of OVS's IDL, on the `ovsdb` crate's replica.
//!
//! Tables are fetched on first use with a one-shot `monitor_cond` (initial rows only),
//! decoded by the crate ([`TableUpdates2`]) and kept in its replica ([`Writer`]/[`Store`]).
//! What this module adds is what the crate's replica has no notion of: the order the C IDL
//! iterates rows in, which the C tools print in (the store keeps rows sorted by uuid; the
//! order comes from [`ovsdb::cache::order::idl_order`] over the reply's text order), and
//! this run's pending changes, kept beside the replica and shown through it, so chained
//! commands (`ls-add a -- lsp-add a p`) see each other's effects. [`Db::commit`] turns the
//! changes into one `transact`: new rows are `insert`ed under a UUID chosen here, changed
//! columns `update`d by `_uuid`, removed rows `delete`d by `_uuid`.

use super::notation::new_uuid;
use super::schema::{Schema, SchemaExt, TableExt};
use anyhow::{anyhow, bail, Result};
use ovsdb::cache::order::idl_order;
use ovsdb::cache::{Store, Writer};
use ovsdb::client::OneshotConnection;
use ovsdb::update::{RowUpdate, TableUpdate, TableUpdates, TableUpdates2};
use ovsdb::{Atom, Set, Uuid, Value};
use serde_json::{json, Map, Value as Json};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// One row as this run sees it: its UUID and its columns (fetched, then written).
#[derive(Debug, Clone)]
pub struct Row {
    pub uuid: String,
    pub cols: Arc<ovsdb::Row>,
}

static EMPTY: Value = Value::Set(Set::new());

impl Row {
    /// The value of `col` (empty if the column is unknown).
    pub fn get(&self, col: &str) -> &Value {
        self.cols.get(col).unwrap_or(&EMPTY)
    }

    /// A string column's value ("" when empty).
    pub fn str(&self, col: &str) -> &str {
        self.get(col).as_str().unwrap_or("")
    }

    /// A string-to-string map column's entry.
    pub fn map_get(&self, col: &str, key: &str) -> Option<&str> {
        self.get(col).as_map()?.get_str(key)?.as_str()
    }

    /// The UUIDs of a reference column.
    pub fn refs(&self, col: &str) -> Vec<String> {
        self.get(col)
            .keys()
            .filter_map(|a| a.as_uuid().map(|u| u.to_string()))
            .collect()
    }
}

#[derive(Debug, Default)]
struct TableData {
    /// Row UUIDs in iteration order; rows inserted by this run go last.
    order: Vec<String>,
    /// The columns fetched for every row, or `None` when all were. Lookups by name fetch
    /// only the name column of a big table (as the C tools' "pre" phase does); rows then
    /// used are completed one by one ([`Db::get`]).
    columns: Option<BTreeSet<String>>,
    /// Rows completed with all their columns.
    filled: HashSet<String>,
}

/// Per table to fetch, the columns it then holds (`None`: all).
type FetchPlan = Vec<(String, Option<BTreeSet<String>>)>;

/// The replica plus pending changes.
#[derive(Debug)]
pub struct Db {
    pub schema: Schema,
    conn: OneshotConnection,
    /// Rows as the server sent them.
    replica: Writer,
    store: Store,
    tables: HashMap<String, TableData>,
    /// Column values this run wrote, per `(table, uuid)`; every column of a row it inserted.
    written: HashMap<(String, String), ovsdb::Row>,
    inserted: Vec<(String, String)>,
    modified: BTreeSet<(String, String, String)>,
    deleted: Vec<(String, String)>,
    monitor_id: u64,
}

impl Db {
    /// Fetches the schema of `db_name` over `conn`.
    pub fn open(mut conn: OneshotConnection, db_name: &str) -> Result<Db> {
        let (schema, _) = conn.get_schema(db_name)?;
        let replica = Writer::new(Arc::new(schema.clone()));
        let store = replica.store();
        Ok(Db {
            schema,
            conn,
            replica,
            store,
            tables: HashMap::new(),
            written: HashMap::new(),
            inserted: Vec::new(),
            modified: BTreeSet::new(),
            deleted: Vec::new(),
            monitor_id: 0,
        })
    }

    /// Fetches `tables` (all columns) that are not fully in the replica yet, in one
    /// round trip.
    pub fn load(&mut self, tables: &[&str]) -> Result<()> {
        let wanted: Vec<(&str, Option<Vec<String>>)> = tables.iter().map(|t| (*t, None)).collect();
        self.fetch(&wanted)
    }

    /// Makes sure `columns` of every row of `table` are in the replica, fetching only
    /// what is missing.
    pub fn load_columns(&mut self, table: &str, columns: &[&str]) -> Result<()> {
        let cols: Vec<String> = columns.iter().map(|c| (*c).to_owned()).collect();
        self.fetch(&[(table, Some(cols))])
    }

    fn has_columns(&self, table: &str, want: &Option<Vec<String>>) -> bool {
        match (self.tables.get(table), want) {
            (None, _) => false,
            (Some(d), _) if d.columns.is_none() => true,
            (Some(_), None) => false,
            (Some(d), Some(w)) => w
                .iter()
                .all(|c| d.columns.as_ref().is_some_and(|h| h.contains(c))),
        }
    }

    /// The `monitor_cond` request for what of `wanted` is missing, and per table the
    /// columns it will then hold (`None`: all).
    fn plan(
        &self,
        wanted: &[(&str, Option<Vec<String>>)],
    ) -> Result<(Map<String, Json>, FetchPlan)> {
        let mut requests = Map::new();
        let mut plan = Vec::new();
        for (t, want) in wanted {
            if self.has_columns(t, want) {
                continue;
            }
            let table = self.schema.table_or_err(t)?;
            let columns: Option<BTreeSet<String>> = want.as_ref().map(|w| {
                let had = self
                    .tables
                    .get(*t)
                    .and_then(|d| d.columns.clone())
                    .unwrap_or_default();
                w.iter()
                    .filter(|c| table.columns.contains_key(*c))
                    .cloned()
                    .chain(had)
                    .collect()
            });
            let list: Vec<&String> = match &columns {
                Some(c) => c.iter().collect(),
                None => table.columns.keys().collect(),
            };
            let select =
                json!({"initial": true, "insert": false, "delete": false, "modify": false});
            requests.insert(
                (*t).to_owned(),
                json!([{"columns": list, "select": select}]),
            );
            plan.push(((*t).to_owned(), columns));
        }
        Ok((requests, plan))
    }

    fn fetch(&mut self, wanted: &[(&str, Option<Vec<String>>)]) -> Result<()> {
        let (requests, plan) = self.plan(wanted)?;
        if plan.is_empty() {
            return Ok(());
        }
        // `monitor_cond` (update2 notation), as the C IDL uses.
        self.monitor_id += 1;
        let params = json!([self.schema.name, self.monitor_id, requests]);
        let raw = self.conn.call("monitor_cond", &params)?;
        let updates = TableUpdates2::from_str(raw.get(), &self.schema)?;
        // The C IDL's order derives from the order of the reply's text, which the crate
        // keeps and its store does not.
        let mut orders: HashMap<&str, Vec<String>> = HashMap::new();
        for update in &updates.tables {
            let uuids: Vec<Uuid> = update.rows.iter().map(|(u, _)| *u).collect();
            let order = idl_order(&uuids).into_iter();
            orders.insert(&update.table, order.map(|i| uuids[i].to_string()).collect());
        }
        let mut fetched: Vec<(String, Vec<String>)> = plan
            .iter()
            .map(|(t, _)| (t.clone(), orders.remove(t.as_str()).unwrap_or_default()))
            .collect();
        drop(orders);
        self.replica.apply_update2(updates)?;
        for ((t, columns), (_, order)) in plan.into_iter().zip(fetched.drain(..)) {
            let old = self.tables.remove(&t).unwrap_or_default();
            let known: HashSet<&String> = order.iter().collect();
            // Rows this run inserted stay, after the fetched ones.
            let kept = old.order.iter().filter(|u| !known.contains(u)).cloned();
            let order: Vec<String> = order.iter().cloned().chain(kept).collect();
            let data = TableData {
                order: order
                    .into_iter()
                    .filter(|u| !self.is_deleted(&t, u))
                    .collect(),
                columns,
                filled: old.filled,
            };
            self.tables.insert(t, data);
        }
        Ok(())
    }

    fn is_deleted(&self, table: &str, uuid: &str) -> bool {
        self.deleted.iter().any(|(t, u)| t == table && u == uuid)
    }

    fn is_inserted(&self, table: &str, uuid: &str) -> bool {
        self.inserted.iter().any(|(t, u)| t == table && u == uuid)
    }

    fn fetched(&self, table: &str, uuid: &str) -> Option<Arc<ovsdb::Row>> {
        self.store.get(table, &uuid.parse().ok()?)
    }

    /// Whether this run sees the row (fetched or inserted, not deleted).
    fn exists(&self, table: &str, uuid: &str) -> bool {
        self.tables.contains_key(table)
            && !self.is_deleted(table, uuid)
            && (self
                .written
                .contains_key(&(table.to_owned(), uuid.to_owned()))
                || self.fetched(table, uuid).is_some())
    }

    /// The row as this run sees it: as fetched, with the default-valued columns the
    /// reply leaves out put back, then what this run wrote.
    fn view(&self, table: &str, uuid: &str) -> Option<Row> {
        if !self.exists(table, uuid) {
            return None;
        }
        let data = &self.tables[table];
        let written = self.written.get(&(table.to_owned(), uuid.to_owned()));
        let mut cols = self.fetched(table, uuid).unwrap_or_default();
        let schema_table = self.schema.tables.get(table)?;
        let complete = data.columns.is_none() || data.filled.contains(uuid);
        let held = |c: &String| complete || data.columns.as_ref().is_some_and(|k| k.contains(c));
        let missing: Vec<_> = (schema_table.columns.iter())
            .filter(|(c, _)| !cols.contains(c) && held(c))
            .collect();
        // Copy the shared row only when something is to be added to it.
        if written.is_some() || !missing.is_empty() {
            let row = Arc::make_mut(&mut cols);
            for (c, col) in missing {
                row.insert(c.clone(), col.type_.default_value());
            }
            for (c, v) in written.into_iter().flatten() {
                row.insert(c.clone(), v.clone());
            }
        }
        Some(Row {
            uuid: uuid.to_owned(),
            cols,
        })
    }

    /// Completes one row of a partially fetched table with all its columns (one `select`
    /// by `_uuid`), keeping values this run wrote.
    fn fill_row(&mut self, table: &str, uuid: &str) -> Result<()> {
        let Some(data) = self.tables.get(table) else {
            return Ok(());
        };
        if data.columns.is_none() || data.filled.contains(uuid) || !self.exists(table, uuid) {
            return Ok(());
        }
        if self.is_inserted(table, uuid) {
            return Ok(());
        }
        let op =
            json!({"op": "select", "table": table, "where": [["_uuid", "==", ["uuid", uuid]]]});
        let results = self.conn.transact(&self.schema.name, &[op])?;
        let fetched = results
            .first()
            .and_then(|r| r["rows"].get(0))
            .cloned()
            .unwrap_or_default();
        let schema_table = self.schema.table_or_err(table)?;
        let mut row = ovsdb::Row::new();
        for (cname, col) in &schema_table.columns {
            if let Some(j) = fetched.get(cname) {
                row.insert(cname.clone(), Value::from_json_typed(j, &col.type_)?);
            }
        }
        // An RFC 7047 `update` modify: the fetched columns merge into the replica's row.
        let merge = RowUpdate {
            old: Some(ovsdb::Row::new()),
            new: Some(row),
        };
        let update = TableUpdate {
            table: Arc::from(table),
            rows: vec![(uuid.parse()?, merge)],
        };
        self.replica.apply_update(TableUpdates {
            tables: vec![update],
        })?;
        if let Some(data) = self.tables.get_mut(table) {
            data.filled.insert(uuid.to_owned());
        }
        Ok(())
    }

    /// Rows of `table` in the C tools' iteration order, holding at least `columns`
    /// (others may be missing: use [`Db::get`] for a whole row).
    pub fn index_rows(&mut self, table: &str, columns: &[&str]) -> Result<Vec<Row>> {
        self.load_columns(table, columns)?;
        Ok(self.ordered(table))
    }

    /// Rows of `table` in the C tools' iteration order.
    pub fn rows(&mut self, table: &str) -> Result<Vec<Row>> {
        self.load(&[table])?;
        Ok(self.ordered(table))
    }

    fn ordered(&self, table: &str) -> Vec<Row> {
        let data = &self.tables[table];
        data.order
            .iter()
            .filter_map(|u| self.view(table, u))
            .collect()
    }

    /// The row of `table` with `uuid`, if present.
    pub fn get(&mut self, table: &str, uuid: &str) -> Result<Option<Row>> {
        if self.tables.contains_key(table) {
            self.fill_row(table, uuid)?;
        } else {
            self.load(&[table])?;
        }
        Ok(self.view(table, uuid))
    }

    /// Like [`Db::get`] for a row known to exist.
    pub fn row(&mut self, table: &str, uuid: &str) -> Result<Row> {
        self.get(table, uuid)?
            .ok_or_else(|| anyhow!("{table} row {uuid} vanished"))
    }

    /// Inserts a row with default values; returns its provisional UUID.
    pub fn insert(&mut self, table: &str) -> Result<String> {
        self.insert_with_uuid(table, new_uuid())
    }

    /// Inserts a row under a given provisional UUID (e.g. one an `@name` symbol stands for).
    pub fn insert_with_uuid(&mut self, table: &str, uuid: String) -> Result<String> {
        // No need to fetch anything to add a row: an unfetched table starts as a partial
        // one with no columns, and later fetches keep the new row.
        let t = self.schema.table_or_err(table)?;
        let cols: ovsdb::Row = t
            .columns
            .iter()
            .map(|(n, c)| (n.clone(), c.type_.default_value()))
            .collect();
        let data = self
            .tables
            .entry(table.to_owned())
            .or_insert_with(|| TableData {
                columns: Some(BTreeSet::new()),
                ..TableData::default()
            });
        data.order.push(uuid.clone());
        self.written.insert((table.to_owned(), uuid.clone()), cols);
        self.inserted.push((table.to_owned(), uuid.clone()));
        Ok(uuid)
    }

    /// Writes `datum` into `col` of a row.
    pub fn set(&mut self, table: &str, uuid: &str, col: &str, datum: Value) -> Result<()> {
        self.schema.table_or_err(table)?.column_or_err(col)?;
        if !self.exists(table, uuid) {
            bail!("{table} row {uuid} not found");
        }
        self.written
            .entry((table.to_owned(), uuid.to_owned()))
            .or_default()
            .insert(col.to_owned(), datum);
        self.modified
            .insert((table.to_owned(), uuid.to_owned(), col.to_owned()));
        Ok(())
    }

    /// Adds `atom` to a set column.
    pub fn set_add(&mut self, table: &str, uuid: &str, col: &str, atom: Atom) -> Result<()> {
        let mut set = self.set_column(table, uuid, col)?;
        set.insert(atom);
        self.set(table, uuid, col, Value::Set(set))
    }

    /// Removes `atom` from a set column.
    pub fn set_remove(&mut self, table: &str, uuid: &str, col: &str, atom: &Atom) -> Result<()> {
        let mut set = self.set_column(table, uuid, col)?;
        set.remove(atom);
        self.set(table, uuid, col, Value::Set(set))
    }

    /// The value of a set column of a row.
    fn set_column(&mut self, table: &str, uuid: &str, col: &str) -> Result<Set> {
        match self.row(table, uuid)?.get(col) {
            Value::Set(set) => Ok(set.clone()),
            Value::Map(_) => bail!("{table}.{col} is a map, not a set"),
        }
    }

    /// Deletes a row.
    pub fn delete(&mut self, table: &str, uuid: &str) -> Result<()> {
        if !self.tables.contains_key(table) {
            bail!("{table} not loaded");
        }
        if !self.exists(table, uuid) {
            bail!("{table} row {uuid} not found");
        }
        if let Some(data) = self.tables.get_mut(table) {
            data.order.retain(|u| u != uuid);
        }
        self.deleted.push((table.to_owned(), uuid.to_owned()));
        Ok(())
    }

    /// Sends all pending changes as one transaction. Returns the map from provisional to
    /// real UUIDs of inserted rows. A run that changed nothing sends nothing.
    pub fn commit(&mut self) -> Result<HashMap<String, String>> {
        // Rows are inserted under the UUIDs chosen here, so references to them are plain
        // UUIDs (ovsdb-server checks references at commit, after every insert). No
        // `named-uuid`: a forward reference to one gets a UUID of the server's choosing,
        // not the one an insert's `"uuid"` asks for.
        let mut ops = Vec::new();
        let mut insert_order = Vec::new();
        for (t, u) in &self.inserted {
            let Some(row) = self.view(t, u) else {
                continue;
            };
            let mut cols = Map::new();
            for (c, d) in row.cols.iter() {
                let written = (t.clone(), u.clone(), c.to_owned());
                if !d.is_empty() || self.modified.contains(&written) {
                    cols.insert(c.to_owned(), d.to_json());
                }
            }
            // The row gets the UUID chosen here (not one the server picks): a retry
            // after an unknown outcome inserts under the same UUID (see
            // `datum::new_uuid`), and the outcome can be read back by UUID.
            ops.push(json!({"op": "insert", "table": t, "uuid": u, "row": cols}));
            insert_order.push((ops.len() - 1, u.clone()));
        }
        let mut updates: HashMap<(&String, &String), Map<String, Json>> = HashMap::new();
        for (t, u, c) in &self.modified {
            if self.is_inserted(t, u) {
                continue;
            }
            if let Some(row) = self.view(t, u) {
                updates
                    .entry((t, u))
                    .or_default()
                    .insert(c.clone(), row.get(c).to_json());
            }
        }
        let mut updates: Vec<_> = updates.into_iter().collect();
        updates.sort_by(|a, b| a.0.cmp(&b.0));
        for ((t, u), cols) in updates {
            let cond = json!([["_uuid", "==", ["uuid", u]]]);
            ops.push(json!({"op": "update", "table": t, "where": cond, "row": cols}));
        }
        for (t, u) in &self.deleted {
            if !self.is_inserted(t, u) {
                let cond = json!([["_uuid", "==", ["uuid", u]]]);
                ops.push(json!({"op": "delete", "table": t, "where": cond}));
            }
        }
        if ops.is_empty() {
            return Ok(HashMap::new());
        }
        let results = self.conn.transact(&self.schema.name, &ops)?;
        if let Some(err) = results
            .iter()
            .find(|r| r.get("error").is_some_and(|e| !e.is_null()))
        {
            return Err(CommitFailed::from_error(err).into());
        }
        let mut real = HashMap::new();
        for (i, provisional) in insert_order {
            if let Some(u) = results.get(i).and_then(|r| r["uuid"][1].as_str()) {
                real.insert(provisional, u.to_owned());
            }
        }
        self.inserted.clear();
        self.modified.clear();
        self.deleted.clear();
        Ok(real)
    }

    /// The first row this run inserts, as `(table, uuid)`: reading it back tells whether
    /// a commit whose reply was lost went through.
    pub fn first_insert(&self) -> Option<(String, String)> {
        self.inserted
            .iter()
            .find(|(t, u)| self.exists(t, u))
            .cloned()
    }

    /// Whether `table` has a row with `uuid` on the server now.
    pub fn row_exists(&mut self, table: &str, uuid: &str) -> Result<bool> {
        let op = json!({"op": "select", "table": table,
                        "where": [["_uuid", "==", ["uuid", uuid]]], "columns": ["_uuid"]});
        let results = self.conn.transact(&self.schema.name, &[op])?;
        Ok(results
            .first()
            .and_then(|r| r["rows"].as_array())
            .is_some_and(|rows| !rows.is_empty()))
    }
}

/// A transaction the server refused, sorted by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum CommitFailed {
    /// The cluster could not commit it (leadership changed, log prerequisite not met):
    /// it may or may not have committed; read back and run the commands again.
    #[error("transaction error: {0}")]
    Cluster(String),
    /// An insert's UUID already exists: a previous attempt of this run committed.
    #[error("transaction error: {0}")]
    DuplicateUuid(String),
    /// The commands' changes are invalid: report it.
    #[error("transaction error: {0}")]
    Rejected(String),
}

impl CommitFailed {
    fn from_error(err: &Json) -> CommitFailed {
        let text = transaction_error_text(err);
        match err["error"].as_str() {
            Some("cluster error" | "not leader" | "timed out") => CommitFailed::Cluster(text),
            Some("duplicate uuid") => CommitFailed::DuplicateUuid(text),
            _ => CommitFailed::Rejected(text),
        }
    }
}

/// The C tools print a failed operation as its JSON object with sorted members.
fn transaction_error_text(err: &Json) -> String {
    let mut members: Vec<(&String, &Json)> = err.as_object().into_iter().flatten().collect();
    members.sort_by(|a, b| a.0.cmp(b.0));
    let body: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{}", json!(k), v))
        .collect();
    format!("{{{}}}", body.join(","))
}
