//! Typed `OVN_Northbound` (OVN 23.03 schema 7.0.0) and the `ovn-nbctl`
//! operations a CNI controller needs.
//!
//! ```no_run
//! use std::time::Duration;
//! use ovn_nb::{LogicalSwitch, LogicalSwitchPort, NbClient, NbError, Stored};
//!
//! # async fn demo() -> Result<(), NbError> {
//! // connect: checks the server's schema and replicates the database
//! let nb = NbClient::connect("unix:/run/ovn/ovnnb_db.sock").await?;
//! // typed operations, built from the replica into one transaction
//! let mut txn = nb.txn();
//! txn.may_exist().ls_add("ovn-default")?;
//! let port = txn.lsp_add("ovn-default", "web-0.default")?;
//! txn.lsp_set_addresses("web-0.default", ["00:00:00:00:00:01 10.16.0.2"])?;
//! match nb.commit(txn).await {
//!     Ok(_) => {}
//!     // another client deleted the switch meanwhile: nothing was committed
//!     Err(NbError::RowGone { table, name, .. }) => println!("{table} {name:?} is gone"),
//!     // the connection dropped after sending: read back before retrying
//!     Err(e) if e.is_outcome_unknown() => return Err(e),
//!     Err(e) => return Err(e),
//! }
//! // the replica shows a committed transaction at once
//! let row: Option<LogicalSwitchPort> = nb.store().get(port)?;
//! assert_eq!(row.map(|p| p.name).as_deref(), Some("web-0.default"));
//! // monitor: wait for a change made by someone else (ovn-northd, another controller)
//! let ls: Stored<LogicalSwitch> = nb
//!     .wait_for("ovn-default with a subnet", Duration::from_secs(10), |ls: &LogicalSwitch| {
//!         ls.name == "ovn-default" && ls.other_config.contains_key("subnet")
//!     })
//!     .await?;
//! println!("{} has {} ports", ls.name, ls.ports.len());
//! # Ok(()) }
//! ```
//!
//! - [`generated`]: one struct per table, generated from the vendored
//!   `schema/ovn-nb.ovsschema` by `ovsdb::codegen` (re-exported at the root:
//!   [`LogicalSwitch`], [`LogicalSwitchPort`], [`Acl`], ...).
//! - [`NbTxn`]: sans-I/O builder of one transaction out of `ovn-nbctl`-like
//!   commands (`ls_add`, `lsp_add`, `acl_add`, `lr_route_add`, ...), each
//!   idempotent with [`NbTxn::may_exist`] / [`NbTxn::if_exists`].
//! - [`NbClient`]: connects, checks the server's schema against the model,
//!   replicates the database and commits transactions.
//!
//! Lookups by name go through client-side indexes of the replica; writes name
//! rows by `_uuid`, guarded so that a row deleted meanwhile fails the transaction
//! ([`NbError::RowGone`]) instead of being silently missed.
//!
//! The types the API takes and returns ([`Stored`], [`RowId`], [`TypedStore`],
//! [`DbError`], [`ClientError`], ...) are re-exported, so ordinary use needs no
//! direct `ovsdb` dependency.

#[rustfmt::skip]
#[allow(clippy::all)]
pub mod generated;

mod client;
mod error;
mod txn;

pub use client::NbClient;
pub use error::NbError;
pub use generated::*;
pub use txn::{AclSpec, AclTarget, LbEnsure, LbSpec, NatSpec, NbTxn, PolicySpec, RouteSpec};

// What the API takes and returns, so ordinary use needs no direct `ovsdb` dependency;
// the whole crate stays reachable as `ovn_nb::ovsdb` for the rest.
pub use ovsdb;
pub use ovsdb::operation::OperationResult;
pub use ovsdb::typed::{
    Column, DbError, DecodeError, RowId, Stored, Table, TypedClient, TypedOp, TypedStore,
};
pub use ovsdb::{ClientError, Uuid};
