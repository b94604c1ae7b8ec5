//! Probes from inside a pod: a one-thread tokio runtime on a thread that entered the
//! pod's network namespace, so every socket its tasks open is the pod's (a socket stays
//! in the namespace of the thread that opened it). Traffic goes from the pod's `eth0`
//! through its node's OVS and OVN, as the pod's own would.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpStream, UdpSocket};
use tokio::runtime::Handle;
use tokio::task::JoinSet;
use tokio::time::{interval, timeout, Instant, MissedTickBehavior};

/// A runtime whose tasks run inside one network namespace.
pub struct Prober {
    handle: Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Prober {
    pub fn start(netns: &Path) -> anyhow::Result<Prober> {
        let path = netns.to_path_buf();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = std::fs::File::open(&path)
                .and_then(|f| {
                    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
                        .map_err(std::io::Error::from)
                })
                .and_then(|()| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                });
            match runtime {
                Ok(runtime) => {
                    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
                    let _ = ready_tx.send(Ok((runtime.handle().clone(), stop_tx)));
                    let _ = runtime.block_on(stop_rx);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            }
        });
        let (handle, stop) = ready_rx
            .recv()
            .context("the prober thread died")?
            .with_context(|| format!("entering {}", netns.display()))?;
        Ok(Prober {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The runtime's handle: what it spawns runs inside the namespace.
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Runs `work` inside the namespace.
    pub fn spawn<F>(&self, work: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.handle.spawn(work)
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What answered one TCP connection to `addr` within `limit` (connect and read).
pub async fn tcp_answer(addr: SocketAddr, limit: Duration) -> Option<String> {
    let ran = timeout(limit, async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.ok()?;
        Some(answer)
    })
    .await;
    ran.ok().flatten().filter(|a| !a.is_empty())
}

/// How a first-answer probe goes at its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// One datagram every tick on one socket; the first reply with the name wins.
    Udp,
    /// A new connection every tick (earlier ones keep waiting up to their timeout);
    /// the first that reads the name wins.
    Tcp,
}

/// When `name` first answered at `ip:80`, probed every `every` until `deadline`.
pub async fn first_answer(
    protocol: Protocol,
    ip: IpAddr,
    name: String,
    every: Duration,
    deadline: Instant,
) -> Option<Instant> {
    match protocol {
        Protocol::Udp => udp_first_answer(ip, &name, every, deadline).await,
        Protocol::Tcp => tcp_first_answer(ip, &name, every, deadline).await,
    }
}

async fn udp_first_answer(
    ip: IpAddr,
    name: &str,
    every: Duration,
    deadline: Instant,
) -> Option<Instant> {
    let target = SocketAddr::new(ip, 80);
    let mut tick = interval(every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut socket = None;
    let mut failed = false;
    let mut buf = [0u8; 512];
    loop {
        tokio::select! {
            at = tick.tick() => {
                if at > deadline {
                    return None;
                }
                if socket.is_none() {
                    // a failed bind or connect (no route yet) is tried again next tick
                    match connected_udp(target).await {
                        Ok(s) => socket = Some(s),
                        Err(e) if !failed => {
                            failed = true;
                            eprintln!("probe to {target}: {e} (trying again)");
                        }
                        Err(_) => {}
                    }
                }
                if let Some(socket) = &socket {
                    // a refused or unreachable send (ICMP from a half-made pod) is retried
                    let _ = socket.send(b"probe").await;
                }
            }
            got = recv(socket.as_ref(), &mut buf) => {
                if let Ok(n) = got {
                    if &buf[..n] == name.as_bytes() {
                        return Some(Instant::now());
                    }
                }
            }
        }
    }
}

async fn connected_udp(target: SocketAddr) -> std::io::Result<UdpSocket> {
    let socket = UdpSocket::bind(SocketAddr::new([0, 0, 0, 0].into(), 0)).await?;
    socket.connect(target).await?;
    Ok(socket)
}

async fn recv(socket: Option<&UdpSocket>, buf: &mut [u8]) -> std::io::Result<usize> {
    match socket {
        Some(socket) => socket.recv(buf).await,
        None => std::future::pending().await,
    }
}

/// A TCP attempt's timeout in [`tcp_first_answer`].
const TCP_ATTEMPT: Duration = Duration::from_millis(500);

async fn tcp_first_answer(
    ip: IpAddr,
    name: &str,
    every: Duration,
    deadline: Instant,
) -> Option<Instant> {
    let addr = SocketAddr::new(ip, 80);
    let mut attempts = JoinSet::new();
    let mut tick = interval(every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            at = tick.tick() => {
                if at > deadline {
                    return None;
                }
                attempts.spawn(async move {
                    tcp_answer(addr, TCP_ATTEMPT).await.map(|a| (a, Instant::now()))
                });
            }
            Some(Ok(Some((answer, at)))) = attempts.join_next(), if !attempts.is_empty() => {
                if answer == name {
                    return Some(at);
                }
            }
        }
    }
}

/// Outcomes of a continuous TCP probe: (when the attempt started, whether `name`
/// answered), in completion order.
pub type Outcomes = Arc<Mutex<Vec<(Instant, bool)>>>;

/// Probes `ip:80` with a new TCP connection every `every` (each waiting up to `limit`)
/// and records each outcome, until the task is aborted.
pub async fn tcp_stream(ip: IpAddr, name: String, every: Duration, limit: Duration, out: Outcomes) {
    let addr = SocketAddr::new(ip, 80);
    let name: Arc<str> = Arc::from(name);
    let mut attempts = JoinSet::new();
    let mut tick = interval(every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            at = tick.tick() => {
                let (name, out) = (name.clone(), out.clone());
                attempts.spawn(async move {
                    let ok = tcp_answer(addr, limit).await.as_deref() == Some(&*name);
                    out.lock().unwrap_or_else(|p| p.into_inner()).push((at, ok));
                });
            }
            // reap finished attempts so the set does not grow
            Some(_) = attempts.join_next(), if !attempts.is_empty() => {}
        }
    }
}

/// The start of the first attempt at or after `after` that saw `want` and was followed
/// by `confirm - 1` more attempts that saw it too (in start order), looking only at
/// attempts started before `complete_before` (all of which have finished).
pub fn flip(
    outcomes: &[(Instant, bool)],
    after: Instant,
    want: bool,
    confirm: usize,
    complete_before: Instant,
) -> Option<Instant> {
    let mut seen: Vec<(Instant, bool)> = outcomes
        .iter()
        .copied()
        .filter(|(at, _)| *at >= after && *at < complete_before)
        .collect();
    seen.sort_by_key(|(at, _)| *at);
    seen.windows(confirm.max(1))
        .find(|w| w.iter().all(|(_, ok)| *ok == want))
        .map(|w| w[0].0)
}
