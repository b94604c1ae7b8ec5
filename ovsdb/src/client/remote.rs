//! Remotes in ovsdb-server's notation: active `unix:PATH`, `tcp:HOST:PORT`,
//! `ssl:HOST:PORT`, and passive `punix:PATH`, `ptcp:PORT[:IP]`, `pssl:PORT[:IP]`, where
//! the client listens and the server connects to it (ovsdb-server's own active
//! `--remote=tcp:`/`ssl:`/`unix:`).

use std::fmt;
use std::str::FromStr;

/// The port OVSDB uses when a passive remote names none (`ptcp:`, `pssl:`), as in OVS.
pub const DEFAULT_PORT: u16 = 6640;

/// Where to find an ovsdb-server, or where to wait for one to connect.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
    /// `ssl:HOST:PORT`: TCP with TLS, mutually authenticated with the key, certificate
    /// and CA certificate of [`crate::client::ClientOptions::with_tls`].
    Ssl {
        /// Host name or address.
        host: String,
        /// TCP port.
        port: u16,
    },
    /// `punix:/path/to/socket`: listen there; the server connects with `unix:PATH`.
    Punix(String),
    /// `ptcp:PORT[:IP]`: listen on TCP (on all IPv4 addresses when no IP is given);
    /// the server connects with `--remote=tcp:IP:PORT`.
    Ptcp {
        /// TCP port to listen on.
        port: u16,
        /// Address to listen on.
        host: String,
    },
    /// `pssl:PORT[:IP]`: listen on TCP and act as the TLS server; the server connects
    /// with `--remote=ssl:IP:PORT`.
    Pssl {
        /// TCP port to listen on.
        port: u16,
        /// Address to listen on.
        host: String,
    },
}

/// A remote string that ovsdb-server's notation does not allow.
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
        let (kind, rest) = s.split_once(':').ok_or_else(|| {
            invalid("expected unix:PATH, tcp:HOST:PORT, ssl:HOST:PORT, punix:PATH, ptcp:PORT[:IP] or pssl:PORT[:IP]")
        })?;
        match kind {
            "unix" | "punix" if rest.is_empty() => Err(invalid("empty socket path")),
            "unix" => Ok(Remote::Unix(rest.to_owned())),
            "punix" => Ok(Remote::Punix(rest.to_owned())),
            "tcp" | "ssl" => {
                let (host, port) = parse_active(rest).map_err(invalid)?;
                Ok(if kind == "tcp" {
                    Remote::Tcp { host, port }
                } else {
                    Remote::Ssl { host, port }
                })
            }
            "ptcp" | "pssl" => {
                let (port, host) = parse_passive(rest).map_err(invalid)?;
                Ok(if kind == "ptcp" {
                    Remote::Ptcp { port, host }
                } else {
                    Remote::Pssl { port, host }
                })
            }
            _ => Err(invalid(
                "unknown kind: expected unix, tcp, ssl, punix, ptcp or pssl",
            )),
        }
    }
}

/// `HOST:PORT`, the host possibly in brackets.
fn parse_active(rest: &str) -> Result<(String, u16), &'static str> {
    let (host, port) = rest.rsplit_once(':').ok_or("missing :PORT")?;
    let port = port
        .parse::<u16>()
        .map_err(|_| "port is not a number in 1..=65535")?;
    let host = unbracket(host);
    if host.is_empty() || port == 0 {
        return Err("empty host or port 0");
    }
    Ok((host.to_owned(), port))
}

/// `[PORT][:IP]`, the IP possibly in brackets; OVS's defaults are port 6640 on 0.0.0.0.
fn parse_passive(rest: &str) -> Result<(u16, String), &'static str> {
    let (port, host) = match rest.split_once(':') {
        Some((port, host)) => (port, unbracket(host)),
        None => (rest, ""),
    };
    let port = if port.is_empty() {
        DEFAULT_PORT
    } else {
        port.parse::<u16>()
            .map_err(|_| "port is not a number in 1..=65535")?
    };
    if port == 0 {
        // ovsdb-server accepts an ephemeral port for its own listeners, but it
        // could not be told where to connect to ours.
        return Err("port 0: the server could not know where to connect");
    }
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    Ok((port, host.to_owned()))
}

fn unbracket(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// `host` as it appears in a remote: IPv6 addresses in brackets.
struct HostPart<'a>(&'a str);

impl fmt::Display for HostPart<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.contains(':') {
            write!(f, "[{}]", self.0)
        } else {
            f.write_str(self.0)
        }
    }
}

impl fmt::Display for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remote::Unix(path) => write!(f, "unix:{path}"),
            Remote::Punix(path) => write!(f, "punix:{path}"),
            Remote::Tcp { host, port } => write!(f, "tcp:{}:{port}", HostPart(host)),
            Remote::Ssl { host, port } => write!(f, "ssl:{}:{port}", HostPart(host)),
            Remote::Ptcp { port, host } => write!(f, "ptcp:{port}:{}", HostPart(host)),
            Remote::Pssl { port, host } => write!(f, "pssl:{port}:{}", HostPart(host)),
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
    /// TCP and TLS, whichever side connected, not on unix sockets).
    pub fn server_probes(&self) -> bool {
        !matches!(self, Remote::Unix(_) | Remote::Punix(_))
    }

    /// Whether the client listens and the server connects (`punix:`, `ptcp:`, `pssl:`).
    pub fn is_passive(&self) -> bool {
        matches!(
            self,
            Remote::Punix(_) | Remote::Ptcp { .. } | Remote::Pssl { .. }
        )
    }

    /// Whether the connection uses TLS (`ssl:`, `pssl:`).
    pub fn is_tls(&self) -> bool {
        matches!(self, Remote::Ssl { .. } | Remote::Pssl { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_and_prints_back() {
        for text in [
            "unix:/run/ovn/ovnnb_db.sock",
            "tcp:127.0.0.1:6641",
            "tcp:[::1]:6641",
            "ssl:10.0.0.5:6641",
            "ssl:[fd00::5]:6642",
            "punix:/tmp/ovsdb.sock",
            "ptcp:6641:127.0.0.1",
            "pssl:6641:[::1]",
        ] {
            let remote: Remote = text.parse().unwrap();
            assert_eq!(remote.to_string(), text);
        }
    }

    #[test]
    fn passive_remotes_take_ovs_defaults() {
        assert_eq!(
            "pssl:".parse::<Remote>().unwrap(),
            Remote::Pssl {
                port: DEFAULT_PORT,
                host: "0.0.0.0".into()
            }
        );
        assert_eq!(
            "ptcp:6643".parse::<Remote>().unwrap(),
            Remote::Ptcp {
                port: 6643,
                host: "0.0.0.0".into()
            }
        );
    }

    #[test]
    fn bad_remotes_name_the_offender() {
        for (text, reason) in [
            ("ssl:10.0.0.5", "missing :PORT"),
            ("ssl:10.0.0.5:0", "empty host or port 0"),
            (
                "pssl:0:127.0.0.1",
                "port 0: the server could not know where to connect",
            ),
            ("ptcp:x", "port is not a number in 1..=65535"),
            ("punix:", "empty socket path"),
            (
                "tls:1.2.3.4:5",
                "unknown kind: expected unix, tcp, ssl, punix, ptcp or pssl",
            ),
        ] {
            let err = text.parse::<Remote>().unwrap_err();
            assert_eq!(
                err,
                InvalidRemote {
                    remote: text.into(),
                    reason
                }
            );
        }
    }
}
