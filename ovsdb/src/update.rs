//! Monitor replies and notifications: `update` (RFC 7047 `monitor`), `update2`
//! (`monitor_cond`), `update3` (`monitor_cond_since`), as ovsdb-server 3.1 writes them.
//!
//! ```text
//! <table-updates>   {<table>: {<uuid>: {"old"?: <row>, "new"?: <row>}}}        (update)
//! <table-updates2>  {<table>: {<uuid>: {"initial"|"insert"|"modify": <row>} | {"delete": null}}}
//! update2 params    [<monitor-id>, <table-updates2>]
//! update3 params    [<monitor-id>, <last-txn-id>, <table-updates2>]
//! monitor_cond_since result  [<found>, <last-txn-id>, <table-updates2>]
//! ```
//!
//! In `update2`, `initial`/`insert` rows leave out columns holding their default value, and
//! `modify` carries only the changed columns as a *diff* (see [`apply_modify`]). Decoding
//! needs the schema, since one-element sets arrive as bare atoms; tables and columns the
//! schema does not know are decoded untyped instead of rejected. The seeds decode straight
//! from text, so a large initial reply never becomes a `serde_json::Value` tree.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::schema::{DatabaseSchema, TableSchema};
use crate::value::{DecodeError, Row, RowSeed, Uuid, Value};

/// One row's change in an `update2`/`update3`.
#[derive(Debug, Clone, PartialEq)]
pub enum RowUpdate2 {
    /// Present when the monitor started (default-valued columns left out).
    Initial(Row),
    /// Inserted (default-valued columns left out).
    Insert(Row),
    /// Modified: only changed columns, each as a diff (see [`apply_modify`]).
    Modify(Row),
    /// Deleted.
    Delete,
}

/// One row's change in an RFC 7047 `update`: `new` alone is an insert (or initial row),
/// `old` alone a delete, both a modify (`old` then holds only the changed columns).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowUpdate {
    /// The changed columns' previous values.
    pub old: Option<Row>,
    /// All monitored columns' new values.
    pub new: Option<Row>,
}

/// The changes to one table.
#[derive(Debug, Clone, PartialEq)]
pub struct TableUpdate<U> {
    /// The table.
    pub table: Arc<str>,
    /// The changed rows, in the order the server sent them.
    pub rows: Vec<(Uuid, U)>,
}

/// `<table-updates>` (with [`RowUpdate`]) or `<table-updates2>` (with [`RowUpdate2`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TableUpdates<U> {
    /// The changed tables, in the order the server sent them.
    pub tables: Vec<TableUpdate<U>>,
}

impl<U> Default for TableUpdates<U> {
    fn default() -> Self {
        TableUpdates { tables: Vec::new() }
    }
}

impl<U> TableUpdates<U> {
    /// Total number of row changes.
    pub fn row_count(&self) -> usize {
        self.tables.iter().map(|t| t.rows.len()).sum()
    }

    /// Whether there is no change at all.
    pub fn is_empty(&self) -> bool {
        self.row_count() == 0
    }

    /// The changes to one table.
    pub fn table(&self, name: &str) -> Option<&TableUpdate<U>> {
        self.tables.iter().find(|t| &*t.table == name)
    }
}

/// `<table-updates2>`, the payload of `monitor_cond` replies and `update2`/`update3`.
pub type TableUpdates2 = TableUpdates<RowUpdate2>;

/// An `update` notification: `[<monitor-id>, <table-updates>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateNotification {
    /// The id the monitor was created with (any JSON).
    pub monitor_id: serde_json::Value,
    /// The changes.
    pub updates: TableUpdates<RowUpdate>,
}

/// An `update2` notification: `[<monitor-id>, <table-updates2>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Update2Notification {
    /// The id the monitor was created with (any JSON).
    pub monitor_id: serde_json::Value,
    /// The changes.
    pub updates: TableUpdates2,
}

/// An `update3` notification: `[<monitor-id>, <last-txn-id>, <table-updates2>]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Update3Notification {
    /// The id the monitor was created with (any JSON).
    pub monitor_id: serde_json::Value,
    /// The transaction these changes complete; resume from it after a reconnect. A
    /// standalone server always sends the nil uuid.
    pub last_txn_id: Uuid,
    /// The changes.
    pub updates: TableUpdates2,
}

/// The result of `monitor_cond_since`: `[<found>, <last-txn-id>, <table-updates2>]`.
///
/// `found` is true when the server could resume from the given transaction id and
/// `updates` then holds only the changes since; otherwise `updates` is a full initial dump
/// and the replica must be replaced. Standalone servers always answer `found=false` with
/// the nil id.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorCondSinceReply {
    /// Whether `updates` is a delta from the requested transaction.
    pub found: bool,
    /// The latest transaction id.
    pub last_txn_id: Uuid,
    /// The changes (or the full initial state).
    pub updates: TableUpdates2,
}

fn parse_text<'de, T>(
    text: &'de str,
    seed: impl DeserializeSeed<'de, Value = T>,
) -> Result<T, DecodeError> {
    let mut d = serde_json::Deserializer::from_str(text);
    let value = seed.deserialize(&mut d)?;
    d.end()?;
    Ok(value)
}

impl TableUpdates2 {
    /// Decodes `<table-updates2>` text (a `monitor_cond` result).
    pub fn from_str(text: &str, schema: &DatabaseSchema) -> Result<Self, DecodeError> {
        parse_text(text, UpdatesSeed::<RowUpdate2>::new(schema))
    }

    /// Decodes `<table-updates2>` JSON.
    pub fn from_json(
        json: &serde_json::Value,
        schema: &DatabaseSchema,
    ) -> Result<Self, DecodeError> {
        Ok(UpdatesSeed::<RowUpdate2>::new(schema).deserialize(json)?)
    }
}

impl TableUpdates<RowUpdate> {
    /// Decodes `<table-updates>` text (a `monitor` result).
    pub fn from_str(text: &str, schema: &DatabaseSchema) -> Result<Self, DecodeError> {
        parse_text(text, UpdatesSeed::<RowUpdate>::new(schema))
    }

    /// Decodes `<table-updates>` JSON.
    pub fn from_json(
        json: &serde_json::Value,
        schema: &DatabaseSchema,
    ) -> Result<Self, DecodeError> {
        Ok(UpdatesSeed::<RowUpdate>::new(schema).deserialize(json)?)
    }
}

impl UpdateNotification {
    /// Decodes the `params` text of an `update` notification.
    pub fn from_params_str(text: &str, schema: &DatabaseSchema) -> Result<Self, DecodeError> {
        let (monitor_id, updates) =
            parse_text(text, PairSeed(UpdatesSeed::<RowUpdate>::new(schema)))?;
        Ok(UpdateNotification {
            monitor_id,
            updates,
        })
    }
}

impl Update2Notification {
    /// Decodes the `params` text of an `update2` notification.
    pub fn from_params_str(text: &str, schema: &DatabaseSchema) -> Result<Self, DecodeError> {
        let (monitor_id, updates) =
            parse_text(text, PairSeed(UpdatesSeed::<RowUpdate2>::new(schema)))?;
        Ok(Update2Notification {
            monitor_id,
            updates,
        })
    }
}

impl Update3Notification {
    /// Decodes the `params` text of an `update3` notification.
    pub fn from_params_str(text: &str, schema: &DatabaseSchema) -> Result<Self, DecodeError> {
        let (monitor_id, last_txn_id, updates) =
            parse_text(text, TripleSeed(UpdatesSeed::<RowUpdate2>::new(schema)))?;
        let last_txn_id = parse_txn_id(&last_txn_id)?;
        Ok(Update3Notification {
            monitor_id,
            last_txn_id,
            updates,
        })
    }
}

impl MonitorCondSinceReply {
    /// Decodes the `result` text of a `monitor_cond_since` reply.
    pub fn from_str(text: &str, schema: &DatabaseSchema) -> Result<Self, DecodeError> {
        let (found, last_txn_id, updates) =
            parse_text(text, TripleSeed(UpdatesSeed::<RowUpdate2>::new(schema)))?;
        let found = found.as_bool().ok_or_else(|| DecodeError::Malformed {
            what: "monitor_cond_since result",
            reason: format!("\"found\" must be a boolean, found {found}"),
        })?;
        let last_txn_id = parse_txn_id(&last_txn_id)?;
        Ok(MonitorCondSinceReply {
            found,
            last_txn_id,
            updates,
        })
    }
}

/// A transaction id is a bare uuid string (not `["uuid",..]`).
fn parse_txn_id(json: &serde_json::Value) -> Result<Uuid, DecodeError> {
    let malformed = || DecodeError::Malformed {
        what: "last-txn-id",
        reason: format!("expected a uuid string, found {json}"),
    };
    json.as_str()
        .ok_or_else(malformed)?
        .parse()
        .map_err(|_| malformed())
}

/// Applies an `update2` `modify` diff to a row, as the C IDL does:
///
/// - a map column: for each pair of the diff, a key present with the same value is
///   removed, with a different value is replaced, a new key is inserted;
/// - a column of at most one element (`max` 1: scalars and optionals) that holds a value:
///   the diff *is* the new value (possibly the empty set);
/// - any other set: the diff is the symmetric difference (elements present are removed,
///   absent ones added).
///
/// A column missing from `row` counts as holding its default (update2 leaves those out).
/// Without a schema for a column, a set diff is applied as a symmetric difference.
pub fn apply_modify(row: &mut Row, diff: &Row, table: Option<&TableSchema>) {
    for (column, change) in diff {
        let ty = table.and_then(|t| t.column(column)).map(|c| &c.type_);
        let old = match row.get(column) {
            Some(old) => old.clone(),
            None => ty.map(|t| t.default_value()).unwrap_or_default(),
        };
        let new = apply_value_diff(old, change, ty.is_some_and(|t| t.is_single()));
        row.insert(column.clone(), new);
    }
}

fn apply_value_diff(old: Value, change: &Value, single: bool) -> Value {
    match (old, change) {
        (Value::Map(mut map), Value::Map(diff)) => {
            for (key, value) in diff.iter() {
                if map.get(key) == Some(value) {
                    map.remove(key);
                } else {
                    map.insert(key.clone(), value.clone());
                }
            }
            Value::Map(map)
        }
        (Value::Set(set), Value::Set(_)) if single && !set.is_empty() => change.clone(),
        (Value::Set(mut set), Value::Set(diff)) => {
            for atom in diff.iter() {
                if !set.remove(atom) {
                    set.insert(atom.clone());
                }
            }
            Value::Set(set)
        }
        // A kind change (only possible without a schema): take the diff as the value.
        (_, change) => change.clone(),
    }
}

/// How one row update is read; implemented for [`RowUpdate`] and [`RowUpdate2`].
pub trait RowUpdateFormat: Sized {
    #[doc(hidden)]
    fn read<'de, A: MapAccess<'de>>(map: A, table: Option<&TableSchema>) -> Result<Self, A::Error>;
}

/// Decodes a row, typed when the table is known.
#[derive(Clone, Copy)]
struct AnyRowSeed<'a>(Option<&'a TableSchema>);

impl<'de> DeserializeSeed<'de> for AnyRowSeed<'_> {
    type Value = Row;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Row, D::Error> {
        match self.0 {
            Some(table) => RowSeed(table).deserialize(d),
            None => Row::deserialize(d),
        }
    }
}

impl RowUpdateFormat for RowUpdate2 {
    fn read<'de, A: MapAccess<'de>>(
        mut map: A,
        table: Option<&TableSchema>,
    ) -> Result<Self, A::Error> {
        let kind: crate::value::json::Text<'de> = map.next_key()?.ok_or_else(|| {
            de::Error::custom("empty row update2 (expected initial, insert, modify or delete)")
        })?;
        let update = match kind.as_str() {
            "initial" => RowUpdate2::Initial(map.next_value_seed(AnyRowSeed(table))?),
            "insert" => RowUpdate2::Insert(map.next_value_seed(AnyRowSeed(table))?),
            "modify" => RowUpdate2::Modify(map.next_value_seed(AnyRowSeed(table))?),
            "delete" => {
                map.next_value::<IgnoredAny>()?;
                RowUpdate2::Delete
            }
            other => {
                return Err(de::Error::custom(format!(
                    "unknown row update2 member {other:?}"
                )))
            }
        };
        if map.next_key::<IgnoredAny>()?.is_some() {
            return Err(de::Error::custom("row update2 has more than one member"));
        }
        Ok(update)
    }
}

impl RowUpdateFormat for RowUpdate {
    fn read<'de, A: MapAccess<'de>>(
        mut map: A,
        table: Option<&TableSchema>,
    ) -> Result<Self, A::Error> {
        let mut update = RowUpdate::default();
        while let Some(kind) = map.next_key::<crate::value::json::Text<'de>>()? {
            let slot = match kind.as_str() {
                "old" => &mut update.old,
                "new" => &mut update.new,
                other => {
                    return Err(de::Error::custom(format!(
                        "unknown row update member {other:?}"
                    )))
                }
            };
            *slot = Some(map.next_value_seed(AnyRowSeed(table))?);
        }
        Ok(update)
    }
}

/// Decodes `<table-updates>`/`<table-updates2>` with a schema.
#[derive(Debug, Clone, Copy)]
pub struct UpdatesSeed<'a, U> {
    schema: &'a DatabaseSchema,
    format: std::marker::PhantomData<fn() -> U>,
}

impl<'a, U> UpdatesSeed<'a, U> {
    /// A seed decoding with `schema`'s column types.
    pub fn new(schema: &'a DatabaseSchema) -> Self {
        UpdatesSeed {
            schema,
            format: std::marker::PhantomData,
        }
    }
}

impl<'de, U: RowUpdateFormat> DeserializeSeed<'de> for UpdatesSeed<'_, U> {
    type Value = TableUpdates<U>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, U: RowUpdateFormat> Visitor<'de> for UpdatesSeed<'_, U> {
    type Value = TableUpdates<U>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("table updates (JSON object of tables)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut updates = TableUpdates { tables: Vec::new() };
        while let Some(name) = map.next_key::<crate::value::json::Text<'de>>()? {
            let schema = self.schema.table(name.as_str());
            let table: Arc<str> = match schema {
                Some(t) => t.name.clone(),
                None => Arc::from(name.as_str()),
            };
            let rows = map.next_value_seed(TableRowsSeed::<U> {
                table: schema,
                format: self.format,
            })?;
            updates.tables.push(TableUpdate { table, rows });
        }
        Ok(updates)
    }
}

struct TableRowsSeed<'a, U> {
    table: Option<&'a TableSchema>,
    format: std::marker::PhantomData<fn() -> U>,
}

impl<'de, U: RowUpdateFormat> DeserializeSeed<'de> for TableRowsSeed<'_, U> {
    type Value = Vec<(Uuid, U)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, U: RowUpdateFormat> Visitor<'de> for TableRowsSeed<'_, U> {
    type Value = Vec<(Uuid, U)>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("row updates (JSON object keyed by uuid)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rows = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(key) = map.next_key::<crate::value::json::Text<'de>>()? {
            let uuid: Uuid = key.as_str().parse().map_err(de::Error::custom)?;
            let update = map.next_value_seed(RowUpdateSeed::<U> {
                table: self.table,
                format: self.format,
            })?;
            rows.push((uuid, update));
        }
        Ok(rows)
    }
}

struct RowUpdateSeed<'a, U> {
    table: Option<&'a TableSchema>,
    format: std::marker::PhantomData<fn() -> U>,
}

impl<'de, U: RowUpdateFormat> DeserializeSeed<'de> for RowUpdateSeed<'_, U> {
    type Value = U;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<U, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, U: RowUpdateFormat> Visitor<'de> for RowUpdateSeed<'_, U> {
    type Value = U;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a row update (JSON object)")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<U, A::Error> {
        U::read(map, self.table)
    }
}

/// `[<any json>, <seed>]`.
struct PairSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for PairSeed<S> {
    type Value = (serde_json::Value, S::Value);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for PairSeed<S> {
    type Value = (serde_json::Value, S::Value);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[monitor-id, table-updates]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let first = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let updates = seq
            .next_element_seed(self.0)?
            .ok_or_else(|| de::Error::invalid_length(1, &"[monitor-id, table-updates]"))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &"[monitor-id, table-updates]"));
        }
        Ok((first, updates))
    }
}

/// `[<any json>, <any json>, <seed>]`.
struct TripleSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for TripleSeed<S> {
    type Value = (serde_json::Value, serde_json::Value, S::Value);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, S: DeserializeSeed<'de>> Visitor<'de> for TripleSeed<S> {
    type Value = (serde_json::Value, serde_json::Value, S::Value);
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a 3-element array ending in table-updates2")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let first = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let second = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        let updates = seq.next_element_seed(self.0)?.ok_or_else(|| {
            de::Error::invalid_length(2, &"a 3-element array ending in table-updates2")
        })?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(
                4,
                &"a 3-element array ending in table-updates2",
            ));
        }
        Ok((first, second, updates))
    }
}
