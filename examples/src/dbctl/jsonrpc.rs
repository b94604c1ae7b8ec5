//! A small blocking JSON-RPC 1.0 connection to ovsdb-server (RFC 7047 §4).
//!
//! The command-line tools make one short exchange per run (schema, one monitor snapshot,
//! one transaction), so a blocking socket is all they need. Replies are kept as raw JSON
//! text: the order of members in a monitor reply decides the order rows are printed in
//! (see [`super::order`]), and a decoded `serde_json::Map` would lose it.

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;

/// Either transport ovsdb-server listens on.
trait Stream: Read + Write + std::fmt::Debug {}
impl<T: Read + Write + std::fmt::Debug> Stream for T {}

/// One JSON-RPC message as it comes off the wire.
#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Value,
}

/// A connection to one ovsdb-server remote (`unix:PATH` or `tcp:IP:PORT`).
pub struct Connection {
    writer: Box<dyn Stream>,
    reader: serde_json::StreamDeserializer<
        'static,
        serde_json::de::IoRead<BufReader<Box<dyn Stream>>>,
        Box<RawValue>,
    >,
    next_id: u64,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("stream", &self.writer)
            .finish()
    }
}

impl Connection {
    /// Connects to `remote`, in the syntax of `--db` (`unix:/path`, `tcp:1.2.3.4:6641`).
    pub fn open(remote: &str) -> Result<Connection> {
        let (writer, reader): (Box<dyn Stream>, Box<dyn Stream>) =
            if let Some(path) = remote.strip_prefix("unix:") {
                let s = UnixStream::connect(path)
                    .with_context(|| format!("{remote}: database connection failed"))?;
                (Box::new(s.try_clone()?), Box::new(s))
            } else if let Some(addr) = remote.strip_prefix("tcp:") {
                let s = TcpStream::connect(addr)
                    .with_context(|| format!("{remote}: database connection failed"))?;
                s.set_nodelay(true)?;
                (Box::new(s.try_clone()?), Box::new(s))
            } else {
                bail!("{remote}: unsupported database remote (use unix:PATH or tcp:IP:PORT)");
            };
        let reader = serde_json::Deserializer::from_reader(BufReader::new(reader)).into_iter();
        Ok(Connection {
            writer,
            reader,
            next_id: 0,
        })
    }

    /// Sends `method(params)` and returns the raw `result` text of its reply, answering
    /// the server's `echo` keepalives while waiting.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Box<RawValue>> {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"id": id, "method": method, "params": params});
        serde_json::to_writer(&mut self.writer, &request)?;
        self.writer.flush()?;
        loop {
            let raw = self
                .reader
                .next()
                .ok_or_else(|| anyhow!("database connection closed"))?
                .context("malformed JSON-RPC message from the database")?;
            let msg: Message = serde_json::from_str(raw.get())?;
            if msg.method.as_deref() == Some("echo") {
                let params: Value = serde_json::from_str::<Value>(raw.get())?["params"].clone();
                let reply = json!({"id": msg.id, "result": params, "error": null});
                serde_json::to_writer(&mut self.writer, &reply)?;
                self.writer.flush()?;
                continue;
            }
            if msg.method.is_some() || msg.id != json!(id) {
                continue; // notifications (we never keep monitors open) and stale replies
            }
            if !msg.error.is_null() {
                bail!("{method} failed: {}", msg.error);
            }
            return msg
                .result
                .ok_or_else(|| anyhow!("{method}: reply without result"));
        }
    }

    /// `get_schema` of `db`, decoded.
    pub fn get_schema(&mut self, db: &str) -> Result<Value> {
        let raw = self.call("get_schema", json!([db]))?;
        Ok(serde_json::from_str(raw.get())?)
    }

    /// `transact` on `db`: returns the array of operation results.
    pub fn transact(&mut self, db: &str, ops: Vec<Value>) -> Result<Vec<Value>> {
        let mut params = vec![json!(db)];
        params.extend(ops);
        let raw = self.call("transact", Value::Array(params))?;
        Ok(serde_json::from_str(raw.get())?)
    }
}
