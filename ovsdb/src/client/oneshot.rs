//! A blocking, one-shot OVSDB connection for command-line tools (`ovn-nbctl`,
//! `ovs-vsctl`): one process, a handful of round trips, then exit.
//!
//! Starting a tokio runtime and a connection task costs more than such a tool's whole
//! exchange, so this path uses plain blocking sockets, with the crate's framing
//! ([`Deframer`]) and messages ([`Message`]). Replies are handed back as raw JSON text
//! ([`RawValue`]): a caller that cares about the order of members (the C tools print
//! rows in an order derived from it) decodes them itself.
//!
//! [`connect_cluster`] picks a server from a list of remotes with the same rule as the
//! tokio client and the C IDL (`_Server.Database`: has the schema, connected, leader
//! unless followers are allowed, Raft index not below one already seen), cycling
//! through the list with backoff until a deadline.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::remote::Remote;
use super::server::{check_server, monitor_params, Seen, ServerWatch};
use super::tls::{server_name, TlsConfig};
use crate::codec::Deframer;
use crate::rpc::{encode_request, Message, RpcError};
use crate::schema::DatabaseSchema;

/// Largest message accepted (a big NB database's monitor reply fits comfortably).
const MAX_MESSAGE: usize = 1 << 30;

/// Why a one-shot exchange failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OneshotError {
    /// Connecting, reading or writing failed.
    #[error("{remote}: database connection failed ({})", strerror(source))]
    Io {
        /// The remote.
        remote: String,
        /// The socket error.
        #[source]
        source: std::io::Error,
    },
    /// The server closed the connection before replying to `method`.
    #[error("{remote}: connection closed before the reply to {method:?}")]
    Closed {
        /// The remote.
        remote: String,
        /// The request left unanswered.
        method: String,
    },
    /// The server sent something that is not a JSON-RPC message.
    #[error("{remote}: bad message from the database: {source}")]
    Decode {
        /// The remote.
        remote: String,
        /// What was wrong with it.
        #[source]
        source: crate::codec::DecodeError,
    },
    /// The server answered `method` with an error.
    #[error("{method} failed: {error}")]
    Rpc {
        /// The request's method.
        method: String,
        /// The error as sent.
        error: RpcError,
    },
    /// A reply did not have the shape its method promises.
    #[error("{remote}: malformed reply to {method:?}: {reason}")]
    BadReply {
        /// The remote.
        remote: String,
        /// The request's method.
        method: String,
        /// What was wrong.
        reason: String,
    },
    /// No remote of the list was usable before the deadline.
    #[error("{remotes}: no usable database server ({last_reason})")]
    NoServer {
        /// The remotes tried, comma-separated.
        remotes: String,
        /// Why the last attempt was rejected.
        last_reason: String,
    },
    /// The deadline passed while waiting for `what`.
    #[error("timeout after {secs} seconds waiting for {what}")]
    Timeout {
        /// The configured timeout, in seconds.
        secs: u64,
        /// What was being waited for.
        what: String,
    },
    /// The remote is of a kind this path cannot open.
    #[error("{remote}: unsupported remote for the one-shot client")]
    Unsupported {
        /// The remote.
        remote: String,
    },
    /// An `ssl:` remote, but no key, certificate and CA certificate to speak TLS with.
    #[error("{remote}: an ssl: remote needs a private key, certificate and CA certificate")]
    TlsNotConfigured {
        /// The remote.
        remote: String,
    },
}

impl OneshotError {
    /// Whether another server (or the same one later) might succeed: the connection or
    /// the server's state was the problem, not the request.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            OneshotError::Io { .. }
                | OneshotError::Closed { .. }
                | OneshotError::Decode { .. }
                | OneshotError::NoServer { .. }
        )
    }
}

/// A TLS session over TCP (`ssl:`), blocking.
type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// Either socket kind ovsdb-server listens on, or TCP with TLS.
#[derive(Debug)]
enum Socket {
    Unix(UnixStream),
    Tcp(TcpStream),
    Tls(Box<TlsStream>),
}

impl Socket {
    /// Opens `remote`; `Ok(None)` for a passive remote, which a one-shot tool cannot use.
    fn open(
        remote: &Remote,
        timeout: Option<Duration>,
        tls: Option<&TlsConfig>,
    ) -> Result<Option<Socket>, OneshotError> {
        let name = remote.to_string();
        let io = |source| OneshotError::Io {
            remote: name.clone(),
            source,
        };
        match remote {
            Remote::Unix(path) => Ok(Some(Socket::Unix(UnixStream::connect(path).map_err(io)?))),
            Remote::Tcp { host, port } => Ok(Some(Socket::Tcp(
                tcp_connect(host, *port, timeout).map_err(io)?,
            ))),
            Remote::Ssl { host, port } => {
                let Some(tls) = tls else {
                    return Err(OneshotError::TlsNotConfigured { remote: name });
                };
                let tcp = tcp_connect(host, *port, timeout).map_err(io)?;
                let session = rustls::ClientConnection::new(tls.client_config(), server_name(host))
                    .map_err(|e| io(std::io::Error::other(e)))?;
                let mut stream = rustls::StreamOwned::new(session, tcp);
                // Handshake now, so a refused certificate is reported as such at connect.
                stream.sock.set_read_timeout(timeout).map_err(io)?;
                while stream.conn.is_handshaking() {
                    stream
                        .conn
                        .complete_io(&mut stream.sock)
                        .map_err(|e| io(tls.explain(&name, e)))?;
                }
                Ok(Some(Socket::Tls(Box::new(stream))))
            }
            _ => Ok(None),
        }
    }

    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Socket::Unix(s) => s.set_read_timeout(t),
            Socket::Tcp(s) => s.set_read_timeout(t),
            Socket::Tls(s) => s.sock.set_read_timeout(t),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Socket::Unix(s) => s.read(buf),
            Socket::Tcp(s) => s.read(buf),
            Socket::Tls(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Socket::Unix(s) => s.write_all(buf),
            Socket::Tcp(s) => s.write_all(buf),
            Socket::Tls(s) => {
                s.write_all(buf)?;
                s.flush()
            }
        }
    }
}

fn tcp_connect(host: &str, port: u16, timeout: Option<Duration>) -> std::io::Result<TcpStream> {
    let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))?
        .next()
        .ok_or_else(|| std::io::Error::other("host name resolves to no address"))?;
    let stream = match timeout {
        Some(t) => TcpStream::connect_timeout(&addr, t.max(Duration::from_millis(1)))?,
        None => TcpStream::connect(addr)?,
    };
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// One blocking connection to one ovsdb-server.
#[derive(Debug)]
pub struct OneshotConnection {
    remote: String,
    socket: Socket,
    deframer: Deframer,
    next_id: u64,
    deadline: Option<Deadline>,
}

/// A point in time after which calls fail with [`OneshotError::Timeout`].
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// When the time is up.
    pub at: Instant,
    /// The timeout as configured, for messages.
    pub secs: u64,
}

impl Deadline {
    /// `secs` from now.
    pub fn after_secs(secs: u64) -> Deadline {
        Deadline {
            at: Instant::now() + Duration::from_secs(secs),
            secs,
        }
    }

    fn remaining(&self, what: &str) -> Result<Duration, OneshotError> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(OneshotError::Timeout {
                secs: self.secs,
                what: what.to_owned(),
            });
        }
        Ok(left)
    }
}

impl OneshotConnection {
    /// Connects to `remote`; every later call fails once `deadline` has passed.
    pub fn connect(
        remote: &Remote,
        deadline: Option<Deadline>,
    ) -> Result<OneshotConnection, OneshotError> {
        Self::connect_with_tls(remote, deadline, None)
    }

    /// Like [`OneshotConnection::connect`]; an `ssl:` remote uses `tls`'s key,
    /// certificate and CA certificate (`ovn-nbctl -p -c -C`).
    pub fn connect_with_tls(
        remote: &Remote,
        deadline: Option<Deadline>,
        tls: Option<&TlsConfig>,
    ) -> Result<OneshotConnection, OneshotError> {
        let name = remote.to_string();
        let timeout = match &deadline {
            Some(d) => Some(d.remaining(&format!("a connection to {name}"))?),
            None => None,
        };
        let socket =
            Socket::open(remote, timeout, tls)?.ok_or_else(|| OneshotError::Unsupported {
                remote: name.clone(),
            })?;
        Ok(OneshotConnection {
            remote: name,
            socket,
            deframer: Deframer::new(MAX_MESSAGE),
            next_id: 0,
            deadline,
        })
    }

    /// The remote this connection goes to, as written in `--db`.
    pub fn remote(&self) -> &str {
        &self.remote
    }

    /// Sends `method(params)` (params must serialize to a JSON array) and waits for its
    /// reply, answering the server's `echo` probes meanwhile. Returns the raw `result`.
    pub fn call<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<Box<RawValue>, OneshotError> {
        self.next_id += 1;
        let id = self.next_id;
        let mut out = Vec::new();
        encode_request(&mut out, id, method, params);
        self.send(&out)?;
        loop {
            match self.receive(method)? {
                Message::Request {
                    id: echo_id,
                    method: m,
                    params,
                } if m == "echo" => {
                    let params: Value = serde_json::from_str(params.get()).unwrap_or(json!([]));
                    let reply = Message::reply(echo_id, &params);
                    self.send(&reply.to_vec())?;
                }
                Message::Reply { id: got, result } if got == json!(id) => return Ok(result),
                Message::Error { id: got, error } if got == json!(id) => {
                    return Err(OneshotError::Rpc {
                        method: method.to_owned(),
                        error,
                    })
                }
                // Notifications (no monitor outlives its first reply here) and stale
                // replies.
                _ => {}
            }
        }
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), OneshotError> {
        self.socket
            .write_all(bytes)
            .map_err(|source| OneshotError::Io {
                remote: self.remote.clone(),
                source,
            })
    }

    /// Reads until one whole message is buffered.
    fn receive(&mut self, method: &str) -> Result<Message, OneshotError> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let decoded = self
                .deframer
                .next_message()
                .map_err(|source| OneshotError::Decode {
                    remote: self.remote.clone(),
                    source,
                })?;
            if let Some(msg) = decoded {
                return Ok(msg);
            }
            let timeout = match &self.deadline {
                Some(d) => Some(d.remaining(&format!("the reply to {method}"))?),
                None => None,
            };
            let io = |source| OneshotError::Io {
                remote: self.remote.clone(),
                source,
            };
            self.socket.set_read_timeout(timeout).map_err(io)?;
            match self.socket.read(&mut buf) {
                Ok(0) => {
                    return Err(OneshotError::Closed {
                        remote: self.remote.clone(),
                        method: method.to_owned(),
                    })
                }
                Ok(n) => self.deframer.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if self.deadline.is_some() && is_timeout(&e) => {
                    // The loop's deadline check reports it.
                }
                Err(e) => return Err(io(e)),
            }
        }
    }

    /// `get_schema` of `database`: the schema, and its JSON as sent.
    pub fn get_schema(
        &mut self,
        database: &str,
    ) -> Result<(DatabaseSchema, Box<RawValue>), OneshotError> {
        let raw = self.call("get_schema", &[database])?;
        let schema =
            DatabaseSchema::from_json_str(raw.get()).map_err(|e| self.bad("get_schema", e))?;
        Ok((schema, raw))
    }

    /// `transact` on `database`: the array of operation results, as raw JSON.
    pub fn transact(
        &mut self,
        database: &str,
        operations: &[Value],
    ) -> Result<Vec<Value>, OneshotError> {
        let mut params = Vec::with_capacity(operations.len() + 1);
        params.push(json!(database));
        params.extend_from_slice(operations);
        let raw = self.call("transact", &params)?;
        serde_json::from_str(raw.get()).map_err(|e| self.bad("transact", e))
    }

    /// Checks, through `_Server.Database`, that this server may serve `database`
    /// (see the module docs); records in `seen` the cluster and Raft index of the server.
    pub fn check_server(
        &mut self,
        database: &str,
        leader_only: bool,
        seen: &mut Seen,
    ) -> Result<Result<(), String>, OneshotError> {
        let raw = self.call("monitor", &monitor_params())?;
        let updates: Value = serde_json::from_str(raw.get()).map_err(|e| self.bad("monitor", e))?;
        let mut watch = ServerWatch::default();
        watch
            .apply(&updates)
            .map_err(|reason| self.bad("monitor", reason))?;
        Ok(check_server(
            watch.row(database),
            database,
            leader_only,
            seen,
        ))
    }

    fn bad(&self, method: &str, reason: impl std::fmt::Display) -> OneshotError {
        OneshotError::BadReply {
            remote: self.remote.clone(),
            method: method.to_owned(),
            reason: reason.to_string(),
        }
    }
}

/// An I/O error as C's `strerror()` words it, without Rust's " (os error N)".
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error ") {
        Some(cut) => text[..cut].to_owned(),
        None => text,
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// How [`connect_cluster`] picks a server, and how it speaks to `ssl:` remotes.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// Accept only the leader of a clustered database (`--leader-only`, the C tools'
    /// default); `false` is `--no-leader-only`.
    pub leader_only: bool,
    /// Start at a random member of the list (`--shuffle-remotes`, the default).
    pub shuffle: bool,
    /// Give up at this point in time; `None` retries forever, as the C tools do
    /// without `--timeout`.
    pub deadline: Option<Deadline>,
    /// Key, certificate and CA certificate for `ssl:` remotes (`-p`, `-c`, `-C`).
    pub tls: Option<TlsConfig>,
}

/// First pause between two rounds over the whole list; doubled up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_millis(1000);

/// Connects to a usable server among `remotes` for `database`, cycling through the
/// list (with backoff between rounds) until one qualifies or the deadline passes.
/// `seen` carries the cluster and highest Raft index seen across calls of one run, so a
/// reconnect never lands on a server with older data.
pub fn connect_cluster(
    remotes: &[Remote],
    database: &str,
    options: &ClusterOptions,
    seen: &mut Seen,
) -> Result<OneshotConnection, OneshotError> {
    let list = remotes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let start = if options.shuffle && remotes.len() > 1 {
        rand::random_range(0..remotes.len())
    } else {
        0
    };
    let mut backoff = FIRST_BACKOFF;
    let mut last: Option<OneshotError> = None;
    loop {
        for k in 0..remotes.len() {
            let remote = &remotes[(start + k) % remotes.len()];
            match try_server(remote, database, options, seen) {
                Ok(conn) => return Ok(conn),
                Err(OneshotError::Timeout { secs, what }) => {
                    // Say why no server qualified rather than what was pending.
                    let what = match &last {
                        Some(last) => format!("a usable server among {list} (last: {last})"),
                        None => what,
                    };
                    return Err(OneshotError::Timeout { secs, what });
                }
                Err(e) if !e.is_transient() => return Err(e),
                Err(e) => {
                    tracing::debug!(%remote, error = %e, "server not usable");
                    last = Some(e);
                }
            }
        }
        match last.take() {
            None => {
                return Err(OneshotError::NoServer {
                    remotes: list,
                    last_reason: "empty remote list".into(),
                })
            }
            // A single server that refuses connections is not coming back within a
            // tool's run: report it at once, as the C tools do for a bad socket.
            Some(e @ OneshotError::Io { .. }) if remotes.len() == 1 => return Err(e),
            Some(e) => last = Some(e),
        }
        if let Some(d) = &options.deadline {
            backoff = backoff.min(d.at.saturating_duration_since(Instant::now()));
        }
        std::thread::sleep(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn try_server(
    remote: &Remote,
    database: &str,
    options: &ClusterOptions,
    seen: &mut Seen,
) -> Result<OneshotConnection, OneshotError> {
    let mut conn =
        OneshotConnection::connect_with_tls(remote, options.deadline, options.tls.as_ref())?;
    match conn.check_server(database, options.leader_only, seen)? {
        Ok(()) => Ok(conn),
        Err(last_reason) => Err(OneshotError::NoServer {
            remotes: remote.to_string(),
            last_reason,
        }),
    }
}
