//! Named network namespaces (`ip netns`, under `/run/netns`) and running
//! blocking work inside one.
//!
//! `setns(2)` moves only the calling thread, and a socket stays in the
//! namespace it was opened in; a child process starts in its parent
//! thread's namespace. So work that must happen in a namespace (binding a
//! responder's sockets, a probe's connect, running CNI plugins in a node's
//! namespace) runs on a fresh OS thread that enters it; no tokio worker
//! ever changes namespace.

use std::path::{Path, PathBuf};
use tokio::process::Command;

/// Why a namespace operation failed.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// `ip netns ...` could not run or failed.
    #[error("ip {args:?} failed: {message}")]
    Ip {
        /// The arguments to `ip`.
        args: Vec<String>,
        /// Its stderr, or why it did not start.
        message: String,
    },
    /// Entering the namespace failed.
    #[error("cannot enter network namespace {path}: {source}")]
    Enter {
        /// The namespace file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The file of a named namespace.
pub fn netns_path(name: &str) -> PathBuf {
    Path::new("/run/netns").join(name)
}

async fn ip(args: &[&str]) -> Result<(), NetnsError> {
    let fail = |message: String| NetnsError::Ip {
        args: args.iter().map(|a| a.to_string()).collect(),
        message,
    };
    let out = Command::new("ip")
        .args(args)
        .output()
        .await
        .map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        return Err(fail(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(())
}

/// Creates namespace `name` with its loopback up (what containerd's sandbox
/// setup does: a pod reaches its own IP through `lo`).
pub async fn create(name: &str) -> Result<PathBuf, NetnsError> {
    ip(&["netns", "add", name]).await?;
    if let Err(e) = ip(&["-n", name, "link", "set", "lo", "up"]).await {
        let _ = ip(&["netns", "del", name]).await;
        return Err(e);
    }
    Ok(netns_path(name))
}

/// Removes namespace `name`; a namespace that is already gone is fine.
pub async fn delete(name: &str) -> Result<(), NetnsError> {
    if !netns_path(name).exists() {
        return Ok(());
    }
    ip(&["netns", "del", name]).await
}

/// Runs `work` on a new OS thread inside the namespace at `path` (`None`:
/// the caller's namespace) and returns its result.
pub async fn run_in<T, F>(path: Option<&Path>, work: F) -> Result<T, NetnsError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let path = path.map(Path::to_path_buf);
    let shown = path.clone().unwrap_or_default();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let entered = match &path {
            None => Ok(()),
            Some(p) => std::fs::File::open(p).and_then(|f| {
                nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET).map_err(Into::into)
            }),
        };
        let _ = tx.send(entered.map(|()| work()));
    });
    match rx.await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(source)) => Err(NetnsError::Enter {
            path: shown,
            source,
        }),
        Err(_) => Err(NetnsError::Enter {
            path: shown,
            source: std::io::Error::other("the namespace thread panicked"),
        }),
    }
}
