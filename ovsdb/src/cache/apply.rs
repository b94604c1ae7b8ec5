//! Applying monitor updates to the replica.

use std::collections::HashSet;
use std::sync::Arc;

use super::index::IndexKey;
use super::{CacheError, ChangeBatch, RowEvent, State, TableState, Writer};
use crate::update::{
    apply_modify, MonitorCondSinceReply, RowUpdate, RowUpdate2, TableUpdates, TableUpdates2,
    Update3Notification,
};
use crate::value::{Row, Uuid, Value};

/// What to do with one row, whatever the update format.
enum RowChange {
    /// The row's full (update2: non-default) columns.
    Put(Row),
    /// An update2 `modify` diff.
    Diff(Row),
    /// An RFC 7047 `update` modify: the new values of the monitored columns.
    Merge(Row),
    /// The row is gone.
    Remove,
}

impl From<RowUpdate2> for RowChange {
    fn from(update: RowUpdate2) -> Self {
        match update {
            RowUpdate2::Initial(row) | RowUpdate2::Insert(row) => RowChange::Put(row),
            RowUpdate2::Modify(diff) => RowChange::Diff(diff),
            RowUpdate2::Delete => RowChange::Remove,
        }
    }
}

impl From<RowUpdate> for RowChange {
    fn from(update: RowUpdate) -> Self {
        match update {
            RowUpdate {
                old: None,
                new: Some(new),
            } => RowChange::Put(new),
            RowUpdate {
                old: Some(_),
                new: Some(new),
            } => RowChange::Merge(new),
            RowUpdate { new: None, .. } => RowChange::Remove,
        }
    }
}

/// Per table, the row changes to apply.
type Changes = Vec<(Arc<str>, Vec<(Uuid, RowChange)>)>;

/// Collects events and the first error of a batch.
struct Outcome {
    events: Option<Vec<RowEvent>>,
    error: Option<CacheError>,
}

impl Outcome {
    fn fail(&mut self, error: CacheError) {
        tracing::warn!(%error, "replica cache");
        self.error.get_or_insert(error);
    }

    fn event(&mut self, make: impl FnOnce() -> RowEvent) {
        if let Some(events) = &mut self.events {
            events.push(make());
        }
    }
}

impl Writer {
    /// Applies a `monitor_cond` reply or an `update2` notification.
    pub fn apply_update2(&mut self, updates: TableUpdates2) -> Result<(), CacheError> {
        self.apply_changes(convert(updates), None, false)
    }

    /// Applies an `update3` notification and records its transaction id.
    pub fn apply_update3(&mut self, notification: Update3Notification) -> Result<(), CacheError> {
        self.apply_changes(
            convert(notification.updates),
            Some(notification.last_txn_id),
            false,
        )
    }

    /// Applies a `monitor` reply or an RFC 7047 `update` notification.
    pub fn apply_update(&mut self, updates: TableUpdates<RowUpdate>) -> Result<(), CacheError> {
        self.apply_changes(convert(updates), None, false)
    }

    /// Applies a `monitor_cond_since` reply: a delta when `found`, otherwise a full dump
    /// that replaces the replica.
    pub fn apply_monitor_cond_since(
        &mut self,
        reply: MonitorCondSinceReply,
    ) -> Result<(), CacheError> {
        self.apply_changes(
            convert(reply.updates),
            Some(reply.last_txn_id),
            !reply.found,
        )
    }

    /// Replaces the whole replica with a fresh initial dump (a `monitor_cond` reply after a
    /// reconnect). Subscribers see only the differences: deletes for rows gone, updates for
    /// rows changed, inserts for new rows.
    pub fn replace(&mut self, initial: TableUpdates2) -> Result<(), CacheError> {
        self.apply_changes(convert(initial), None, true)
    }

    /// Empties the replica (subscribers see a delete per row); indexes stay declared.
    pub fn clear(&mut self) {
        // Replacing with nothing cannot fail: every change is a removal of a present row.
        let _ = self.apply_changes(Vec::new(), None, true);
    }

    fn apply_changes(
        &mut self,
        mut tables: Changes,
        last_txn_id: Option<Uuid>,
        replace: bool,
    ) -> Result<(), CacheError> {
        let mut outcome = Outcome {
            events: self.shared.has_subscribers().then(Vec::new),
            error: None,
        };
        {
            let mut state = self.shared.write();
            if replace {
                add_removals(&state, &mut tables);
            }
            for (table, rows) in tables {
                let entry = state.tables.entry(table.clone()).or_default();
                apply_table(entry, &table, rows, &mut outcome);
            }
            if last_txn_id.is_some() {
                state.last_txn_id = last_txn_id;
            }
        }
        if let Some(events) = outcome.events {
            self.shared.publish(ChangeBatch {
                events,
                last_txn_id,
            });
        }
        outcome.error.map_or(Ok(()), Err)
    }
}

fn convert<U: Into<RowChange>>(updates: TableUpdates<U>) -> Changes {
    updates
        .tables
        .into_iter()
        .map(|t| {
            (
                t.table,
                t.rows.into_iter().map(|(u, c)| (u, c.into())).collect(),
            )
        })
        .collect()
}

/// For a full replacement: every present row the new dump lacks is removed.
fn add_removals(state: &State, tables: &mut Changes) {
    for (name, table) in &state.tables {
        if table.rows.is_empty() {
            continue;
        }
        let position = match tables.iter().position(|(t, _)| t == name) {
            Some(p) => p,
            None => {
                tables.push((name.clone(), Vec::new()));
                tables.len() - 1
            }
        };
        let rows = &mut tables[position].1;
        let kept: HashSet<Uuid> = rows.iter().map(|(u, _)| *u).collect();
        rows.extend(
            table
                .rows
                .keys()
                .filter(|u| !kept.contains(u))
                .map(|u| (*u, RowChange::Remove)),
        );
    }
}

/// Applies one table's changes in two passes, so that rows swapping unique values within
/// one batch do not clash: first every old row leaves the indexes, then new rows enter.
fn apply_table(
    table: &mut TableState,
    name: &Arc<str>,
    rows: Vec<(Uuid, RowChange)>,
    outcome: &mut Outcome,
) {
    let mut entering: Vec<(Uuid, Arc<Row>, Touched)> = Vec::with_capacity(rows.len());
    // A full dump puts every row at once: size the table once instead of growing (and
    // rehashing) it step by step.
    let puts = rows
        .iter()
        .filter(|(_, c)| matches!(c, RowChange::Put(_)))
        .count();
    table.rows.reserve(puts);
    for (uuid, change) in rows {
        let old = table.rows.get(&uuid).cloned();
        // A modify only re-keys the indexes that read a changed column.
        let touched: Touched = match (&change, &old) {
            (RowChange::Diff(columns) | RowChange::Merge(columns), Some(_)) => {
                Some(columns.into_iter().map(|(c, _)| c.clone()).collect())
            }
            _ => None,
        };
        let mut kept_diff = None;
        let new = match (change, &old) {
            (RowChange::Put(row), _) => Some(Arc::new(row)),
            (RowChange::Diff(diff), Some(old)) => {
                let mut row = Row::clone(old);
                apply_modify(&mut row, &diff, table.schema.as_ref());
                kept_diff = Some(diff);
                Some(Arc::new(row))
            }
            (RowChange::Merge(columns), Some(old)) => {
                let mut row = Row::clone(old);
                for (column, value) in &columns {
                    row.insert(column.clone(), value.clone());
                }
                Some(Arc::new(row))
            }
            (RowChange::Merge(columns), None) => Some(Arc::new(columns)),
            (RowChange::Remove, Some(_)) => None,
            (RowChange::Diff(_) | RowChange::Remove, None) => {
                outcome.fail(CacheError::UnknownRow {
                    table: name.to_string(),
                    uuid,
                });
                continue;
            }
        };
        if let Some(old) = &old {
            unindex(table, uuid, old, touched.as_deref());
        }
        let change = ClientChange {
            old: old.as_deref(),
            new: new.as_deref(),
            touched: touched.as_deref(),
            diff: kept_diff.as_ref(),
        };
        update_client_indexes(table, uuid, change);
        match &new {
            Some(new) => {
                table.rows.insert(uuid, new.clone());
                entering.push((uuid, new.clone(), touched));
            }
            None => {
                table.rows.remove(&uuid);
            }
        }
        record(outcome, name, uuid, old, new);
    }
    for (uuid, row, touched) in entering {
        index(table, name, uuid, &row, touched.as_deref(), outcome);
    }
}

fn record(
    outcome: &mut Outcome,
    name: &Arc<str>,
    uuid: Uuid,
    old: Option<Arc<Row>>,
    new: Option<Arc<Row>>,
) {
    let table = name.clone();
    match (old, new) {
        (None, Some(new)) => outcome.event(|| RowEvent::Insert { table, uuid, new }),
        (Some(old), Some(new)) if old != new => outcome.event(|| RowEvent::Update {
            table,
            uuid,
            old,
            new,
        }),
        (Some(old), None) => outcome.event(|| RowEvent::Delete { table, uuid, old }),
        _ => {}
    }
}

/// The columns a modify changed; `None` for inserts and deletes (every column).
type Touched = Option<Vec<Arc<str>>>;

fn affected<'a>(mut columns: impl Iterator<Item = &'a str>, touched: Option<&[Arc<str>]>) -> bool {
    match touched {
        None => true,
        Some(touched) => columns.any(|c| touched.iter().any(|t| &**t == c)),
    }
}

fn unindex(table: &mut TableState, uuid: Uuid, row: &Row, touched: Option<&[Arc<str>]>) {
    let schema = table.schema.as_ref();
    for index in &mut table.unique {
        if affected(index.columns.iter().map(String::as_str), touched) {
            index.remove(uuid, row, schema);
        }
    }
}

/// One row's change, as the client-side indexes need it.
struct ClientChange<'a> {
    old: Option<&'a Row>,
    new: Option<&'a Row>,
    touched: Option<&'a [Arc<str>]>,
    /// The update2 diff of a modify.
    diff: Option<&'a Row>,
}

/// Client-side indexes are not unique, so they are updated in one pass. A modify of a
/// large set (a switch's `ports`) re-keys only the elements of its symmetric-difference
/// diff instead of the whole set.
fn update_client_indexes(table: &mut TableState, uuid: Uuid, change: ClientChange<'_>) {
    let schema = table.schema.as_ref();
    for index in &mut table.client {
        let Some(spec) = &index.spec else { continue };
        let column = spec.column_name();
        if !affected(std::iter::once(column), change.touched) {
            continue;
        }
        let single = schema
            .and_then(|t| t.column(column))
            .is_some_and(|c| c.type_.is_single());
        let set_diff = match (change.diff.and_then(|d| d.get(column)), &spec.key) {
            (Some(Value::Set(diff)), IndexKey::Column(_)) if !single => Some(diff),
            _ => None,
        };
        match (set_diff, change.new) {
            (Some(diff), Some(new)) => {
                index.apply_set_diff(uuid, diff, new.get(column).and_then(Value::as_set));
            }
            _ => {
                if let Some(old) = change.old {
                    index.remove(uuid, old, schema);
                }
                if let Some(new) = change.new {
                    index.insert(uuid, new, schema);
                }
            }
        }
    }
}

fn index(
    table: &mut TableState,
    name: &str,
    uuid: Uuid,
    row: &Row,
    touched: Option<&[Arc<str>]>,
    outcome: &mut Outcome,
) {
    let schema = table.schema.as_ref();
    for index in &mut table.unique {
        if !affected(index.columns.iter().map(String::as_str), touched) {
            continue;
        }
        if let Some((key, existing)) = index.insert(uuid, row, schema) {
            outcome.fail(CacheError::UniqueViolation {
                table: name.to_owned(),
                columns: index.columns.clone(),
                key: key_json(&key),
                existing,
                new: uuid,
            });
        }
    }
}

fn key_json(key: &[Value]) -> String {
    serde_json::to_string(key).unwrap_or_default()
}
