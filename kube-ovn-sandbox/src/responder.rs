//! The pod's "container": on each declared TCP and UDP container port,
//! inside the pod's network namespace, answers every TCP connection and
//! every UDP datagram with the pod's name (as agnhost's serve-hostname
//! does), so a prober can tell who answered. Its log is the pod's log.

use super::netns::{run_in, NetnsError};
use super::policy_eval::Protocol;
use bytes::Bytes;
use std::net::{Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

/// A pod's log: every line so far plus a feed of new ones.
#[derive(Debug, Clone)]
pub struct PodLog {
    lines: Arc<Mutex<Vec<String>>>,
    feed: broadcast::Sender<Bytes>,
}

impl Default for PodLog {
    fn default() -> Self {
        PodLog {
            lines: Arc::default(),
            feed: broadcast::channel(256).0,
        }
    }
}

impl PodLog {
    /// Appends a line (a newline is added).
    pub fn push(&self, line: impl Into<String>) {
        let line = format!("{}\n", line.into());
        self.lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line.clone());
        let _ = self.feed.send(Bytes::from(line));
    }

    /// The last `tail` lines (all with `None`), and a feed of what follows.
    pub fn read(&self, tail: Option<usize>) -> (String, broadcast::Receiver<Bytes>) {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let start = lines.len() - tail.unwrap_or(lines.len()).min(lines.len());
        (lines[start..].concat(), self.feed.subscribe())
    }
}

/// Running listeners of one pod; dropping it does not stop them: `stop` does.
#[derive(Debug)]
pub struct Responder {
    tasks: Vec<JoinHandle<()>>,
    stopped: bool,
}

/// A port to serve.
pub type ServedPort = (u16, Protocol);

impl Responder {
    /// Binds every port inside the namespace at `netns` (dual-stack
    /// wildcard), then serves them on the current runtime.
    pub async fn start(
        netns: &Path,
        name: &str,
        ports: &[ServedPort],
        log: PodLog,
    ) -> Result<Responder, NetnsError> {
        let wanted: Vec<ServedPort> = ports.to_vec();
        let bound = run_in(Some(netns), move || bind_all(&wanted)).await?;
        let sockets = bound.map_err(|source| NetnsError::Enter {
            path: netns.to_path_buf(),
            source,
        })?;
        let name: Arc<str> = Arc::from(name);
        let mut tasks = Vec::new();
        for socket in sockets {
            let (name, log) = (name.clone(), log.clone());
            let task = match socket {
                Bound::Tcp(l) => tokio::spawn(serve_tcp(l, name, log)),
                Bound::Udp(s) => tokio::spawn(serve_udp(s, name, log)),
            };
            tasks.push(task);
        }
        log.push(format!("serving {} on {ports:?}", &*name));
        Ok(Responder {
            tasks,
            stopped: false,
        })
    }

    /// Whether every listener still runs.
    pub fn is_running(&self) -> bool {
        !self.stopped && self.tasks.iter().all(|t| !t.is_finished())
    }

    /// Stops every listener (their sockets close).
    pub fn stop(&mut self) {
        self.stopped = true;
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop();
    }
}

enum Bound {
    Tcp(std::net::TcpListener),
    Udp(std::net::UdpSocket),
}

fn bind_all(ports: &[ServedPort]) -> std::io::Result<Vec<Bound>> {
    let mut out = Vec::new();
    for &(port, protocol) in ports {
        // `[::]` takes IPv4 too (bindv6only is 0 by default).
        let addr = SocketAddr::from((Ipv6Addr::UNSPECIFIED, port));
        let bound = match protocol {
            Protocol::Tcp => Bound::Tcp(std::net::TcpListener::bind(addr)?),
            Protocol::Udp => Bound::Udp(std::net::UdpSocket::bind(addr)?),
            Protocol::Sctp => continue, // no SCTP responder: nothing to answer with
        };
        match &bound {
            Bound::Tcp(l) => l.set_nonblocking(true)?,
            Bound::Udp(s) => s.set_nonblocking(true)?,
        }
        out.push(bound);
    }
    Ok(out)
}

/// A peer as a person reads it: IPv4 peers of the dual-stack socket
/// without their `::ffff:` mapping.
fn shown(peer: SocketAddr) -> SocketAddr {
    SocketAddr::new(peer.ip().to_canonical(), peer.port())
}

async fn serve_tcp(listener: std::net::TcpListener, name: Arc<str>, log: PodLog) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    while let Ok((mut stream, peer)) = listener.accept().await {
        log.push(format!("tcp/{port} from {}", shown(peer)));
        let name = name.clone();
        tokio::spawn(async move {
            let _ = stream.write_all(name.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

async fn serve_udp(socket: std::net::UdpSocket, name: Arc<str>, log: PodLog) {
    let Ok(socket) = tokio::net::UdpSocket::from_std(socket) else {
        return;
    };
    let port = socket.local_addr().map(|a| a.port()).unwrap_or_default();
    let mut buf = [0u8; 512];
    while let Ok((_, peer)) = socket.recv_from(&mut buf).await {
        log.push(format!("udp/{port} from {}", shown(peer)));
        let _ = socket.send_to(name.as_bytes(), peer).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_tail_and_follow() {
        let log = PodLog::default();
        for line in ["one", "two", "three"] {
            log.push(line);
        }
        let (all, _) = log.read(None);
        assert_eq!(all, "one\ntwo\nthree\n");
        let (tail, mut feed) = log.read(Some(2));
        assert_eq!(tail, "two\nthree\n");
        assert_eq!(
            log.read(Some(10)).0,
            all,
            "a tail longer than the log is the log"
        );
        log.push("four");
        assert_eq!(feed.try_recv().unwrap(), Bytes::from("four\n"));
    }
}
