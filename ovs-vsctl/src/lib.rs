//! Typed `Open_vSwitch` (OVS 3.1 schema 8.3.1) and the `ovs-vsctl` operations
//! a CNI node agent needs: bridges, ports and interfaces, QoS/queues, mirrors,
//! `Open_vSwitch` external_ids, and waiting for `external_ids:ovn-installed`.
//!
//! ```no_run
//! use std::collections::BTreeMap;
//! use std::time::Duration;
//! use ovs_vsctl::{InterfaceSpec, VsClient, VsError};
//!
//! # async fn demo() -> Result<(), VsError> {
//! // connect: checks the server's schema and replicates the database
//! let vs = VsClient::connect("unix:/run/openvswitch/db.sock").await?;
//! // typed operations, `ovs-vsctl --may-exist add-br br-int -- add-port ...` in one transaction
//! let mut txn = vs.txn();
//! txn.may_exist().add_br("br-int")?;
//! let spec = InterfaceSpec {
//!     iface_type: "internal".into(),
//!     external_ids: BTreeMap::from([("iface-id".into(), "web-0.default".into())]),
//!     ..Default::default()
//! };
//! txn.add_port("br-int", "veth-web-0", spec)?;
//! match vs.commit(txn).await {
//!     Ok(()) => {}
//!     // another client deleted br-int meanwhile: nothing was committed
//!     Err(VsError::RowGone { table, name, .. }) => println!("{table} {name:?} is gone"),
//!     // the connection dropped after sending: read back before retrying
//!     Err(e) if e.is_outcome_unknown() => return Err(e),
//!     Err(e) => return Err(e),
//! }
//! assert_eq!(vs.list_ports("br-int")?, ["veth-web-0"]);
//! // monitor: wait until ovn-controller has installed the port's flows
//! let iface = vs.wait_ovn_installed("veth-web-0", Duration::from_secs(30)).await?;
//! println!("{} is ready ({:?})", iface.name, iface.ofport);
//! # Ok(()) }
//! ```
//!
//! - [`generated`]: one struct per table, generated from the vendored
//!   `schema/vswitch.ovsschema` (re-exported at the root).
//! - [`VsTxn`]: sans-I/O builder of one transaction.
//! - [`VsClient`]: connects, checks the schema, replicates, commits.
//!
//! Writes address rows by `_uuid`, guarded so that a row deleted meanwhile fails
//! the transaction ([`VsError::RowGone`]) instead of being silently missed. The
//! types the API takes and returns ([`Stored`], [`RowId`], [`TypedStore`],
//! [`DbError`], [`ClientError`], ...) are re-exported, so ordinary use needs no
//! direct `ovsdb` dependency.

#[rustfmt::skip]
#[allow(clippy::all)]
pub mod generated;

mod client;
mod error;
mod guards;
mod txn;

pub use client::VsClient;
pub use error::VsError;
pub use generated::*;
pub use txn::{InterfaceSpec, VsTxn};

// What the API takes and returns, so ordinary use needs no direct `ovsdb` dependency;
// the whole crate stays reachable as `ovs_vsctl::ovsdb` for the rest.
pub use ovsdb;
pub use ovsdb::operation::OperationResult;
pub use ovsdb::typed::{
    Column, DbError, DecodeError, RowId, Stored, Table, TypedClient, TypedOp, TypedStore,
};
pub use ovsdb::{ClientError, Uuid};
