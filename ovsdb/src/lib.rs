//! OVSDB, the Open vSwitch Database Management Protocol (RFC 7047), as ovsdb-server 3.x
//! really speaks it.
//!
//! Layers, bottom up (each module documents the part of the wire it models):
//! - [`value`]: atoms, sets, maps and uuids in their JSON notation.
//! - [`schema`]: `.ovsschema` documents and validation of values against column types.
//! - [`operation`]: transaction operations, conditions, mutations and their results.
//! - [`update`]: monitor replies and `update`/`update2`/`update3` notifications.
//! - [`cache`]: a replica of monitored tables with indexes and change subscriptions.
//! - [`codec`] and [`rpc`]: JSON-RPC 1.0 framing over a byte stream, and its messages.
//! - `client` (feature `client`): the tokio client, with clustered-server handling.
//! - `codegen`: generates typed table models from a schema.

pub mod cache;
#[cfg(feature = "client")]
pub mod client;
pub mod codec;
pub mod codegen;
pub mod operation;
pub mod rpc;
pub mod schema;
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
pub use value::{Atom, Datum, Map, NamedUuid, Row, Set, Uuid, Value};
