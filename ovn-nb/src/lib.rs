//! Typed `OVN_Northbound` (OVN 23.03 schema 7.0.0) and the `ovn-nbctl`
//! operations a CNI controller needs.
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
//! rows by `_uuid`.

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
