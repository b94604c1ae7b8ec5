//! A bounded TCP transfer between two network namespaces, to check a rate limit: a
//! receiver thread in one namespace, a sender thread in the other, a fixed byte count,
//! throughput = bytes / time at the receiver (first byte to end of stream). A
//! functional check of a limit, not a benchmark.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::process::HarnessError;

/// What one transfer measured.
#[derive(Debug, Clone, Copy)]
pub struct Throughput {
    /// Bytes received.
    pub bytes: u64,
    /// First byte to end of stream at the receiver.
    pub elapsed: Duration,
}

impl Throughput {
    /// Mbit/s (10^6 bit/s).
    pub fn mbit_per_s(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.elapsed.as_secs_f64().max(1e-9) / 1e6
    }
}

fn netns_path(ns: &str) -> PathBuf {
    Path::new("/var/run/netns").join(ns)
}

/// Moves the calling thread (only) into namespace `ns`.
fn enter(ns: &str) -> std::io::Result<()> {
    let file = std::fs::File::open(netns_path(ns))?;
    nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
}

fn io_err(what: &str) -> impl Fn(std::io::Error) -> HarnessError + '_ {
    move |source| HarnessError::Io {
        path: PathBuf::from(what),
        source,
    }
}

/// Sends `bytes` from namespace `from` to `to_addr` (listened on in namespace `to`),
/// within `timeout`. Each side runs on its own thread, which alone enters its namespace.
pub fn measure(
    from: &str,
    to: &str,
    to_addr: SocketAddr,
    bytes: u64,
    timeout: Duration,
) -> Result<Throughput, HarnessError> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let to_ns = to.to_string();
    let receiver = std::thread::spawn(move || -> std::io::Result<Throughput> {
        enter(&to_ns)?;
        let listener = TcpListener::bind(to_addr)?;
        let _ = ready_tx.send(());
        let (mut stream, _) = listener.accept()?;
        stream.set_read_timeout(Some(timeout))?;
        let mut buf = vec![0u8; 64 * 1024];
        let mut received = 0u64;
        let mut start = None;
        loop {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                break;
            }
            start.get_or_insert_with(Instant::now);
            received += n as u64;
        }
        Ok(Throughput {
            bytes: received,
            elapsed: start.map(|s| s.elapsed()).unwrap_or_default(),
        })
    });
    ready_rx
        .recv_timeout(timeout)
        .map_err(|_| HarnessError::Unexpected(format!("receiver in {to} never listened")))?;
    let from_ns = from.to_string();
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        enter(&from_ns)?;
        let mut stream = TcpStream::connect_timeout(&to_addr, timeout)?;
        stream.set_write_timeout(Some(timeout))?;
        let chunk = vec![0x5au8; 64 * 1024];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            stream.write_all(&chunk[..n])?;
            left -= n as u64;
        }
        stream.shutdown(std::net::Shutdown::Write)
    });
    let sent = sender
        .join()
        .map_err(|_| HarnessError::Unexpected("sender panicked".into()))?;
    sent.map_err(io_err("sender"))?;
    let got = receiver
        .join()
        .map_err(|_| HarnessError::Unexpected("receiver panicked".into()))?
        .map_err(io_err("receiver"))?;
    if got.bytes != bytes {
        return Err(HarnessError::Unexpected(format!(
            "received {} of {bytes} bytes",
            got.bytes
        )));
    }
    Ok(got)
}
