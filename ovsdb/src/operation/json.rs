//! Wire JSON of operations: `{"op": "<name>", "table": ..., ...}` with RFC 7047 member names
//! (`where`, `uuid-name`, ...). Decoding is untyped (for tests and in-memory servers).

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use super::{
    Condition, Delete, Insert, Mutate, Mutation, Operation, Select, Update, Wait, WaitUntil,
};
use crate::value::{NamedUuid, Row, Uuid};

impl WaitUntil {
    /// The wire spelling: `"=="` or `"!="`.
    pub fn as_str(self) -> &'static str {
        match self {
            WaitUntil::Equal => "==",
            WaitUntil::NotEqual => "!=",
        }
    }
}

impl Serialize for Operation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("op", self.name())?;
        match self {
            Operation::Insert(Insert {
                table,
                row,
                uuid_name,
                uuid,
            }) => {
                m.serialize_entry("table", table)?;
                m.serialize_entry("row", row)?;
                if let Some(name) = uuid_name {
                    m.serialize_entry("uuid-name", name.as_str())?;
                }
                if let Some(uuid) = uuid {
                    m.serialize_entry("uuid", &uuid.to_string())?;
                }
            }
            Operation::Select(Select {
                table,
                conditions,
                columns,
            }) => {
                m.serialize_entry("table", table)?;
                m.serialize_entry("where", conditions)?;
                if let Some(columns) = columns {
                    m.serialize_entry("columns", columns)?;
                }
            }
            Operation::Update(Update {
                table,
                conditions,
                row,
            }) => {
                m.serialize_entry("table", table)?;
                m.serialize_entry("where", conditions)?;
                m.serialize_entry("row", row)?;
            }
            Operation::Mutate(Mutate {
                table,
                conditions,
                mutations,
            }) => {
                m.serialize_entry("table", table)?;
                m.serialize_entry("where", conditions)?;
                m.serialize_entry("mutations", mutations)?;
            }
            Operation::Delete(Delete { table, conditions }) => {
                m.serialize_entry("table", table)?;
                m.serialize_entry("where", conditions)?;
            }
            Operation::Wait(wait) => serialize_wait(&mut m, wait)?,
            Operation::Commit { durable } => m.serialize_entry("durable", durable)?,
            Operation::Abort => {}
            Operation::Comment(comment) => m.serialize_entry("comment", comment)?,
            Operation::Assert { lock } => m.serialize_entry("lock", lock)?,
        }
        m.end()
    }
}

fn serialize_wait<M: SerializeMap>(m: &mut M, wait: &Wait) -> Result<(), M::Error> {
    m.serialize_entry("table", &wait.table)?;
    if let Some(timeout) = wait.timeout {
        m.serialize_entry("timeout", &timeout)?;
    }
    m.serialize_entry("where", &wait.conditions)?;
    m.serialize_entry("columns", &wait.columns)?;
    m.serialize_entry("until", wait.until.as_str())?;
    m.serialize_entry("rows", &wait.rows)
}

/// The union of all operations' members.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOperation {
    op: String,
    table: Option<String>,
    row: Option<Row>,
    #[serde(rename = "uuid-name")]
    uuid_name: Option<String>,
    uuid: Option<String>,
    #[serde(rename = "where")]
    conditions: Option<Vec<Condition>>,
    columns: Option<Vec<String>>,
    mutations: Option<Vec<Mutation>>,
    timeout: Option<u64>,
    until: Option<String>,
    rows: Option<Vec<Row>>,
    durable: Option<bool>,
    comment: Option<String>,
    lock: Option<String>,
}

fn required<T, E: de::Error>(value: Option<T>, op: &str, member: &'static str) -> Result<T, E> {
    value.ok_or_else(|| E::custom(format!("{op} operation lacks \"{member}\"")))
}

impl RawOperation {
    fn into_operation<E: de::Error>(self) -> Result<Operation, E> {
        let op = self.op.as_str();
        let table = || required(self.table.clone(), op, "table");
        let conditions = || required(self.conditions.clone(), op, "where");
        Ok(match op {
            "insert" => Operation::Insert(Insert {
                table: table()?,
                row: self.row.clone().unwrap_or_default(),
                uuid_name: self
                    .uuid_name
                    .as_deref()
                    .map(NamedUuid::new)
                    .transpose()
                    .map_err(E::custom)?,
                uuid: self
                    .uuid
                    .as_deref()
                    .map(str::parse::<Uuid>)
                    .transpose()
                    .map_err(E::custom)?,
            }),
            "select" => Operation::Select(Select {
                table: table()?,
                conditions: conditions()?,
                columns: self.columns,
            }),
            "update" => Operation::Update(Update {
                table: table()?,
                conditions: conditions()?,
                row: required(self.row, op, "row")?,
            }),
            "mutate" => Operation::Mutate(Mutate {
                table: table()?,
                conditions: conditions()?,
                mutations: required(self.mutations, op, "mutations")?,
            }),
            "delete" => Operation::Delete(Delete {
                table: table()?,
                conditions: conditions()?,
            }),
            "wait" => Operation::Wait(Wait {
                table: table()?,
                timeout: self.timeout,
                conditions: conditions()?,
                columns: required(self.columns, op, "columns")?,
                until: match required(self.until, op, "until")?.as_str() {
                    "==" => WaitUntil::Equal,
                    "!=" => WaitUntil::NotEqual,
                    other => {
                        return Err(E::custom(format!(
                            "wait \"until\" must be \"==\" or \"!=\", found {other:?}"
                        )))
                    }
                },
                rows: required(self.rows, op, "rows")?,
            }),
            "commit" => Operation::Commit {
                durable: self.durable.unwrap_or(false),
            },
            "abort" => Operation::Abort,
            "comment" => Operation::Comment(required(self.comment, op, "comment")?),
            "assert" => Operation::Assert {
                lock: required(self.lock, op, "lock")?,
            },
            other => return Err(E::custom(format!("unknown operation {other:?}"))),
        })
    }
}

impl<'de> Deserialize<'de> for Operation {
    /// Untyped decode: values as in [`crate::value::Value`]'s `Deserialize`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RawOperation::deserialize(d)?.into_operation()
    }
}
