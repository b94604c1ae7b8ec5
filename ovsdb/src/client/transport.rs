//! Opening connections for every kind of [`Remote`]: connecting (`unix:`, `tcp:`,
//! `ssl:`) or accepting on a listener kept across reconnections (`punix:`, `ptcp:`,
//! `pssl:`), and the reading and writing sides of the resulting byte stream.

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::FileTypeExt;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio_rustls::{TlsAcceptor, TlsConnector, TlsStream};

use super::plain::{self, PlainStream, PlainWriter, Socket};
use super::remote::Remote;
use super::tls::{self, TlsConfig, TlsError};

/// Opens connections; owned by the connection task, so that a passive remote's
/// listener stays bound (and queues a server's connection) between attempts.
#[derive(Debug)]
pub(crate) struct Connector {
    tls: Option<TlsConfig>,
    listeners: HashMap<Remote, Listener>,
}

#[derive(Debug)]
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Connector {
    pub fn new(tls: Option<TlsConfig>) -> Self {
        Connector {
            tls,
            listeners: HashMap::new(),
        }
    }

    /// Connects to `remote`, or waits for the server to connect to it; returns the
    /// reading and the writing side of the connection.
    pub async fn open(&mut self, remote: &Remote) -> io::Result<(Stream, StreamWriter)> {
        let name = remote.to_string();
        match remote {
            Remote::Unix(path) => plain(Socket::Unix(UnixStream::connect(path).await?.into_std()?)),
            Remote::Tcp { host, port } => plain(Socket::Tcp(tcp_connect(host, *port).await?)),
            Remote::Punix(_) | Remote::Ptcp { .. } => plain(self.accept(remote).await?),
            Remote::Ssl { host, port } => {
                let config = self.tls_for(remote)?;
                let tcp = TcpStream::from_std(tcp_connect(host, *port).await?)?;
                let connector = TlsConnector::from(config.client_config());
                let stream = connector
                    .connect(tls::server_name(host), tcp)
                    .await
                    .map_err(|e| config.explain(&name, e))?;
                Ok(secure(TlsStream::Client(stream), config, name))
            }
            Remote::Pssl { .. } => {
                let config = self.tls_for(remote)?;
                let Socket::Tcp(tcp) = self.accept(remote).await? else {
                    unreachable!("a TCP listener accepts TCP connections");
                };
                let acceptor = TlsAcceptor::from(config.server_config());
                let stream = acceptor
                    .accept(TcpStream::from_std(tcp)?)
                    .await
                    .map_err(|e| config.explain(&name, e))?;
                Ok(secure(TlsStream::Server(stream), config, name))
            }
        }
    }

    fn tls_for(&self, remote: &Remote) -> io::Result<TlsConfig> {
        self.tls.clone().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                TlsError::NotConfigured {
                    remote: remote.to_string(),
                },
            )
        })
    }

    /// Accepts one connection on `remote`'s listener, binding it on first use.
    async fn accept(&mut self, remote: &Remote) -> io::Result<Socket> {
        if !self.listeners.contains_key(remote) {
            let listener = bind(remote).await?;
            self.listeners.insert(remote.clone(), listener);
        }
        let socket = match &self.listeners[remote] {
            Listener::Tcp(listener) => {
                let (stream, _) = listener.accept().await?;
                stream.set_nodelay(true)?;
                Socket::Tcp(stream.into_std()?)
            }
            Listener::Unix(listener) => Socket::Unix(listener.accept().await?.0.into_std()?),
        };
        Ok(socket)
    }
}

async fn bind(remote: &Remote) -> io::Result<Listener> {
    match remote {
        Remote::Ptcp { port, host } | Remote::Pssl { port, host } => Ok(Listener::Tcp(
            TcpListener::bind((host.as_str(), *port)).await?,
        )),
        Remote::Punix(path) => {
            // A socket left by an earlier listener would make bind fail; as OVS does,
            // replace it (but never a file of another kind).
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
                std::fs::remove_file(path)?;
            }
            Ok(Listener::Unix(UnixListener::bind(path)?))
        }
        _ => unreachable!("only passive remotes are bound"),
    }
}

async fn tcp_connect(host: &str, port: u16) -> io::Result<std::net::TcpStream> {
    let stream = TcpStream::connect((host, port)).await?;
    // Requests are small and latency-bound.
    stream.set_nodelay(true)?;
    stream.into_std()
}

fn plain(socket: Socket) -> io::Result<(Stream, StreamWriter)> {
    let (read, write) = plain::split(socket)?;
    Ok((Stream::Plain(read), StreamWriter::Plain(write)))
}

fn secure(
    stream: TlsStream<TcpStream>,
    config: TlsConfig,
    remote: String,
) -> (Stream, StreamWriter) {
    let (read, write) = tokio::io::split(stream);
    (
        Stream::Tls {
            read,
            config: config.clone(),
            remote: remote.clone(),
        },
        StreamWriter::Tls {
            write,
            unflushed: false,
            config,
            remote,
        },
    )
}

/// The reading side of a connection.
#[derive(Debug)]
pub(crate) enum Stream {
    Plain(PlainStream),
    Tls {
        read: ReadHalf<TlsStream<TcpStream>>,
        /// For explaining errors.
        config: TlsConfig,
        remote: String,
    },
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(read) => Pin::new(read).poll_read(cx, buf),
            // With TLS 1.3 a server refuses our certificate after our side of the
            // handshake is done: its alert arrives as the first read's error.
            Stream::Tls {
                read,
                config,
                remote,
            } => Pin::new(read)
                .poll_read(cx, buf)
                .map_err(|e| config.explain(remote, e)),
        }
    }
}

/// The writing side of a connection.
#[derive(Debug)]
pub(crate) enum StreamWriter {
    Plain(PlainWriter),
    Tls {
        write: WriteHalf<TlsStream<TcpStream>>,
        /// Bytes were handed to rustls since the last completed flush: some records
        /// may still wait in its buffer for the socket.
        unflushed: bool,
        config: TlsConfig,
        remote: String,
    },
}

impl StreamWriter {
    /// See [`PlainWriter::keep_awake`]; TLS streams are registered with the reactor
    /// by tokio, for both directions, so there is nothing to turn on or off.
    pub fn keep_awake(&mut self, on: bool, writing: bool) {
        if let StreamWriter::Plain(write) = self {
            write.keep_awake(on, writing);
        }
    }

    /// Writes some of `buf`, waiting for room if the socket is full. With TLS the bytes
    /// may stay in rustls's buffer: [`StreamWriter::poll_flush`] sends them.
    pub fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self {
            StreamWriter::Plain(write) => write.poll_write(cx, buf),
            StreamWriter::Tls {
                write,
                unflushed,
                config,
                remote,
            } => {
                let n = ready!(Pin::new(write).poll_write(cx, buf))
                    .map_err(|e| config.explain(remote, e))?;
                *unflushed = true;
                Poll::Ready(Ok(n))
            }
        }
    }

    /// Sends whatever [`StreamWriter::poll_write`] left buffered (nothing, for plain
    /// streams).
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let StreamWriter::Tls {
            write,
            unflushed: unflushed @ true,
            config,
            remote,
        } = self
        {
            ready!(Pin::new(write).poll_flush(cx)).map_err(|e| config.explain(remote, e))?;
            *unflushed = false;
        }
        Poll::Ready(Ok(()))
    }

    /// Whether bytes accepted by [`StreamWriter::poll_write`] may not have reached the
    /// socket yet.
    pub fn is_flushed(&self) -> bool {
        !matches!(
            self,
            StreamWriter::Tls {
                unflushed: true,
                ..
            }
        )
    }
}
