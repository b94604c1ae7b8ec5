//! Namespace discipline: all work happens on a fresh OS thread.
//!
//! `setns(2)` moves only the calling thread, and a netlink socket stays in
//! the namespace it was opened in. A tokio worker that called `setns` would
//! carry every later task into the pod's namespace, so we never do that.
//! Each operation instead gets its own `std::thread`, which
//!
//! 1. opens a route-netlink socket while still in the host namespace,
//! 2. enters the pod namespace (only this thread moves),
//! 3. opens a second socket there, and drives both with its own
//!    current-thread tokio runtime (no blocking pool is used, so no helper
//!    thread can end up in the wrong namespace),
//! 4. exits. It never returns to a pool, so a panic halfway, or an early
//!    return, cannot leak the namespace into unrelated work.
//!
//! The caller awaits a oneshot channel. If the caller's future is dropped
//! the worker still runs to the end, including its rollback.

use std::fmt;
use std::fs::File;
use std::future::Future;
use std::path::{Path, PathBuf};

use nix::sched::CloneFlags;
use rtnetlink::Handle;
use tokio::sync::oneshot;

use crate::error::{Error, Step};

/// Label used in errors for the namespace the process runs in.
pub const HOST_NAMESPACE: &str = "host";

/// An opened network namespace file.
#[derive(Debug)]
pub(crate) struct Netns {
    file: File,
    path: PathBuf,
}

impl Netns {
    /// Open `/var/run/netns/NAME` or `/proc/PID/ns/net`.
    pub(crate) fn open(path: &Path, interface: &str) -> Result<Self, Error> {
        let file = File::open(path)
            .map_err(|e| Error::step(Step::OpenNamespace, interface, path.display(), e))?;
        Ok(Netns {
            file,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn label(&self) -> String {
        self.path.display().to_string()
    }

    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Move the calling thread into this namespace. Only call this on a
    /// thread started by [`run`].
    pub(crate) fn enter(&self, interface: &str) -> Result<(), Error> {
        nix::sched::setns(&self.file, CloneFlags::CLONE_NEWNET)
            .map_err(|e| Error::step(Step::EnterNamespace, interface, self.label(), e))
    }
}

/// Open a route-netlink connection in the calling thread's namespace and
/// drive it on the current runtime.
pub(crate) fn connect(namespace: impl fmt::Display, interface: &str) -> Result<Handle, Error> {
    let (connection, handle, _) = rtnetlink::new_connection()
        .map_err(|e| Error::step(Step::OpenNetlink, interface, &namespace, e))?;
    tokio::spawn(connection);
    Ok(handle)
}

/// Run `job` on a new OS thread with its own current-thread runtime.
/// Returns a receiver for the result; a panic in `job` drops the sender.
fn spawn<T, F, Fut>(namespace: String, job: F) -> oneshot::Receiver<Result<T, Error>>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, Error>>,
{
    let (tx, rx) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("datapath-netns".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            let result = match runtime {
                Ok(rt) => rt.block_on(job()),
                Err(e) => Err(Error::step(Step::OpenNetlink, "-", &namespace, e)),
            };
            // The receiver may be gone (caller cancelled); nothing to do then.
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot spawn namespace worker thread");
    }
    rx
}

/// Async entry: run `job` on a dedicated namespace thread and await it.
pub(crate) async fn run<T, F, Fut>(namespace: String, job: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, Error>>,
{
    let rx = spawn(namespace.clone(), job);
    rx.await.unwrap_or(Err(Error::WorkerPanicked { namespace }))
}

/// Blocking entry for synchronous callers (a CNI binary). Must not be
/// called from inside an async task.
pub(crate) fn run_blocking<T, F, Fut>(namespace: String, job: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, Error>>,
{
    let rx = spawn(namespace.clone(), job);
    rx.blocking_recv()
        .unwrap_or(Err(Error::WorkerPanicked { namespace }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread_netns() -> PathBuf {
        std::fs::read_link("/proc/thread-self/ns/net").unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn panic_in_job_is_an_error_and_workers_stay_home() {
        let home = thread_netns();
        let err = run("/var/run/netns/example".into(), || async {
            if true {
                panic!("job failed on purpose");
            }
            Ok(())
        })
        .await
        .unwrap_err();
        assert!(
            matches!(&err, Error::WorkerPanicked { namespace } if namespace == "/var/run/netns/example"),
            "{err}"
        );
        assert_eq!(thread_netns(), home);
    }

    #[test]
    fn blocking_run_returns_the_job_result() {
        let name = run_blocking("host".into(), || async {
            Ok(std::thread::current().name().map(str::to_string))
        })
        .unwrap();
        assert_eq!(name.as_deref(), Some("datapath-netns"));
    }
}
