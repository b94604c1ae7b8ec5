//! Typed `OVN_Southbound` (OVN 23.03 schema 20.27.0) and read helpers for what
//! the node side watches: chassis and their encapsulations, port bindings
//! (which chassis a logical port is bound to), datapath bindings, logical
//! flows and MAC bindings.
//!
//! [`SbClient`] replicates the tables of the model with client-side indexes on
//! the columns looked up by (`Chassis.name`, `Port_Binding.logical_port`,
//! `Logical_Flow.logical_datapath`, ...), so every helper is an index lookup.
//!
//! ```no_run
//! use std::time::Duration;
//! use ovn_sb::ovsdb::typed::{row_exists, update};
//! use ovn_sb::{DbError, PortBinding, SbClient, SbError};
//!
//! # async fn demo() -> Result<(), SbError> {
//! // connect: checks the server's schema and replicates the model's tables
//! let sb = SbClient::connect("unix:/run/ovn/ovnsb_db.sock").await?;
//! // monitor: wait for ovn-northd to create the logical port's binding
//! let binding = sb
//!     .wait_port_binding("web-0.default", Duration::from_secs(30))
//!     .await?;
//! println!("tunnel key {}", binding.tunnel_key);
//! // typed reads of the replica, through client-side indexes
//! if let Some(chassis) = sb.bound_chassis("web-0.default")? {
//!     for encap in sb.encaps(&chassis)? {
//!         println!("{chassis}: {:?} {}", encap.r#type, encap.ip);
//!     }
//! }
//! // transact: typed operations through the database handle; the guard fails the
//! // transaction (nothing committed) if the binding was deleted meanwhile
//! let external_ids = [("owner".to_string(), "demo".to_string())];
//! let ops = vec![
//!     row_exists(binding.id),
//!     update(PortBinding::ROW_UUID.eq(binding.id))
//!         .set(PortBinding::EXTERNAL_IDS.to(external_ids))
//!         .into(),
//! ];
//! match sb.db().transact(ops).await {
//!     Ok(_) => {}
//!     Err(DbError::RowGone { table, uuid, .. }) => println!("{table} {uuid} is gone"),
//!     Err(e) if e.is_outcome_unknown() => println!("read back before retrying"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(()) }
//! ```

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
