//! The caller's inline path: the session state shared by the connection task and the
//! client handles, and the reading and writing a caller does on its own task when its
//! request found the connection idle (see `handle.rs`).
//!
//! Everything an incoming message touches (the connection's pending requests, monitors,
//! the `_Server` watch) lives in one [`Session`] behind a mutex that is never held across
//! an `await`, so that a caller whose request finds the connection idle can write it and
//! read the reply on its own task: one task wake per round trip instead of three.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::task::{Context, Poll, Waker};

use futures::task::AtomicWaker;
use futures::Stream as _;

use super::conn::{Conn, Ended, Pending, UserCall};
use super::dispatch::Core;
use crate::rpc::Message;

/// Messages read per pass before the reader yields to the other sources of work.
const READ_BUDGET: usize = 64;
/// Largest request written by its caller for which the client asks to be woken when
/// the server reads it (see `StreamWriter::keep_awake`).
const KEEP_AWAKE_MAX_REQUEST: usize = 4096;

/// What the connection task and the client handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    session: Mutex<Session>,
    /// Wakes the connection task without taking the session's lock.
    pub(super) driver: AtomicWaker,
    /// Commands sent to the task and not yet taken by it. A request is written by its
    /// caller only when none is queued, so requests and notifications leave in the
    /// order they were made.
    queued: AtomicUsize,
}

impl Shared {
    pub fn new(core: Core) -> Shared {
        Shared {
            session: Mutex::new(Session {
                conn: None,
                core,
                driver: None,
                broken: None,
            }),
            driver: AtomicWaker::new(),
            queued: AtomicUsize::new(0),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, Session> {
        self.session
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The session if nobody holds it. Callers never wait for the lock: its holder may
    /// be the connection task applying a large monitor update, and blocking a runtime
    /// thread for that long would stall unrelated tasks.
    pub fn try_lock(&self) -> Option<MutexGuard<'_, Session>> {
        match self.session.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Wakes the connection task (to take over reading, for one).
    pub fn wake_driver(&self) {
        self.driver.wake();
    }

    /// Counts a command about to be sent to the task.
    pub fn queue_one(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// Takes back the count of a command that could not be sent.
    pub fn unqueue_one(&self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }

    /// Nothing is queued ahead of a new request.
    pub fn nothing_queued(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0
    }
}

/// The live connection (if any) and the state incoming messages update.
#[derive(Debug)]
pub(crate) struct Session {
    /// Present while the connection is being served; absent while (re)connecting, when
    /// requests wait in the task's queue.
    pub(super) conn: Option<Conn>,
    pub(super) core: Core,
    /// Wakes the connection task; a caller that read the socket itself registers this
    /// waker with the reactor again when it is done, so the task hears the next message.
    pub(super) driver: Option<Waker>,
    /// Why a caller found the connection broken; the task ends the connection.
    pub(super) broken: Option<String>,
}

impl Session {
    /// Puts `frame` (request `id`) on the live connection for a caller that will read
    /// the reply itself, if the connection is idle: up, no reply awaited, nothing
    /// waiting to be written. Gives the call back otherwise.
    pub fn send_inline(&mut self, id: u64, call: UserCall, frame: &[u8]) -> Result<(), UserCall> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(call);
        };
        if self.broken.is_some() || !conn.pending.is_empty() || !conn.out.is_empty() {
            return Err(call);
        }
        conn.pending.insert(id, Pending::User(call));
        // Only short round trips gain from staying awake; the server reads a large
        // request in many pieces, and each would wake us.
        conn.out.keep_awake(frame.len() <= KEEP_AWAKE_MAX_REQUEST);
        conn.feed_encoded(frame);
        // Write now, as the task would: a request is on the wire before its future is
        // first polled. A small request to an idle socket does not block; if it does,
        // the task finishes the write.
        let waker = Waker::noop();
        match conn.out.poll_drain(&mut Context::from_waker(waker)) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => {
                let reason = conn.write_failed(e);
                self.end(reason);
            }
            Poll::Pending => self.wake_driver(),
        }
        Ok(())
    }

    /// Reads and handles whatever has arrived (up to the reply to `until`), on the
    /// caller's task, and writes what that produced (answers to `echo`). The caller's
    /// waker is now the one the reactor wakes for the socket: it must call
    /// [`Session::hand_back`] when it stops polling.
    pub fn poll_inline(&mut self, cx: &mut Context<'_>, until: Option<u64>) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        if self.broken.is_some() {
            return;
        }
        let outcome = match read_some(conn, &mut self.core, cx, until) {
            Ok(_) => drain(conn, cx).map(drop),
            Err(ended) => Err(ended),
        };
        if let Err(ended) = outcome {
            self.end(ended);
        }
    }

    /// Returns the socket to the connection task after [`Session::poll_inline`]: reads
    /// what is there and registers the task's waker for what comes next.
    pub fn hand_back(&mut self) {
        let Some(waker) = self.driver.clone() else {
            // The task has not run yet; its first poll registers it.
            return;
        };
        self.poll_inline(&mut Context::from_waker(&waker), None);
    }

    /// Marks the connection broken and wakes the task to end it.
    fn end(&mut self, ended: Ended) {
        let reason = match ended {
            Ended::Lost(reason) => reason,
            Ended::Shutdown => "client shut down".to_owned(),
        };
        self.broken.get_or_insert(reason);
        self.wake_driver();
    }

    fn wake_driver(&self) {
        if let Some(waker) = &self.driver {
            waker.wake_by_ref();
        }
    }
}

/// Reads and handles up to [`READ_BUDGET`] messages; returns how many.
/// With `until`, stops right after the reply to that request: its caller returns at once
/// and [`Session::hand_back`] reads the rest.
pub(super) fn read_some(
    conn: &mut Conn,
    core: &mut Core,
    cx: &mut Context<'_>,
    until: Option<u64>,
) -> Result<usize, Ended> {
    let mut handled = 0;
    while handled < READ_BUDGET {
        match Pin::new(&mut conn.reader).poll_next(cx) {
            Poll::Ready(next) => {
                let message = conn.received(next)?;
                let last = until.is_some()
                    && matches!(&message, Message::Reply { id, .. } | Message::Error { id, .. }
                        if id.as_u64() == until);
                core.dispatch(conn, message)?;
                handled += 1;
                if last {
                    return Ok(handled);
                }
            }
            Poll::Pending => return Ok(handled),
        }
    }
    // More may be waiting: come back after the other work.
    cx.waker().wake_by_ref();
    Ok(handled)
}

/// Writes what is queued, beside reading; `true` if it all went out.
pub(super) fn drain(conn: &mut Conn, cx: &mut Context<'_>) -> Result<bool, Ended> {
    if conn.out.is_empty() {
        return Ok(false);
    }
    match conn.out.poll_drain(cx) {
        Poll::Ready(Ok(())) => Ok(true),
        Poll::Ready(Err(e)) => Err(conn.write_failed(e)),
        Poll::Pending => Ok(false),
    }
}
