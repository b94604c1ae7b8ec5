//! One connection to one server: framed I/O, requests awaiting replies, probe timing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::codec::Framed;

use super::error::Error;
use super::remote::{Remote, Stream};
use crate::codec::{DecodeError, JsonRpcCodec};
use crate::rpc::Message;

/// Queued request bytes beyond which queuing writes them out before the batch ends.
const WRITE_HIGH_WATER: usize = 256 * 1024;

/// Where the reply to a request we sent must go.
#[derive(Debug)]
pub(crate) enum Pending {
    /// A caller waits on `reply`.
    User {
        method: Cow<'static, str>,
        transact: bool,
        reply: oneshot::Sender<Result<Box<RawValue>, Error>>,
    },
    /// Our own inactivity probe.
    Probe,
    /// The start (or resume) of a monitor; its reply fills the monitor's cache.
    MonitorStart {
        monitor: u64,
        reply: Option<oneshot::Sender<Result<(), Error>>>,
    },
    /// Answer ignored (e.g. `set_db_change_aware` sent while running).
    Ignore,
}

/// Hashes our own request ids (sequential integers chosen by us, not by the peer) with
/// one multiplication instead of SipHash: a lookup per reply is on the hot path.
#[derive(Debug, Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        // Fibonacci hashing spreads sequential ids over the high bits hashbrown uses.
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A live connection.
#[derive(Debug)]
pub(crate) struct Conn {
    pub remote: Remote,
    framed: Framed<Stream, JsonRpcCodec>,
    pub pending: HashMap<u64, Pending, BuildHasherDefault<IdHasher>>,
    /// When something last arrived (any message counts as liveness, as in OVS).
    pub last_rx: Instant,
    /// When our outstanding probe was sent.
    pub probe_sent: Option<Instant>,
}

/// Why a connection ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// All client handles were dropped: stop for good.
    Shutdown,
    /// The connection failed or must be replaced; reconnect.
    Lost(String),
}

impl Conn {
    pub async fn open(remote: &Remote, max_len: usize, timeout: Duration) -> Result<Conn, String> {
        let stream = tokio::time::timeout(timeout, remote.connect())
            .await
            .map_err(|_| format!("connecting to {remote} timed out"))?
            .map_err(|e| format!("connecting to {remote}: {e}"))?;
        Ok(Conn {
            remote: remote.clone(),
            framed: Framed::new(stream, JsonRpcCodec::new(max_len)),
            pending: HashMap::default(),
            last_rx: Instant::now(),
            probe_sent: None,
        })
    }

    /// Queues a message without flushing (pipelining: flush once per batch).
    pub async fn feed(&mut self, message: &Message) -> Result<(), Ended> {
        self.framed
            .feed(message)
            .await
            .map_err(|e| Ended::Lost(format!("writing to {}: {e}", self.remote)))
    }

    /// Queues an already encoded message; writes out once much is queued, so a burst
    /// of large requests does not pile up in memory before the batch's flush.
    pub async fn feed_encoded(&mut self, frame: &[u8]) -> Result<(), Ended> {
        let buffer = self.framed.write_buffer_mut();
        buffer.extend_from_slice(frame);
        if buffer.len() >= WRITE_HIGH_WATER {
            self.flush().await?;
        }
        Ok(())
    }

    pub async fn flush(&mut self) -> Result<(), Ended> {
        SinkExt::<&Message>::flush(&mut self.framed)
            .await
            .map_err(|e| Ended::Lost(format!("writing to {}: {e}", self.remote)))
    }

    pub async fn send(&mut self, message: &Message) -> Result<(), Ended> {
        self.feed(message).await?;
        self.flush().await
    }

    /// The next incoming message; errors and EOF end the connection.
    pub async fn receive(&mut self) -> Result<Message, Ended> {
        match self.framed.next().await {
            Some(Ok(message)) => {
                self.last_rx = Instant::now();
                self.probe_sent = None;
                Ok(message)
            }
            Some(Err(DecodeError::Io(e))) => {
                Err(Ended::Lost(format!("reading from {}: {e}", self.remote)))
            }
            Some(Err(e)) => Err(Ended::Lost(format!("bad input from {}: {e}", self.remote))),
            None => Err(Ended::Lost(format!(
                "{} closed the connection",
                self.remote
            ))),
        }
    }

    /// Fails every request still waiting for a reply. A `transact` gets
    /// [`Error::OutcomeUnknown`]: it is never replayed on the next connection.
    pub fn fail_pending(&mut self) {
        let remote = self.remote.to_string();
        for (_, pending) in self.pending.drain() {
            match pending {
                Pending::User {
                    method,
                    transact,
                    reply,
                } => {
                    let error = if transact {
                        Error::OutcomeUnknown {
                            remote: remote.clone(),
                        }
                    } else {
                        Error::ConnectionLost {
                            method: method.into_owned(),
                            remote: remote.clone(),
                        }
                    };
                    let _ = reply.send(Err(error));
                }
                Pending::MonitorStart {
                    reply: Some(reply), ..
                } => {
                    let _ = reply.send(Err(Error::ConnectionLost {
                        method: "monitor".into(),
                        remote: remote.clone(),
                    }));
                }
                _ => {}
            }
        }
    }
}
