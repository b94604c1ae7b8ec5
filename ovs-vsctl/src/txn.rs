//! [`VsTxn`]: `ovs-vsctl` commands composed into one transaction, sans-I/O.
//!
//! Reads come from the replica (names through client-side indexes); writes
//! address rows by `_uuid`. [`VsTxn::may_exist`] / [`VsTxn::if_exists`] apply to
//! the next call only, as `--may-exist` / `--if-exists` do.
//!
//! No write silently does nothing: a `set` or a `mutate` that adds to a replicated
//! row (a port to a bridge, a key to a map) is preceded by a [`typed::row_exists`]
//! guard, so if another client deleted the row since the replica showed it the
//! transaction fails with [`VsError::RowGone`] and nothing is committed. Removals
//! (a port from its bridge, a bridge from the root) are not guarded: when their row
//! is already gone, the state they ask for holds.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use ovsdb::typed::{self, Column, Datum, RowId, Table, TypedOp, TypedStore, Uuid};

use crate::guards::Guards;
use crate::{
    Bridge, BridgeFailMode, BridgeProtocols, Interface, Mirror, OpenVSwitch, Port, QoS, Queue,
    VsError,
};

/// Settings of an interface created with [`VsTxn::add_port`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InterfaceSpec {
    /// `type` (`""` system, `internal`, `patch`, `geneve`, ...).
    pub iface_type: String,
    /// `external_ids` (e.g. `iface-id` binding it to an OVN logical port).
    pub external_ids: BTreeMap<String, String>,
    /// `options` (e.g. `peer` of a patch port, `remote_ip` of a tunnel).
    pub options: BTreeMap<String, String>,
    /// `mtu_request`.
    pub mtu_request: Option<i64>,
    /// `ingress_policing_rate` in kbps (0: off).
    pub ingress_policing_rate: i64,
    /// `ingress_policing_burst` in kb.
    pub ingress_policing_burst: i64,
}

/// A transaction on `Open_vSwitch` being built.
#[derive(Debug)]
pub struct VsTxn<'s> {
    store: &'s TypedStore,
    ops: Vec<TypedOp>,
    created: HashMap<(&'static str, String), Uuid>,
    deleted: Vec<Uuid>,
    /// Rows inserted by this transaction (they need no existence guard).
    inserted: HashSet<Uuid>,
    /// What the transaction's guards protect.
    guards: Guards,
    root: Option<RowId<OpenVSwitch>>,
    may_exist: bool,
    if_exists: bool,
}

impl<'s> VsTxn<'s> {
    /// An empty transaction reading `store`.
    pub fn new(store: &'s TypedStore) -> Self {
        VsTxn {
            store,
            ops: Vec::new(),
            created: HashMap::new(),
            deleted: Vec::new(),
            inserted: HashSet::new(),
            guards: Guards::default(),
            root: None,
            may_exist: false,
            if_exists: false,
        }
    }

    /// The next add is a no-op if its row exists.
    pub fn may_exist(&mut self) -> &mut Self {
        self.may_exist = true;
        self
    }

    /// The next delete is a no-op if its row does not exist.
    pub fn if_exists(&mut self) -> &mut Self {
        self.if_exists = true;
        self
    }

    /// Consumes the builder into its operations.
    pub fn into_ops(self) -> Vec<TypedOp> {
        self.ops
    }

    /// The operations, and what their guards protect (to explain a failed guard).
    pub(crate) fn into_parts(self) -> (Vec<TypedOp>, Guards) {
        (self.ops, self.guards)
    }

    /// Appends any typed operation (it gets no existence guard: add one with
    /// [`Self::guard_exists`]).
    pub fn push(&mut self, op: impl Into<TypedOp>) -> &mut Self {
        self.ops.push(op.into());
        self
    }

    /// Sets one column of row `id`; the transaction fails with
    /// [`VsError::RowGone`] if the row is gone at commit.
    pub fn set<T: Table, V: Datum>(
        &mut self,
        id: RowId<T>,
        column: Column<T, V>,
        value: impl Into<V>,
    ) -> &mut Self {
        self.guard_exists(id);
        self.push(typed::update(T::ROW_UUID_COLUMN.eq(id)).set(column.to(value)))
    }

    /// Makes the transaction fail with [`VsError::RowGone`] if row `id` is gone
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

    /// Asserts at commit that no row of `T` is named `name` yet: another client
    /// creating it after the replica was read fails the commit with
    /// [`VsError::AlreadyExists`] rather than a unique-index violation.
    fn guard_name_free<T: Table>(&mut self, name_column: Column<T, String>, name: &str) {
        self.guards
            .names_free
            .insert(self.ops.len(), (T::TABLE_NAME, name.to_string()));
        self.ops.push(typed::wait(name_column.eq(name)).into());
    }

    /// Inserts `row`.
    fn insert<T: Table>(&mut self, row: &T) -> RowId<T> {
        let insert = typed::insert(row);
        let id = insert.id();
        self.inserted.insert(id.uuid());
        self.ops.push(insert.into());
        id
    }

    fn set_keys<T: Table>(
        &mut self,
        id: RowId<T>,
        column: Column<T, BTreeMap<String, String>>,
        pairs: BTreeMap<String, String>,
    ) {
        self.guard_exists(id);
        self.ops.push(
            typed::mutate(T::ROW_UUID_COLUMN.eq(id))
                .with(column.set_keys(pairs))
                .into(),
        );
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

    fn lookup<T: Table>(&self, name: &str) -> Option<RowId<T>> {
        if let Some(uuid) = self.created.get(&(T::TABLE_NAME, name.to_string())) {
            return Some(RowId::new(*uuid));
        }
        self.store
            .ids_by::<T>("name", name)
            .into_iter()
            .find(|id| !self.deleted.contains(&id.uuid()))
    }

    fn require<T: Table>(&self, name: &str) -> Result<RowId<T>, VsError> {
        self.lookup(name).ok_or_else(|| VsError::NotFound {
            table: T::TABLE_NAME,
            name: name.to_string(),
        })
    }

    fn insert_named<T: Table>(&mut self, name: &str, row: &T) -> RowId<T> {
        let id = self.insert(row);
        self.created
            .insert((T::TABLE_NAME, name.to_string()), id.uuid());
        id
    }

    /// The `Open_vSwitch` row, created (as `ovs-vsctl init` does) if the
    /// database has none.
    pub fn root(&mut self) -> Result<RowId<OpenVSwitch>, VsError> {
        if let Some(root) = self.root {
            return Ok(root);
        }
        let root = match self.store.rows::<OpenVSwitch>()?.first() {
            Some(row) => row.id,
            None => {
                let insert = typed::insert(&OpenVSwitch::default());
                let id = insert.id();
                self.inserted.insert(id.uuid());
                // another client creating the root meanwhile is AlreadyExists of "."
                // (the name `ovs-vsctl` gives the root record)
                self.guards
                    .names_free
                    .insert(self.ops.len(), (OpenVSwitch::TABLE_NAME, ".".to_string()));
                self.ops
                    .push(typed::wait(OpenVSwitch::ROW_UUID.ne(id)).into());
                self.ops.push(insert.into());
                id
            }
        };
        self.root = Some(root);
        Ok(root)
    }

    /// Sets `Open_vSwitch` `external_ids` keys (`system-id`, `ovn-remote`,
    /// `ovn-encap-type`, `ovn-encap-ip`, ...), keeping the others.
    pub fn set_external_ids(&mut self, pairs: BTreeMap<String, String>) -> Result<(), VsError> {
        let root = self.root()?;
        self.set_keys(root, OpenVSwitch::EXTERNAL_IDS, pairs);
        Ok(())
    }

    /// `add-br NAME`: a bridge with its internal port and interface.
    pub fn add_br(&mut self, name: &str) -> Result<RowId<Bridge>, VsError> {
        let may_exist = std::mem::take(&mut self.may_exist);
        if let Some(id) = self.lookup::<Bridge>(name) {
            return if may_exist {
                Ok(id)
            } else {
                Err(VsError::AlreadyExists {
                    table: Bridge::TABLE_NAME,
                    name: name.into(),
                })
            };
        }
        let root = self.root()?;
        self.guard_name_free(Bridge::NAME, name);
        let iface = self.insert_named(
            name,
            &Interface {
                name: name.into(),
                r#type: "internal".into(),
                ..Default::default()
            },
        );
        let port = self.insert_named(
            name,
            &Port {
                name: name.into(),
                interfaces: [iface].into(),
                ..Default::default()
            },
        );
        let br = self.insert_named(
            name,
            &Bridge {
                name: name.into(),
                ports: [port].into(),
                ..Default::default()
            },
        );
        self.mutate(root, OpenVSwitch::BRIDGES.insert([br]));
        Ok(br)
    }

    /// `del-br NAME`: the bridge, its ports and interfaces are removed.
    pub fn del_br(&mut self, name: &str) -> Result<(), VsError> {
        let if_exists = std::mem::take(&mut self.if_exists);
        let Some(br) = self.lookup::<Bridge>(name) else {
            return if if_exists {
                Ok(())
            } else {
                Err(VsError::NotFound {
                    table: Bridge::TABLE_NAME,
                    name: name.into(),
                })
            };
        };
        let root = self.root()?;
        self.mutate(root, OpenVSwitch::BRIDGES.delete([br]));
        self.deleted.push(br.uuid());
        Ok(())
    }

    /// Sets `datapath_type` (`system`, `netdev`), `fail_mode` and `protocols` of a bridge.
    pub fn set_bridge(
        &mut self,
        name: &str,
        datapath_type: Option<&str>,
        fail_mode: Option<BridgeFailMode>,
        protocols: Option<BTreeSet<BridgeProtocols>>,
    ) -> Result<(), VsError> {
        let br = self.require::<Bridge>(name)?;
        let mut update = typed::update(Bridge::ROW_UUID.eq(br));
        if let Some(dp) = datapath_type {
            update = update.set(Bridge::DATAPATH_TYPE.to(dp.to_string()));
        }
        if let Some(mode) = fail_mode {
            update = update.set(Bridge::FAIL_MODE.to(Some(mode)));
        }
        if let Some(protocols) = protocols {
            update = update.set(Bridge::PROTOCOLS.to(protocols));
        }
        self.guard_exists(br);
        self.push(update);
        Ok(())
    }

    /// `add-port BRIDGE PORT -- set Interface PORT ...`: a port with one interface.
    pub fn add_port(
        &mut self,
        br: &str,
        name: &str,
        spec: InterfaceSpec,
    ) -> Result<RowId<Port>, VsError> {
        let may_exist = std::mem::take(&mut self.may_exist);
        let br_id = self.require::<Bridge>(br)?;
        if let Some(id) = self.lookup::<Port>(name) {
            let owner = self.store.ids_referencing::<Bridge>("ports", id.uuid());
            if !owner.is_empty() && !owner.contains(&br_id) {
                return Err(VsError::WrongBridge {
                    port: name.into(),
                    wanted: br.into(),
                });
            }
            return if may_exist {
                Ok(id)
            } else {
                Err(VsError::AlreadyExists {
                    table: Port::TABLE_NAME,
                    name: name.into(),
                })
            };
        }
        self.guard_name_free(Port::NAME, name);
        let iface = Interface {
            name: name.into(),
            r#type: spec.iface_type,
            external_ids: spec.external_ids,
            options: spec.options,
            mtu_request: spec.mtu_request,
            ingress_policing_rate: spec.ingress_policing_rate,
            ingress_policing_burst: spec.ingress_policing_burst,
            ..Default::default()
        };
        let iface = self.insert_named(name, &iface);
        let port = self.insert_named(
            name,
            &Port {
                name: name.into(),
                interfaces: [iface].into(),
                ..Default::default()
            },
        );
        self.mutate(br_id, Bridge::PORTS.insert([port]));
        Ok(port)
    }

    /// `del-port PORT`: removes the port from its bridge.
    pub fn del_port(&mut self, name: &str) -> Result<(), VsError> {
        let if_exists = std::mem::take(&mut self.if_exists);
        let Some(port) = self.lookup::<Port>(name) else {
            return if if_exists {
                Ok(())
            } else {
                Err(VsError::NotFound {
                    table: Port::TABLE_NAME,
                    name: name.into(),
                })
            };
        };
        for br in self.store.ids_referencing::<Bridge>("ports", port.uuid()) {
            self.mutate(br, Bridge::PORTS.delete([port]));
        }
        self.deleted.push(port.uuid());
        Ok(())
    }

    /// Sets `external_ids` keys of an interface (e.g. `iface-id`), keeping the others.
    pub fn set_interface_external_ids(
        &mut self,
        iface: &str,
        pairs: BTreeMap<String, String>,
    ) -> Result<(), VsError> {
        let id = self.require::<Interface>(iface)?;
        self.set_keys(id, Interface::EXTERNAL_IDS, pairs);
        Ok(())
    }

    /// Sets ingress policing (kbps, kb; 0 turns it off).
    pub fn set_ingress_policing(
        &mut self,
        iface: &str,
        rate: i64,
        burst: i64,
    ) -> Result<(), VsError> {
        let id = self.require::<Interface>(iface)?;
        self.guard_exists(id);
        self.push(
            typed::update(Interface::ROW_UUID.eq(id))
                .set(Interface::INGRESS_POLICING_RATE.to(rate))
                .set(Interface::INGRESS_POLICING_BURST.to(burst)),
        );
        Ok(())
    }

    /// Gives `port` a QoS of `qos_type` (`linux-htb`, `linux-netem`, ...) with
    /// `other_config` (e.g. `max-rate`, `latency`, `loss`) and queues numbered
    /// from 0 with their `other_config`. Replaces any earlier QoS reference.
    pub fn set_port_qos(
        &mut self,
        port: &str,
        qos_type: &str,
        other_config: BTreeMap<String, String>,
        queues: Vec<BTreeMap<String, String>>,
    ) -> Result<RowId<QoS>, VsError> {
        let port_id = self.require::<Port>(port)?;
        let mut queue_ids = BTreeMap::new();
        for (n, config) in queues.into_iter().enumerate() {
            let queue = self.insert(&Queue {
                other_config: config,
                ..Default::default()
            });
            queue_ids.insert(n as i64, queue);
        }
        let qos_id = self.insert(&QoS {
            r#type: qos_type.into(),
            other_config,
            queues: queue_ids,
            ..Default::default()
        });
        self.set(port_id, Port::QOS, Some(qos_id));
        Ok(qos_id)
    }

    /// Inserts a `QoS` row (its `type`, `other_config`, `external_ids` as given) with
    /// `queues` numbered from 0 (any `queues` already in `qos` are replaced). The row
    /// is referenced by nothing yet: give it to a port with [`Self::set_port_qos_ref`]
    /// in the same transaction, as `QoS` and `Queue` rows are roots that stay until
    /// destroyed.
    pub fn insert_qos(&mut self, mut qos: QoS, queues: Vec<Queue>) -> RowId<QoS> {
        qos.queues = queues
            .iter()
            .enumerate()
            .map(|(n, queue)| (n as i64, self.insert(queue)))
            .collect();
        self.insert(&qos)
    }

    /// `set Port PORT qos=ID` (`None`: `clear Port PORT qos`).
    pub fn set_port_qos_ref(&mut self, port: &str, qos: Option<RowId<QoS>>) -> Result<(), VsError> {
        let port_id = self.require::<Port>(port)?;
        self.set(port_id, Port::QOS, qos);
        Ok(())
    }

    /// `destroy QoS ID` with the `Queue` rows it holds (as read from the replica).
    /// Not guarded: a row already gone is what was asked. A port still referring to
    /// it fails the commit (referential integrity), so clear that reference first.
    pub fn destroy_qos(&mut self, id: RowId<QoS>) -> Result<(), VsError> {
        let queues: Vec<RowId<Queue>> = self
            .store
            .get(id)?
            .map(|qos| qos.queues.into_values().collect())
            .unwrap_or_default();
        self.push(typed::delete(QoS::ROW_UUID.eq(id)));
        for queue in queues {
            self.destroy_queue(queue);
        }
        Ok(())
    }

    /// `destroy Queue ID` (not guarded, as [`Self::destroy_qos`]).
    pub fn destroy_queue(&mut self, id: RowId<Queue>) {
        self.push(typed::delete(Queue::ROW_UUID.eq(id)));
    }

    /// Mirrors all traffic of `br` to `output_port` under mirror `name`.
    pub fn add_mirror(
        &mut self,
        br: &str,
        name: &str,
        output_port: &str,
    ) -> Result<RowId<Mirror>, VsError> {
        let br_id = self.require::<Bridge>(br)?;
        let out = self.require::<Port>(output_port)?;
        let id = self.insert(&Mirror {
            name: name.into(),
            select_all: true,
            output_port: Some(out),
            ..Default::default()
        });
        self.mutate(br_id, Bridge::MIRRORS.insert([id]));
        Ok(id)
    }
}
