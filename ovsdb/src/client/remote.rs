//! Remotes in ovsdb-server's notation (`unix:PATH`, `tcp:HOST:PORT`) and connecting to
//! them.

use std::fmt;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

/// Where an ovsdb-server listens (active remotes only; `ssl:` is not supported).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Remote {
    /// `unix:/path/to/socket`.
    Unix(String),
    /// `tcp:HOST:PORT`; IPv6 hosts are written in brackets, `tcp:[::1]:6641`.
    Tcp {
        /// Host name or address.
        host: String,
        /// TCP port.
        port: u16,
    },
}

/// A remote string that is not `unix:PATH` or `tcp:HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid ovsdb remote {remote:?}: {reason}")]
pub struct InvalidRemote {
    /// The offending remote string.
    pub remote: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FromStr for Remote {
    type Err = InvalidRemote;

    fn from_str(s: &str) -> Result<Self, InvalidRemote> {
        let invalid = |reason| InvalidRemote {
            remote: s.to_owned(),
            reason,
        };
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(invalid("empty socket path"));
            }
            return Ok(Remote::Unix(path.to_owned()));
        }
        let Some(rest) = s.strip_prefix("tcp:") else {
            return Err(invalid("expected a unix:PATH or tcp:HOST:PORT remote"));
        };
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| invalid("missing :PORT"))?;
        let port = port
            .parse::<u16>()
            .map_err(|_| invalid("port is not a number in 1..=65535"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || port == 0 {
            return Err(invalid("empty host or port 0"));
        }
        Ok(Remote::Tcp {
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remote::Unix(path) => write!(f, "unix:{path}"),
            Remote::Tcp { host, port } if host.contains(':') => write!(f, "tcp:[{host}]:{port}"),
            Remote::Tcp { host, port } => write!(f, "tcp:{host}:{port}"),
        }
    }
}

impl Remote {
    /// Parses a comma-separated list, as `ovn-nbctl --db=` accepts.
    pub fn parse_list(list: &str) -> Result<Vec<Remote>, InvalidRemote> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::parse)
            .collect()
    }

    /// Whether ovsdb-server sends inactivity probes on this kind of stream (it does on
    /// TCP, not on unix sockets).
    pub fn server_probes(&self) -> bool {
        matches!(self, Remote::Tcp { .. })
    }

    pub(crate) async fn connect(&self) -> std::io::Result<Stream> {
        match self {
            Remote::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path).await?)),
            Remote::Tcp { host, port } => {
                let stream = TcpStream::connect((host.as_str(), *port)).await?;
                // Requests are small and latency-bound.
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }
        }
    }
}

/// A connected unix or TCP stream.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
