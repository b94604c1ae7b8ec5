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
mod txn;

pub use client::VsClient;
pub use generated::*;
pub use txn::{InterfaceSpec, VsTxn};

use ovsdb::typed::{DbError, DecodeError};

/// Why an `Open_vSwitch` operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VsError {
    /// The row to create exists (and `may_exist` was not set).
    #[error("{table} {name:?} already exists")]
    AlreadyExists {
        /// Table.
        table: &'static str,
        /// Name.
        name: String,
    },
    /// The row to use or delete does not exist (and `if_exists` was not set).
    #[error("{table} {name:?} not found")]
    NotFound {
        /// Table.
        table: &'static str,
        /// Name.
        name: String,
    },
    /// The port exists on another bridge.
    #[error("port {port:?} exists on another bridge than {wanted:?}")]
    WrongBridge {
        /// Port.
        port: String,
        /// Bridge asked for.
        wanted: String,
    },
    /// A replicated row does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The database call failed (schema, validation, connection, server).
    #[error(transparent)]
    Db(#[from] DbError),
}
