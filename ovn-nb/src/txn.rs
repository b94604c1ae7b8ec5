//! [`NbTxn`]: northbound operations composed into one transaction, sans-I/O.
//!
//! Each method mirrors an `ovn-nbctl` command. It reads the current state from
//! the replica ([`TypedStore`]) — lookups by name use client-side indexes, never
//! a scan — plus what earlier methods of the same transaction created, and
//! appends [`TypedOp`]s. Writes address rows by `_uuid`; where two writers
//! could race on a name (creating a switch, router, load balancer), a `wait`
//! with timeout 0 asserts the name is still free when the server commits (if it
//! is not, the commit fails with [`NbError::AlreadyExists`] naming it).
//!
//! No write silently does nothing: a `set` or `mutate` that adds to a replicated row
//! (a port to a switch, a key to a map) is preceded by a [`typed::row_exists`]
//! guard, so if another client deleted the row since the replica showed it, the
//! whole transaction fails with [`NbError::RowGone`] naming the row, and nothing is
//! committed. Without it the write would match no row and succeed, and a row
//! inserted for it would be garbage-collected. Removals (deleting a row, removing
//! references or keys) are not guarded: when their row is already gone, the state
//! they ask for holds. Rows inserted by the same transaction need no guard.
//!
//! Idempotency follows `ovn-nbctl`: [`NbTxn::may_exist`] before an add turns
//! "already exists" into a no-op, [`NbTxn::if_exists`] before a delete turns
//! "not found" into a no-op. Both apply to the next call only.

mod acl;
mod ensure;
mod guards;
mod lb;
mod router;
mod switch;
mod vips;

use std::collections::{HashMap, HashSet};

use ovsdb::typed::{self, Column, Datum, RowId, Stored, Table, TypedOp, TypedStore, Uuid};

use crate::NbError;
use guards::Guards;

pub use acl::{AclSpec, AclTarget};
pub use ensure::LbEnsure;
pub use lb::LbSpec;
pub use router::{NatSpec, PolicySpec, RouteSpec};

/// A northbound transaction being built.
#[derive(Debug)]
pub struct NbTxn<'s> {
    store: &'s TypedStore,
    ops: Vec<TypedOp>,
    /// Rows created by this transaction, by (table, name).
    created: HashMap<(&'static str, String), Uuid>,
    /// Rows deleted (or dereferenced) by this transaction.
    deleted: HashSet<Uuid>,
    /// Rows inserted by this transaction (they need no existence guard).
    inserted: HashSet<Uuid>,
    /// What the transaction's guards protect.
    guards: Guards,
    may_exist: bool,
    if_exists: bool,
}

impl<'s> NbTxn<'s> {
    /// An empty transaction reading from `store`.
    pub fn new(store: &'s TypedStore) -> Self {
        NbTxn {
            store,
            ops: Vec::new(),
            created: HashMap::new(),
            deleted: HashSet::new(),
            inserted: HashSet::new(),
            guards: Guards::default(),
            may_exist: false,
            if_exists: false,
        }
    }

    /// The next add is a no-op if its row exists (`--may-exist`).
    pub fn may_exist(&mut self) -> &mut Self {
        self.may_exist = true;
        self
    }

    /// The next delete is a no-op if its row does not exist (`--if-exists`).
    pub fn if_exists(&mut self) -> &mut Self {
        self.if_exists = true;
        self
    }

    /// The operations built so far.
    pub fn ops(&self) -> &[TypedOp] {
        &self.ops
    }

    /// Consumes the builder into its operations.
    pub fn into_ops(self) -> Vec<TypedOp> {
        self.ops
    }

    /// The operations, and what their guards protect (to explain a failed guard).
    pub(crate) fn into_parts(self) -> (Vec<TypedOp>, Guards) {
        (self.ops, self.guards)
    }

    /// The replica the transaction reads.
    pub fn store(&self) -> &'s TypedStore {
        self.store
    }

    /// Appends any typed operation (escape hatch for columns without a helper; it
    /// gets no existence guard: add one with [`Self::guard_exists`]).
    pub fn push(&mut self, op: impl Into<TypedOp>) -> &mut Self {
        self.ops.push(op.into());
        self
    }

    /// Sets one column of the row `id`; the transaction fails with
    /// [`NbError::RowGone`] if the row is gone at commit.
    pub fn set<T: Table, V: Datum>(
        &mut self,
        id: RowId<T>,
        column: Column<T, V>,
        value: impl Into<V>,
    ) -> &mut Self {
        self.guard_exists(id);
        self.push(typed::update(T::ROW_UUID_COLUMN.eq(id)).set(column.to(value)))
    }

    /// Sets keys of a map column of row `id`, replacing their values; the
    /// transaction fails with [`NbError::RowGone`] if the row is gone at commit.
    pub fn set_keys<T: Table>(
        &mut self,
        id: RowId<T>,
        column: Column<T, std::collections::BTreeMap<String, String>>,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> &mut Self {
        self.guard_exists(id);
        self.push(typed::mutate(T::ROW_UUID_COLUMN.eq(id)).with(column.set_keys(pairs)))
    }

    /// Makes the transaction fail with [`NbError::RowGone`] if row `id` is gone
    /// when the server runs it (once per row; rows inserted by this transaction
    /// need no guard).
    pub fn guard_exists<T: Table>(&mut self, id: RowId<T>) -> &mut Self {
        let uuid = id.uuid();
        if self.inserted.contains(&uuid) || self.guards.rows.contains_key(&uuid) {
            return self;
        }
        let name = self
            .store
            .get_raw(id)
            .and_then(|row| Some(row.get("name")?.as_atom()?.as_str()?.to_string()));
        self.guards.rows.insert(uuid, name);
        self.push(typed::row_exists(id))
    }

    /// Takes the one-shot `may_exist` flag.
    fn take_may_exist(&mut self) -> bool {
        std::mem::take(&mut self.may_exist)
    }

    /// Takes the one-shot `if_exists` flag.
    fn take_if_exists(&mut self) -> bool {
        std::mem::take(&mut self.if_exists)
    }

    /// The row of `T` named `name`, created by this transaction or replicated
    /// (and not deleted by this transaction).
    fn lookup<T: Table>(&self, name: &str) -> Result<Option<RowId<T>>, NbError> {
        if let Some(uuid) = self.created.get(&(T::TABLE_NAME, name.to_string())) {
            return Ok(Some(RowId::new(*uuid)));
        }
        let ids: Vec<RowId<T>> = self
            .store
            .ids_by::<T>("name", name)
            .into_iter()
            .filter(|id| !self.deleted.contains(&id.uuid()))
            .collect();
        match ids.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(*one)),
            more => Err(NbError::Ambiguous {
                table: T::TABLE_NAME,
                name: name.to_string(),
                count: more.len(),
            }),
        }
    }

    /// Like [`Self::lookup`] but missing is an error.
    fn require<T: Table>(&self, name: &str) -> Result<RowId<T>, NbError> {
        self.lookup::<T>(name)?.ok_or_else(|| NbError::NotFound {
            table: T::TABLE_NAME,
            name: name.to_string(),
        })
    }

    /// The replicated row `id` (rows created by this transaction are not replicated yet).
    fn row<T: Table>(&self, id: RowId<T>) -> Result<Option<T>, NbError> {
        Ok(self.store.get(id)?)
    }

    /// Inserts `row` (named `name` for later lookups in this transaction).
    fn insert_named<T: Table>(&mut self, name: &str, row: &T) -> RowId<T> {
        let id = self.insert(row);
        self.created
            .insert((T::TABLE_NAME, name.to_string()), id.uuid());
        id
    }

    /// Inserts an unnamed row.
    fn insert<T: Table>(&mut self, row: &T) -> RowId<T> {
        let insert = typed::insert(row);
        let id = insert.id();
        self.inserted.insert(id.uuid());
        self.ops.push(insert.into());
        id
    }

    /// Asserts at commit time that no row of `T` is named `name` (the race guard
    /// for creating rows in tables without a unique index on `name`).
    fn guard_name_free<T: Table>(&mut self, name_column: Column<T, String>, name: &str) {
        self.guards
            .names_free
            .insert(self.ops.len(), (T::TABLE_NAME, name.to_string()));
        self.ops.push(typed::wait(name_column.eq(name)).into());
    }

    /// Deletes row `id` of a root table.
    fn delete_row<T: Table>(&mut self, id: RowId<T>) {
        self.deleted.insert(id.uuid());
        self.created.retain(|_, uuid| *uuid != id.uuid());
        self.ops
            .push(typed::delete(T::ROW_UUID_COLUMN.eq(id)).into());
    }

    /// Mutates row `id`, guarded unless the mutation only removes.
    fn mutate<T: Table>(&mut self, id: RowId<T>, mutation: typed::MutationSpec) {
        if mutation.mutator != typed::Mutator::Delete {
            self.guard_exists(id);
        }
        self.ops.push(
            typed::mutate(T::ROW_UUID_COLUMN.eq(id))
                .with([mutation])
                .into(),
        );
    }

    /// Rows referenced by `ids` that are replicated, decoded.
    fn rows_of<T: Table>(
        &self,
        ids: impl IntoIterator<Item = RowId<T>>,
    ) -> Result<Vec<Stored<T>>, NbError> {
        let mut out = Vec::new();
        for id in ids {
            if let Some(row) = self.row(id)? {
                out.push(Stored { id, row });
            }
        }
        Ok(out)
    }

    /// Handles "already exists": `Ok(true)` means skip (may_exist), error otherwise.
    fn exists(table: &'static str, name: &str, may_exist: bool) -> Result<bool, NbError> {
        if may_exist {
            Ok(true)
        } else {
            Err(NbError::AlreadyExists {
                table,
                name: name.to_string(),
            })
        }
    }

    /// Handles "not found": `Ok(())` means skip (if_exists), error otherwise.
    fn missing(table: &'static str, name: &str, if_exists: bool) -> Result<(), NbError> {
        if if_exists {
            Ok(())
        } else {
            Err(NbError::NotFound {
                table,
                name: name.to_string(),
            })
        }
    }
}
