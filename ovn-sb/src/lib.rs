//! Typed `OVN_Southbound` (OVN 23.03 schema 20.27.0) and read helpers for what
//! the node side watches: chassis and their encapsulations, port bindings
//! (which chassis a logical port is bound to), datapath bindings, logical
//! flows and MAC bindings.
//!
//! [`SbClient`] replicates the tables of the model with client-side indexes on
//! the columns looked up by (`Chassis.name`, `Port_Binding.logical_port`,
//! `Logical_Flow.logical_datapath`, ...), so every helper is an index lookup.

#[rustfmt::skip]
#[allow(clippy::all)]
pub mod generated;

mod client;

pub use client::{SbClient, SbError};
pub use generated::*;

// What the API takes and returns, so ordinary use needs no direct `ovsdb` dependency;
// the whole crate stays reachable as `ovn_sb::ovsdb` for the rest.
pub use ovsdb;
pub use ovsdb::operation::OperationResult;
pub use ovsdb::typed::{
    Column, DbError, DecodeError, RowId, Stored, Table, TypedClient, TypedOp, TypedStore,
};
pub use ovsdb::{ClientError, Uuid};
