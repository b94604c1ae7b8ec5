//! One connection to one server: framed I/O, requests awaiting replies, probe timing.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use std::task::{ready, Context, Poll};

use futures::StreamExt;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use super::error::{Error, GaveUp};
use super::remote::Remote;
use super::transport::{Connector, Stream, StreamWriter};
use crate::codec::{DecodeError, JsonRpcCodec};
use crate::rpc::Message;

/// A caller's request: where its reply goes, and how to fail it.
#[derive(Debug)]
pub(crate) struct UserCall {
    pub method: Cow<'static, str>,
    /// A `transact` whose connection drops fails as "outcome unknown".
    pub transact: bool,
    pub reply: oneshot::Sender<Result<Box<RawValue>, Error>>,
}

/// Where the reply to a request we sent must go.
#[derive(Debug)]
pub(crate) enum Pending {
    /// A caller waits for it.
    User(UserCall),
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
    pub reader: FramedRead<Stream, JsonRpcCodec>,
    pub out: Outbox,
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

/// Bytes waiting to be written. The connection task writes them *beside* reading
/// (a `select!` branch), never instead of it: a server that stops reading our requests
/// until we read its replies (ovsdb-server does, once its backlog to us is large) must not
/// deadlock a pipeline of big transactions.
#[derive(Debug)]
pub(crate) struct Outbox {
    writer: StreamWriter,
    buf: Vec<u8>,
    /// How much of `buf` is written already.
    sent: usize,
}

impl Outbox {
    /// Nothing left to write.
    pub fn is_empty(&self) -> bool {
        self.sent == self.buf.len() && self.writer.is_flushed()
    }

    /// See [`StreamWriter::keep_awake`].
    pub fn keep_awake(&mut self, on: bool) {
        let writing = !self.is_empty();
        self.writer.keep_awake(on, writing);
    }

    /// Writes until everything queued is out. Cancel-safe: progress is kept in `self`.
    pub async fn drain(&mut self) -> std::io::Result<()> {
        std::future::poll_fn(|cx| self.poll_drain(cx)).await
    }

    pub fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.sent < self.buf.len() {
            let n = ready!(self.writer.poll_write(cx, &self.buf[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        // TLS: the last records may still be in rustls's buffer.
        ready!(self.writer.poll_flush(cx))?;
        self.buf.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl Conn {
    pub async fn open(
        connector: &mut Connector,
        remote: &Remote,
        max_len: usize,
        timeout: Duration,
    ) -> Result<Conn, String> {
        let (reader, writer) = tokio::time::timeout(timeout, connector.open(remote))
            .await
            .map_err(|_| format!("connecting took longer than {timeout:?}"))?
            .map_err(|e| format!("connecting: {e}"))?;
        Ok(Conn {
            remote: remote.clone(),
            reader: FramedRead::new(reader, JsonRpcCodec::new(max_len)),
            out: Outbox {
                writer,
                buf: Vec::new(),
                sent: 0,
            },
            pending: HashMap::default(),
            last_rx: Instant::now(),
            probe_sent: None,
        })
    }

    /// Queues a message; the connection task writes it out beside reading.
    pub fn feed(&mut self, message: &Message) {
        // Writing into a Vec cannot fail.
        let _ = message.write_to(&mut self.out.buf);
    }

    /// Queues an already encoded message.
    pub fn feed_encoded(&mut self, frame: &[u8]) {
        self.out.buf.extend_from_slice(frame);
    }

    /// Writes out everything queued (only while setting up a session, when nothing
    /// else is in flight).
    pub async fn flush(&mut self) -> Result<(), Ended> {
        let written = self.out.drain().await;
        written.map_err(|e| self.write_failed(e))
    }

    pub fn write_failed(&self, e: std::io::Error) -> Ended {
        Ended::Lost(format!("writing to {}: {e}", self.remote))
    }

    pub async fn send(&mut self, message: &Message) -> Result<(), Ended> {
        self.feed(message);
        self.flush().await
    }

    /// The next incoming message; errors and EOF end the connection.
    pub async fn receive(&mut self) -> Result<Message, Ended> {
        let next = self.reader.next().await;
        self.received(next)
    }

    /// Takes what the reader produced (see [`Conn::receive`]).
    pub fn received(
        &mut self,
        next: Option<Result<Message, DecodeError>>,
    ) -> Result<Message, Ended> {
        match next {
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
                Pending::User(UserCall {
                    method,
                    transact,
                    reply,
                }) => {
                    let error = if transact {
                        Error::OutcomeUnknown {
                            remote: remote.clone(),
                            why: GaveUp::ConnectionLost,
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
