//! The plain (unencrypted) byte stream of a unix or TCP connection, read and written
//! through the reactor directly.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, Interest, ReadBuf};

/// A connected std socket (non-blocking), unix or TCP.
#[derive(Debug)]
pub(crate) enum Socket {
    Unix(std::os::unix::net::UnixStream),
    Tcp(std::net::TcpStream),
}

impl Socket {
    fn try_clone(&self) -> io::Result<Socket> {
        Ok(match self {
            Socket::Unix(s) => Socket::Unix(s.try_clone()?),
            Socket::Tcp(s) => Socket::Tcp(s.try_clone()?),
        })
    }

    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => (&*s).read(buf),
            Socket::Tcp(s) => (&*s).read(buf),
        }
    }

    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Unix(s) => (&*s).write(buf),
            Socket::Tcp(s) => (&*s).write(buf),
        }
    }
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Socket::Unix(s) => s.as_raw_fd(),
            Socket::Tcp(s) => s.as_raw_fd(),
        }
    }
}

/// Smallest and largest slice offered to one `read`.
const READ_MIN: usize = 4 * 1024;
const READ_MAX: usize = 256 * 1024;

/// The reading side of a connection, registered with the reactor for **readability
/// only**.
///
/// tokio's own streams register both directions, edge-triggered. Then each time the
/// server reads one of our requests, the send-buffer space it frees raises a writable
/// edge that wakes the reactor though no task waits for it. Here requests are written
/// through a second handle on the same socket ([`PlainWriter`]), registered for
/// writability only while a write would block or while that wake-up is wanted (see
/// [`PlainWriter::keep_awake`]).
#[derive(Debug)]
pub(crate) struct PlainStream {
    read: AsyncFd<Socket>,
    /// How much to offer the next `read`: grows while reads fill it, shrinks when not.
    read_hint: usize,
    /// Where `read` puts the bytes before they are copied to the caller's buffer. The
    /// caller's buffer is uninitialised memory, which safe code must zero before a
    /// `read` may fill it: at least 4 KiB per read for a reply of ~100 bytes, on the
    /// critical path of every round trip. This buffer is zeroed once, as it grows; it
    /// keeps its largest size (at most `READ_MAX`) for the connection's life.
    scratch: Vec<u8>,
}

/// The writing side of a connection (a `dup` of the socket).
#[derive(Debug)]
pub(crate) struct PlainWriter {
    write: Socket,
    /// The write handle's registration: present while a write is blocked, and kept
    /// while [`PlainWriter::keep_awake`] is on.
    write_wait: Option<AsyncFd<Socket>>,
    keep_awake: bool,
}

/// Splits a connected socket into its reading side (registered for readability) and
/// its writing side (a `dup`, registered only when needed).
pub(crate) fn split(socket: Socket) -> io::Result<(PlainStream, PlainWriter)> {
    let write = socket.try_clone()?;
    Ok((
        PlainStream {
            read: register(socket, Interest::READABLE)?,
            read_hint: READ_MIN,
            scratch: Vec::new(),
        },
        PlainWriter {
            write,
            write_wait: None,
            keep_awake: false,
        },
    ))
}

/// Registers `socket` with the reactor. The safe constructor is deprecated because a
/// `T: AsRawFd` need not own its descriptor; a [`Socket`] owns its own (a `try_clone`
/// is a `dup`), so the descriptor stays valid until the registration is dropped.
#[allow(deprecated)]
fn register(socket: Socket, interest: Interest) -> io::Result<AsyncFd<Socket>> {
    AsyncFd::with_interest(socket, interest)
}

impl AsyncRead for PlainStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.read.poll_read_ready(cx))?;
            let offer = buf.remaining().min(this.read_hint);
            if this.scratch.len() < offer {
                this.scratch.resize(offer, 0);
            }
            let scratch = &mut this.scratch[..offer];
            match guard.try_io(|socket| socket.get_ref().read(scratch)) {
                Ok(Ok(n)) => {
                    buf.put_slice(&this.scratch[..n]);
                    if n > 0 && n < offer {
                        // A short read drained the socket: wait for the next edge rather
                        // than find out with one more read (as tokio's own streams do).
                        guard.clear_ready();
                    }
                    this.read_hint = if n == offer {
                        (offer * 2).min(READ_MAX)
                    } else if n < offer / 4 {
                        (this.read_hint / 2).max(READ_MIN)
                    } else {
                        this.read_hint
                    };
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl PlainWriter {
    /// Keeps the write handle registered for writability while nothing waits on it, so
    /// that the server reading each of our requests wakes the reactor for a moment.
    ///
    /// That wake-up is waste on an idle machine, but on the project's small VMs (an idle
    /// vCPU halts at once, and waking a halted one is slow) it keeps the client's vCPU
    /// awake until the reply comes: paired runs measured sequential round trips 5-7 %
    /// faster with it. While many requests are in flight the server reads them one after
    /// another and each read would wake us; left on there, pipelined throughput fell to
    /// 0.75-0.99 of the raw client's (1.01 without). So the client turns it on for a small
    /// request written by its caller on an idle connection, and off for a large one and
    /// when the connection task writes queued requests. `on` may not take effect (the
    /// registration is only an optimisation and its failure is ignored); `off` leaves a
    /// registration in use by a blocked write until that write completes.
    pub(crate) fn keep_awake(&mut self, on: bool, writing: bool) {
        if self.keep_awake == on {
            return;
        }
        self.keep_awake = on;
        if on {
            if self.write_wait.is_none() {
                self.write_wait = self
                    .write
                    .try_clone()
                    .and_then(|handle| register(handle, Interest::WRITABLE))
                    .ok();
            }
        } else if !writing {
            self.write_wait = None;
        }
    }

    /// Writes some of `buf`, waiting for writability if the socket is full.
    pub(crate) fn poll_write(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.write.write(buf) {
                Ok(n) => {
                    // Writable again: stop listening for writability.
                    if !self.keep_awake {
                        self.write_wait = None;
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if self.write_wait.is_none() {
                        // Registering reports the socket at once if it became writable
                        // since the failed write, so no edge is missed.
                        let handle = self.write.try_clone()?;
                        self.write_wait = Some(register(handle, Interest::WRITABLE)?);
                    }
                    if let Some(wait) = &self.write_wait {
                        let mut guard = ready!(wait.poll_write_ready(cx))?;
                        guard.clear_ready();
                    }
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}
