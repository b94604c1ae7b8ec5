//! Typed `Open_vSwitch` (OVS 3.1 schema 8.3.1) and the `ovs-vsctl` operations
//! a CNI node agent needs: bridges, ports and interfaces, QoS/queues, mirrors,
//! `Open_vSwitch` external_ids, and waiting for `external_ids:ovn-installed`.
//!
//! - [`generated`]: one struct per table, generated from the vendored
//!   `schema/vswitch.ovsschema` (re-exported at the root).
//! - [`VsTxn`]: sans-I/O builder of one transaction.
//! - [`VsClient`]: connects, checks the schema, replicates, commits.

#[rustfmt::skip]
#[allow(clippy::all)]
pub mod generated;

mod client;
mod error;
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
