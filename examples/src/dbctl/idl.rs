//! An in-memory replica of the tables one run of a tool touches, plus the transaction that
//! run builds — a small cousin of OVS's IDL.
//!
//! Tables are fetched on first use with a one-shot `monitor_cond` (initial rows only,
//! decoded by the `ovsdb` crate into its [`ovsdb::Row`]s), rows are kept in the order the
//! C IDL would iterate them ([`ovsdb::cache::order::idl_order`]: the crate's `Store` keeps
//! rows sorted by uuid, which the C tools do not print in), and every change a command makes
//! is applied to the replica at once, so chained commands (`ls-add a -- lsp-add a p`) see
//! each other's effects: that pending state is what this replica adds to the crate's.
//! [`Db::commit`] turns the changes into one `transact`: new rows are `insert`ed under a
//! UUID chosen here, changed columns `update`d by `_uuid`, removed rows `delete`d by
//! `_uuid`.

use super::notation::new_uuid;
use super::schema::{ColumnType, Schema, SchemaExt, TableExt};
use anyhow::{anyhow, bail, Result};
use ovsdb::cache::order::idl_order;
use ovsdb::client::OneshotConnection;
use ovsdb::update::{RowUpdate2, TableUpdates2};
use ovsdb::{Atom, Set, Uuid, Value};
use serde_json::{json, Map, Value as Json};
use std::collections::{BTreeSet, HashMap, HashSet};

/// One row: its UUID and every column's value.
#[derive(Debug, Clone)]
pub struct Row {
    pub uuid: String,
    pub cols: ovsdb::Row,
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
    rows: HashMap<String, Row>,
    /// The columns fetched for every row, or `None` when all were. Lookups by name fetch
    /// only the name column of a big table (as the C tools' "pre" phase does); rows then
    /// used are completed one by one ([`Db::get`]).
    columns: Option<BTreeSet<String>>,
    /// Rows completed with all their columns.
    filled: HashSet<String>,
}

/// The replica plus pending changes.
#[derive(Debug)]
pub struct Db {
    pub schema: Schema,
    conn: OneshotConnection,
    tables: HashMap<String, TableData>,
    inserted: Vec<(String, String)>,
    modified: BTreeSet<(String, String, String)>,
    deleted: Vec<(String, String)>,
    monitor_id: u64,
}

/// The default value of a column (RFC 7047 §5.1: empty unless `min` is 1).
fn default_datum(ty: &ColumnType) -> Value {
    ty.default_value()
}

impl Db {
    /// Fetches the schema of `db_name` over `conn`.
    pub fn open(mut conn: OneshotConnection, db_name: &str) -> Result<Db> {
        let (schema, _) = conn.get_schema(db_name)?;
        Ok(Db {
            schema,
            conn,
            tables: HashMap::new(),
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

    fn fetch(&mut self, wanted: &[(&str, Option<Vec<String>>)]) -> Result<()> {
        let mut requests = Map::new();
        let mut plan: Vec<(String, Option<BTreeSet<String>>)> = Vec::new();
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
        if plan.is_empty() {
            return Ok(());
        }
        // `monitor_cond` (update2 notation), as the C IDL uses: its initial rows come in
        // UUID order, which the row-order replay starts from.
        self.monitor_id += 1;
        let params = json!([self.schema.name, self.monitor_id, requests]);
        let raw = self.conn.call("monitor_cond", &params)?;
        let mut updates = TableUpdates2::from_str(raw.get(), &self.schema)?;
        for (t, columns) in plan {
            let rows = updates
                .tables
                .iter()
                .position(|u| *u.table == *t)
                .map(|i| updates.tables.swap_remove(i).rows)
                .unwrap_or_default();
            let mut data = self.absorb(&t, rows, columns.as_ref())?;
            if let Some(old) = self.tables.remove(&t) {
                self.merge_pending(&t, &mut data, old);
            }
            self.tables.insert(t, data);
        }
        Ok(())
    }

    /// Re-applies what this run already did to a table that was fetched again with more
    /// columns: known column values (fetched or written) win, inserted rows stay, deleted
    /// rows stay gone.
    fn merge_pending(&self, table: &str, data: &mut TableData, old: TableData) {
        for (u, old_row) in old.rows {
            match data.rows.get_mut(&u) {
                Some(row) => {
                    for (c, v) in &old_row.cols {
                        row.cols.insert(c.clone(), v.clone());
                    }
                }
                None => {
                    data.order.push(u.clone());
                    data.rows.insert(u, old_row);
                }
            }
        }
        for (t, u) in &self.deleted {
            if t == table && data.rows.remove(u).is_some() {
                data.order.retain(|x| x != u);
            }
        }
        data.filled.extend(old.filled);
    }

    /// A table's rows from a monitor reply, in the C IDL's order, each holding every
    /// fetched column (the reply leaves out default-valued ones).
    fn absorb(
        &self,
        tname: &str,
        rows: Vec<(Uuid, RowUpdate2)>,
        only: Option<&BTreeSet<String>>,
    ) -> Result<TableData> {
        let table = self.schema.table_or_err(tname)?;
        let uuids: Vec<Uuid> = rows.iter().map(|(u, _)| *u).collect();
        let mut data = TableData {
            columns: only.cloned(),
            ..TableData::default()
        };
        let mut decoded: Vec<Option<Row>> = Vec::with_capacity(rows.len());
        for (uuid, update) in rows {
            let mut cols = match update {
                RowUpdate2::Initial(row) | RowUpdate2::Insert(row) => row,
                other => bail!("{tname} row {uuid}: unexpected {other:?} in a monitor reply"),
            };
            for (cname, col) in &table.columns {
                if !cols.contains(cname) && only.is_none_or(|o| o.contains(cname)) {
                    cols.insert(cname.clone(), default_datum(&col.type_));
                }
            }
            let uuid = uuid.to_string();
            decoded.push(Some(Row { uuid, cols }));
        }
        for i in idl_order(&uuids) {
            if let Some(row) = decoded[i].take() {
                data.order.push(row.uuid.clone());
                data.rows.insert(row.uuid.clone(), row);
            }
        }
        Ok(data)
    }

    /// Completes one row of a partially fetched table with all its columns (one `select`
    /// by `_uuid`), keeping values this run already knows.
    fn fill_row(&mut self, table: &str, uuid: &str) -> Result<()> {
        let Some(data) = self.tables.get(table) else {
            return Ok(());
        };
        if data.columns.is_none() || data.filled.contains(uuid) || !data.rows.contains_key(uuid) {
            return Ok(());
        }
        if self.inserted.iter().any(|(t, u)| t == table && u == uuid) {
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
        let schema_table = self.schema.table_or_err(table)?.clone();
        let data = self.tables.get_mut(table).expect("checked above");
        let row = data.rows.get_mut(uuid).expect("checked above");
        for (cname, col) in &schema_table.columns {
            if row.cols.contains(cname) {
                continue;
            }
            let datum = match fetched.get(cname) {
                Some(j) => Value::from_json_typed(j, &col.type_)?,
                None => default_datum(&col.type_),
            };
            row.cols.insert(cname.clone(), datum);
        }
        data.filled.insert(uuid.to_owned());
        Ok(())
    }

    /// Rows of `table` in the C tools' iteration order, holding at least `columns`
    /// (others may be missing: use [`Db::get`] for a whole row).
    pub fn index_rows(&mut self, table: &str, columns: &[&str]) -> Result<Vec<&Row>> {
        self.load_columns(table, columns)?;
        let data = &self.tables[table];
        Ok(data.order.iter().filter_map(|u| data.rows.get(u)).collect())
    }

    /// Rows of `table` in the C tools' iteration order.
    pub fn rows(&mut self, table: &str) -> Result<Vec<&Row>> {
        self.load(&[table])?;
        let data = &self.tables[table];
        Ok(data.order.iter().filter_map(|u| data.rows.get(u)).collect())
    }

    /// The row of `table` with `uuid`, if present.
    pub fn get(&mut self, table: &str, uuid: &str) -> Result<Option<&Row>> {
        if self.tables.contains_key(table) {
            self.fill_row(table, uuid)?;
        } else {
            self.load(&[table])?;
        }
        Ok(self.tables[table].rows.get(uuid))
    }

    /// Like [`Db::get`] for a row known to exist.
    pub fn row(&mut self, table: &str, uuid: &str) -> Result<&Row> {
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
        // one with no columns, and later fetches merge the new row in.
        if !self.tables.contains_key(table) {
            let empty = TableData {
                columns: Some(BTreeSet::new()),
                ..TableData::default()
            };
            self.tables.insert(table.to_owned(), empty);
        }
        let t = self.schema.table_or_err(table)?;
        let cols = t
            .columns
            .iter()
            .map(|(n, c)| (n.clone(), default_datum(&c.type_)))
            .collect();
        let data = self.tables.get_mut(table).expect("loaded above");
        data.order.push(uuid.clone());
        data.rows.insert(
            uuid.clone(),
            Row {
                uuid: uuid.clone(),
                cols,
            },
        );
        self.inserted.push((table.to_owned(), uuid.clone()));
        Ok(uuid)
    }

    /// Writes `datum` into `col` of a row.
    pub fn set(&mut self, table: &str, uuid: &str, col: &str, datum: Value) -> Result<()> {
        self.schema.table_or_err(table)?.column_or_err(col)?;
        let row = self
            .tables
            .get_mut(table)
            .and_then(|t| t.rows.get_mut(uuid))
            .ok_or_else(|| anyhow!("{table} row {uuid} not found"))?;
        row.cols.insert(col.to_owned(), datum);
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
        let data = self
            .tables
            .get_mut(table)
            .ok_or_else(|| anyhow!("{table} not loaded"))?;
        if data.rows.remove(uuid).is_none() {
            bail!("{table} row {uuid} not found");
        }
        data.order.retain(|u| u != uuid);
        self.deleted.push((table.to_owned(), uuid.to_owned()));
        Ok(())
    }

    fn is_inserted(&self, table: &str, uuid: &str) -> bool {
        self.inserted.iter().any(|(t, u)| t == table && u == uuid)
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
            let Some(row) = self.tables[t].rows.get(u) else {
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
            if let Some(row) = self.tables[t].rows.get(u) {
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
            .find(|(t, u)| self.tables[t].rows.contains_key(u))
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
