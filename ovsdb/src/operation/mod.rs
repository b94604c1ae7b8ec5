//! Transaction operations (RFC 7047 section 5.2) as values: build them, validate them
//! against a schema, serialize them as the `transact` params after the database name, and
//! decode the reply into typed results or a typed [`TransactError`].
//!
//! ```
//! use ovsdb::operation::{Condition, Mutation, Operation};
//! use ovsdb::value::{NamedUuid, Row, Uuid, Value};
//!
//! let ls: Uuid = "6ffa1f4e-8f4f-4f7a-9d0e-1a2b3c4d5e6f".parse().unwrap();
//! let lsp = NamedUuid::new("lsp0").unwrap();
//! let ops: Vec<Operation> = vec![
//!     Operation::insert("Logical_Switch_Port", Row::new().with("name", "p0"))
//!         .with_uuid_name(lsp.clone())
//!         .into(),
//!     Operation::mutate("Logical_Switch")
//!         .with_condition(Condition::eq("_uuid", ls))
//!         .with_mutation(Mutation::insert("ports", lsp))
//!         .into(),
//! ];
//! let json = serde_json::to_string(&ops).unwrap();
//! assert!(json.starts_with(r#"[{"op":"insert","table":"Logical_Switch_Port","row":{"name":"p0"},"uuid-name":"lsp0"}"#));
//! ```

mod condition;
mod json;
mod result;
mod validate;

pub use condition::{Condition, Function, Mutation, Mutator, UnknownName};
pub use result::{OperationResult, TransactError, TransactErrorKind, TransactReply};
pub use validate::validate_all;

use crate::value::{NamedUuid, Row, Uuid};

/// `insert`: add a row. `uuid_name` lets later operations refer to it as a named uuid;
/// `uuid` (OVS 2.13+ extension) chooses the new row's uuid.
#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    /// The table.
    pub table: String,
    /// The row's initial columns (others take their defaults).
    pub row: Row,
    /// `"uuid-name"`.
    pub uuid_name: Option<NamedUuid>,
    /// `"uuid"`.
    pub uuid: Option<Uuid>,
}

impl Insert {
    /// Names the row for later operations of the same transaction.
    pub fn with_uuid_name(mut self, name: NamedUuid) -> Self {
        self.uuid_name = Some(name);
        self
    }

    /// Chooses the new row's uuid (the server answers `duplicate uuid` if it exists).
    pub fn with_uuid(mut self, uuid: Uuid) -> Self {
        self.uuid = Some(uuid);
        self
    }
}

/// `select`: read the rows matching `conditions` (all columns, or only `columns`).
#[derive(Debug, Clone, PartialEq)]
pub struct Select {
    /// The table.
    pub table: String,
    /// The `where` clauses (all must hold; none matches every row).
    pub conditions: Vec<Condition>,
    /// The columns to return; `None` for all.
    pub columns: Option<Vec<String>>,
}

/// `update`: set columns of the rows matching `conditions`.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The table.
    pub table: String,
    /// The `where` clauses.
    pub conditions: Vec<Condition>,
    /// The new column values.
    pub row: Row,
}

/// `mutate`: apply mutations to the rows matching `conditions`.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutate {
    /// The table.
    pub table: String,
    /// The `where` clauses.
    pub conditions: Vec<Condition>,
    /// The mutations, applied in order.
    pub mutations: Vec<Mutation>,
}

/// `delete`: remove the rows matching `conditions`.
#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    /// The table.
    pub table: String,
    /// The `where` clauses.
    pub conditions: Vec<Condition>,
}

/// The `until` of a `wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitUntil {
    /// `"=="`: wait until the selected columns of the matching rows equal `rows`.
    Equal,
    /// `"!="`: wait until they differ.
    NotEqual,
}

/// `wait`: block (up to `timeout` ms; 0 = fail at once) until the `columns` of the rows
/// matching `conditions` are (`==`) or are not (`!=`) exactly `rows`. With a timeout of 0
/// it is an optimistic-concurrency guard.
#[derive(Debug, Clone, PartialEq)]
pub struct Wait {
    /// The table.
    pub table: String,
    /// Milliseconds to wait; `None` waits forever.
    pub timeout: Option<u64>,
    /// The `where` clauses.
    pub conditions: Vec<Condition>,
    /// The columns compared.
    pub columns: Vec<String>,
    /// `==` or `!=`.
    pub until: WaitUntil,
    /// The expected rows (only `columns` of them).
    pub rows: Vec<Row>,
}

/// One operation of a `transact` request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Operation {
    /// `insert`.
    Insert(Insert),
    /// `select`.
    Select(Select),
    /// `update`.
    Update(Update),
    /// `mutate`.
    Mutate(Mutate),
    /// `delete`.
    Delete(Delete),
    /// `wait`.
    Wait(Wait),
    /// `commit`: with `durable`, the reply waits for the commit to reach disk.
    Commit {
        /// `"durable"`.
        durable: bool,
    },
    /// `abort`: fail the transaction on purpose (result error `aborted`).
    Abort,
    /// `comment`: text for the database log.
    Comment(String),
    /// `assert`: fail with `not owner` unless this session holds the lock.
    Assert {
        /// The lock name.
        lock: String,
    },
}

macro_rules! with_conditions {
    ($($t:ident),*) => {$(
        impl $t {
            /// Adds a `where` clause.
            pub fn with_condition(mut self, condition: Condition) -> Self {
                self.conditions.push(condition);
                self
            }

            /// Adds several `where` clauses.
            pub fn with_conditions(mut self, conditions: impl IntoIterator<Item = Condition>) -> Self {
                self.conditions.extend(conditions);
                self
            }
        }

        impl From<$t> for Operation {
            fn from(op: $t) -> Operation {
                Operation::$t(op)
            }
        }
    )*};
}
with_conditions!(Select, Update, Mutate, Delete, Wait);

impl From<Insert> for Operation {
    fn from(op: Insert) -> Operation {
        Operation::Insert(op)
    }
}

impl Select {
    /// Returns only these columns.
    pub fn with_columns<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }
}

impl Mutate {
    /// Adds a mutation.
    pub fn with_mutation(mut self, mutation: Mutation) -> Self {
        self.mutations.push(mutation);
        self
    }
}

impl Wait {
    /// Sets the timeout in milliseconds (0: fail at once if the rows do not match).
    pub fn with_timeout(mut self, milliseconds: u64) -> Self {
        self.timeout = Some(milliseconds);
        self
    }
}

impl Operation {
    /// An `insert` of `row` into `table`.
    pub fn insert(table: impl Into<String>, row: Row) -> Insert {
        Insert {
            table: table.into(),
            row,
            uuid_name: None,
            uuid: None,
        }
    }

    /// A `select` of all rows and columns of `table` (narrow with the builder methods).
    pub fn select(table: impl Into<String>) -> Select {
        Select {
            table: table.into(),
            conditions: Vec::new(),
            columns: None,
        }
    }

    /// An `update` setting `row`'s columns (add conditions, or it updates every row).
    pub fn update(table: impl Into<String>, row: Row) -> Update {
        Update {
            table: table.into(),
            conditions: Vec::new(),
            row,
        }
    }

    /// A `mutate` (add conditions and mutations).
    pub fn mutate(table: impl Into<String>) -> Mutate {
        Mutate {
            table: table.into(),
            conditions: Vec::new(),
            mutations: Vec::new(),
        }
    }

    /// A `delete` (add conditions, or it deletes every row).
    pub fn delete(table: impl Into<String>) -> Delete {
        Delete {
            table: table.into(),
            conditions: Vec::new(),
        }
    }

    /// A `wait` without timeout on `columns` of the matching rows.
    pub fn wait<S: Into<String>>(
        table: impl Into<String>,
        columns: impl IntoIterator<Item = S>,
        until: WaitUntil,
        rows: Vec<Row>,
    ) -> Wait {
        Wait {
            table: table.into(),
            timeout: None,
            conditions: Vec::new(),
            columns: columns.into_iter().map(Into::into).collect(),
            until,
            rows,
        }
    }

    /// A `commit`.
    pub fn commit(durable: bool) -> Operation {
        Operation::Commit { durable }
    }

    /// An `abort`.
    pub fn abort() -> Operation {
        Operation::Abort
    }

    /// A `comment`.
    pub fn comment(text: impl Into<String>) -> Operation {
        Operation::Comment(text.into())
    }

    /// An `assert` of a lock.
    pub fn assert_lock(lock: impl Into<String>) -> Operation {
        Operation::Assert { lock: lock.into() }
    }

    /// The wire name of the operation (`"insert"`, `"select"`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Operation::Insert(_) => "insert",
            Operation::Select(_) => "select",
            Operation::Update(_) => "update",
            Operation::Mutate(_) => "mutate",
            Operation::Delete(_) => "delete",
            Operation::Wait(_) => "wait",
            Operation::Commit { .. } => "commit",
            Operation::Abort => "abort",
            Operation::Comment(_) => "comment",
            Operation::Assert { .. } => "assert",
        }
    }

    /// The table the operation works on, if any.
    pub fn table(&self) -> Option<&str> {
        match self {
            Operation::Insert(op) => Some(&op.table),
            Operation::Select(op) => Some(&op.table),
            Operation::Update(op) => Some(&op.table),
            Operation::Mutate(op) => Some(&op.table),
            Operation::Delete(op) => Some(&op.table),
            Operation::Wait(op) => Some(&op.table),
            _ => None,
        }
    }
}
