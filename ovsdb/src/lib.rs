//! OVSDB, the Open vSwitch Database Management Protocol (RFC 7047), as ovsdb-server 3.x
//! really speaks it.
//!
//! ```no_run
//! use ovsdb::{Client, MonitorRequest, Operation, OperationResult, Row};
//!
//! # async fn demo() -> Result<(), ovsdb::ClientError> {
//! // connect: a list of remotes; the client keeps to the cluster leader
//! let client = Client::connect("unix:/run/ovn/ovnnb_db.sock").await?;
//! // monitor: a replica of the Logical_Switch table, kept current by the client
//! let monitor = client
//!     .monitor("OVN_Northbound", vec![MonitorRequest::table("Logical_Switch")])
//!     .await?;
//! // transact: one atomic transaction of any number of operations
//! let insert = Operation::insert("Logical_Switch", Row::new().with("name", "ls1"));
//! let results = client.transact("OVN_Northbound", &[insert.into()]).await?;
//! if let OperationResult::Insert { uuid } = results[0] {
//!     // the server sends the monitor update before the reply: the replica shows it
//!     let row = monitor.store().get("Logical_Switch", &uuid).expect("replicated");
//!     assert_eq!(row.get("name").and_then(|v| v.as_atom()?.as_str()), Some("ls1"));
//! }
//! # Ok(()) }
//! ```
//!
//! Typed access goes through models generated from a schema ([`codegen`]) and their
//! runtime ([`typed`]): the crates `ovn-nb`, `ovn-sb` and `ovs-vsctl` carry the
//! models of the OVN and Open vSwitch databases, with transaction builders.
//!
//! Layers, bottom up (each module documents the part of the wire it models):
//! - [`value`]: atoms, sets, maps and uuids in their JSON notation.
//! - [`schema`]: `.ovsschema` documents and validation of values against column types.
//! - [`operation`]: transaction operations, conditions, mutations and their results.
//! - [`update`]: monitor replies and `update`/`update2`/`update3` notifications.
//! - [`cache`]: a replica of monitored tables with indexes and change subscriptions.
//! - [`codec`] and [`rpc`]: JSON-RPC 1.0 framing over a byte stream, and its messages.
//! - `client` (feature `client`): the tokio client, with clustered-server handling.
//! - [`codegen`]: generates typed table models from a schema; [`typed`] is the
//!   run-time support those models use (typed rows, columns, operations, replica
//!   reads and, with `client`, the typed database handle).

pub mod cache;
#[cfg(feature = "client")]
pub mod client;
pub mod codec;
pub mod codegen;
pub mod operation;
pub mod rpc;
pub mod schema;
pub mod typed;
pub mod update;
pub mod value;

pub use cache::{Store, Writer};
#[cfg(feature = "client")]
pub use client::{
    Client, ClientOptions, Error as ClientError, Event, Monitor, MonitorMethod, MonitorRequest,
    Remote, TlsConfig,
};
pub use codec::{DecodeError as FrameDecodeError, Deframer, FrameError, JsonFramer};
pub use operation::{Condition, Mutation, Operation, OperationResult, TransactError};
pub use rpc::{Message, MessageError, RpcError};
pub use schema::{DatabaseSchema, ValidationError};
pub use value::{Atom, Map, NamedUuid, Row, Set, Uuid, Value};
