//! Running the datapath's host-side work in the namespace ovs-vswitchd plugs devices
//! from. On a node that is the daemon's own namespace; in a simulated node (a network
//! namespace holding that node's vswitchd) it is the node's namespace, while the daemon
//! keeps talking to the API server from its own.

use std::future::Future;
use std::path::{Path, PathBuf};

use nix::sched::CloneFlags;

/// Where the host ends of pod veths live.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum HostNamespace {
    /// The daemon's own namespace (a real node).
    #[default]
    Current,
    /// Another namespace, entered on a dedicated thread for each operation.
    Path(PathBuf),
}

/// The host namespace could not be entered.
#[derive(Debug, thiserror::Error)]
#[error("cannot enter host network namespace {path}")]
pub struct HostNamespaceError {
    /// The namespace file.
    pub path: String,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

impl HostNamespace {
    /// Runs `job` with the host namespace as the calling thread's namespace: the
    /// datapath's worker threads are spawned from that thread and inherit it.
    pub async fn run<T, F, Fut>(&self, job: F) -> Result<T, HostNamespaceError>
    where
        T: Send + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = T>,
    {
        let path = match self {
            HostNamespace::Current => return Ok(job().await),
            HostNamespace::Path(path) => path.clone(),
        };
        let fail = |path: &Path, source| HostNamespaceError {
            path: path.display().to_string(),
            source,
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread_path = path.clone();
        std::thread::Builder::new()
            .name("host-netns".into())
            .spawn(move || {
                let runtime = enter(&thread_path).and_then(|()| {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                });
                let _ = tx.send(runtime.map(|rt| rt.block_on(job())));
            })
            .map_err(|e| fail(&path, e))?;
        match rx.await {
            Ok(result) => result.map_err(|e| fail(&path, e)),
            Err(_) => Err(fail(
                &path,
                std::io::Error::other("host namespace thread panicked"),
            )),
        }
    }
}

fn enter(path: &Path) -> std::io::Result<()> {
    let file = std::fs::File::open(path)?;
    nix::sched::setns(&file, CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)
}
