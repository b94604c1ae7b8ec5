//! The result of a `transact`: one element per operation, as ovsdb-server 3.1 writes it.
//!
//! - success: insert `{"uuid":["uuid",..]}`, select `{"rows":[..]}`, update/mutate/delete
//!   `{"count":n}`, the others `{}`;
//! - if operation *k* fails: element *k* is `{"error":..,"details":..}`, later elements are
//!   `null`, nothing is committed;
//! - if the commit itself fails (referential integrity, a duplicate index value): every
//!   operation's result is present plus **one trailing** error element.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::Operation;
use crate::schema::DatabaseSchema;
use crate::value::{DecodeError, Row, RowSeed, Uuid};

/// The successful result of one operation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OperationResult {
    /// `insert`: the new row's uuid.
    Insert {
        /// The new row's uuid.
        uuid: Uuid,
    },
    /// `select`: the matching rows.
    Select {
        /// The rows (only the selected columns).
        rows: Vec<Row>,
    },
    /// `update`, `mutate`, `delete`: the number of matching rows.
    Count {
        /// Rows matched.
        count: u64,
    },
    /// `wait`, `commit`, `abort`, `comment`, `assert`: `{}`.
    Empty,
}

impl OperationResult {
    /// The uuid of an insert.
    pub fn uuid(&self) -> Option<Uuid> {
        match self {
            OperationResult::Insert { uuid } => Some(*uuid),
            _ => None,
        }
    }

    /// The rows of a select.
    pub fn rows(&self) -> Option<&[Row]> {
        match self {
            OperationResult::Select { rows } => Some(rows),
            _ => None,
        }
    }

    /// The count of an update, mutate or delete.
    pub fn count(&self) -> Option<u64> {
        match self {
            OperationResult::Count { count } => Some(*count),
            _ => None,
        }
    }
}

/// The `error` strings of RFC 7047 and ovsdb-server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransactErrorKind {
    /// `"constraint violation"`: a value outside its type (enum, range, size), a duplicate
    /// value of a unique index, too many rows.
    ConstraintViolation,
    /// `"referential integrity violation"`: a strong reference to a missing row, or a
    /// delete of a row still strongly referenced.
    ReferentialIntegrity,
    /// `"resources exhausted"`.
    ResourcesExhausted,
    /// `"I/O error"`.
    IoError,
    /// `"duplicate uuid-name"`.
    DuplicateUuidName,
    /// `"duplicate uuid"`: an insert with a caller-chosen uuid that exists.
    DuplicateUuid,
    /// `"domain error"`: division by zero in a mutation.
    DomainError,
    /// `"range error"`: overflow in a mutation.
    RangeError,
    /// `"timed out"`: a `wait` that did not come true in time.
    TimedOut,
    /// `"not supported"`.
    NotSupported,
    /// `"aborted"`: an `abort` operation.
    Aborted,
    /// `"not owner"`: an `assert` of a lock the session does not hold.
    NotOwner,
    /// `"unknown database"`.
    UnknownDatabase,
    /// `"syntax error"` and the parse errors (`"unknown column"`, `"unknown table"`, ...).
    SyntaxError,
    /// Any other error string (kept in [`TransactError::error`]).
    Other,
}

impl TransactErrorKind {
    /// Classifies an `error` string.
    pub fn from_error(error: &str) -> Self {
        match error {
            "constraint violation" => Self::ConstraintViolation,
            "referential integrity violation" => Self::ReferentialIntegrity,
            "resources exhausted" => Self::ResourcesExhausted,
            "I/O error" => Self::IoError,
            "duplicate uuid-name" => Self::DuplicateUuidName,
            "duplicate uuid" => Self::DuplicateUuid,
            "domain error" => Self::DomainError,
            "range error" => Self::RangeError,
            "timed out" => Self::TimedOut,
            "not supported" => Self::NotSupported,
            "aborted" => Self::Aborted,
            "not owner" => Self::NotOwner,
            "unknown database" => Self::UnknownDatabase,
            "syntax error" | "unknown column" | "unknown table" | "unknown operation" => {
                Self::SyntaxError
            }
            _ => Self::Other,
        }
    }
}

/// A transaction the server refused: which operation failed (or the commit) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TransactError {
    /// The failing operation's index; equals the number of operations for a commit-time
    /// failure (the trailing error element).
    pub index: usize,
    /// Whether the failure happened at commit (after all operations succeeded).
    pub at_commit: bool,
    /// The failing operation's name (`"insert"`, ...), if not at commit.
    pub operation: Option<&'static str>,
    /// The classified `error`.
    pub kind: TransactErrorKind,
    /// The `error` string as sent.
    pub error: String,
    /// The `details` string, if any.
    pub details: Option<String>,
}

impl fmt::Display for TransactError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operation {
            Some(op) if !self.at_commit => write!(
                f,
                "transaction failed at operation {} ({op}): {}",
                self.index, self.error
            )?,
            _ => write!(f, "transaction failed at commit: {}", self.error)?,
        }
        match &self.details {
            Some(details) => write!(f, ": {details}"),
            None => Ok(()),
        }
    }
}

/// A decoded `transact` result array.
#[derive(Debug, Clone, PartialEq)]
pub struct TransactReply {
    /// Per operation: the result, or `None` for the failing operation and those after it.
    pub results: Vec<Option<OperationResult>>,
    /// The failure, if any.
    pub error: Option<TransactError>,
}

impl TransactReply {
    /// The per-operation results, or the failure.
    pub fn into_result(self) -> Result<Vec<OperationResult>, TransactError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self
                .results
                .into_iter()
                .map(|r| r.unwrap_or(OperationResult::Empty))
                .collect()),
        }
    }

    /// Decodes the `result` of a `transact` request made of `ops`. With `schema`, select
    /// rows are decoded exactly (with column types), otherwise untyped.
    pub fn from_str(
        text: &str,
        ops: &[Operation],
        schema: Option<&DatabaseSchema>,
    ) -> Result<Self, DecodeError> {
        // One pass: `null` slots become `None`, the others are decoded as they are read.
        let elements: Vec<Option<RawResult<'_>>> = serde_json::from_str(text)?;
        decode_elements(elements, ops, schema)
    }

    /// Like [`TransactReply::from_str`], from parsed JSON.
    pub fn from_json(
        json: &serde_json::Value,
        ops: &[Operation],
        schema: Option<&DatabaseSchema>,
    ) -> Result<Self, DecodeError> {
        Self::from_str(&json.to_string(), ops, schema)
    }
}

#[derive(Deserialize)]
struct RawResult<'a> {
    #[serde(default)]
    uuid: Option<Uuid>,
    #[serde(default, borrow)]
    rows: Option<&'a RawValue>,
    #[serde(default)]
    count: Option<u64>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    details: Option<String>,
}

fn malformed(reason: String) -> DecodeError {
    DecodeError::Malformed {
        what: "transact result",
        reason,
    }
}

fn decode_elements(
    elements: Vec<Option<RawResult<'_>>>,
    ops: &[Operation],
    schema: Option<&DatabaseSchema>,
) -> Result<TransactReply, DecodeError> {
    if elements.len() < ops.len() || elements.len() > ops.len() + 1 {
        return Err(malformed(format!(
            "{} elements for {} operations",
            elements.len(),
            ops.len()
        )));
    }
    let mut reply = TransactReply {
        results: Vec::with_capacity(ops.len()),
        error: None,
    };
    for (index, element) in elements.into_iter().enumerate() {
        let op = ops.get(index);
        let Some(raw) = element else {
            if reply.error.is_none() {
                return Err(malformed(format!(
                    "element {index} is null but no operation failed before it"
                )));
            }
            reply.results.push(None);
            continue;
        };
        if let Some(error) = raw.error {
            if reply.error.is_some() {
                return Err(malformed(format!("element {index} is a second error")));
            }
            if op.is_some() {
                reply.results.push(None);
            }
            reply.error = Some(TransactError {
                index,
                at_commit: op.is_none(),
                operation: op.map(Operation::name),
                kind: TransactErrorKind::from_error(&error),
                error,
                details: raw.details,
            });
            continue;
        }
        let Some(op) = op else {
            return Err(malformed(format!(
                "trailing element {index} is not an error"
            )));
        };
        reply
            .results
            .push(Some(decode_success(op, raw, schema, index)?));
    }
    Ok(reply)
}

fn decode_success(
    op: &Operation,
    raw: RawResult<'_>,
    schema: Option<&DatabaseSchema>,
    index: usize,
) -> Result<OperationResult, DecodeError> {
    let missing = |member: &str| {
        malformed(format!(
            "element {index} ({}) lacks \"{member}\"",
            op.name()
        ))
    };
    Ok(match op {
        Operation::Insert(_) => OperationResult::Insert {
            uuid: raw.uuid.ok_or_else(|| missing("uuid"))?,
        },
        Operation::Select(select) => {
            let rows = raw.rows.ok_or_else(|| missing("rows"))?;
            let table = schema.and_then(|s| s.table(&select.table));
            let mut d = serde_json::Deserializer::from_str(rows.get());
            let rows = RowsSeed(table).deserialize(&mut d)?;
            OperationResult::Select { rows }
        }
        Operation::Update(_) | Operation::Mutate(_) | Operation::Delete(_) => {
            OperationResult::Count {
                count: raw.count.ok_or_else(|| missing("count"))?,
            }
        }
        _ => OperationResult::Empty,
    })
}

/// An array of rows, typed when the table schema is known.
struct RowsSeed<'a>(Option<&'a crate::schema::TableSchema>);

impl<'de> DeserializeSeed<'de> for RowsSeed<'_> {
    type Value = Vec<Row>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Row>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed<'_> {
    type Value = Vec<Row>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of rows")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Row>, A::Error> {
        let mut rows = Vec::new();
        loop {
            let row = match self.0 {
                Some(table) => seq.next_element_seed(RowSeed(table))?,
                None => seq.next_element::<Row>()?,
            };
            match row {
                Some(row) => rows.push(row),
                None => return Ok(rows),
            }
        }
    }
}
