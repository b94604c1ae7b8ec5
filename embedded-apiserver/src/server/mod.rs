//! The HTTP side: a hyper HTTP/1.1 server on a TCP listener, a bookmark
//! ticker, an optional state-file flusher, and the [`Handle`] tests and the
//! binary hold.

mod discovery;
mod handlers;
mod openapi;
mod pod_stream;
mod response;
mod route;
mod scale;

use crate::error::{ClientError, StartError};
use crate::pod_runtime::PodRuntime;
use crate::store::{State, DEFAULT_HISTORY};
use http_body_util::BodyExt;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How to run the server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// State file: loaded at start if it exists (with its journal,
    /// `STATE.journal`, which records every write before it is answered),
    /// rewritten every `flush_interval` after changes.
    pub state_file: Option<PathBuf>,
    /// fsync the journal after every write (so a machine crash loses no
    /// acknowledged write, like etcd); off, a killed process still loses
    /// nothing.
    pub fsync: bool,
    /// How many changes to keep for watches resuming from an older
    /// resourceVersion (older ones get 410 Gone).
    pub history_limit: usize,
    /// How often watchers that allow bookmarks get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// How often a dirty store is checkpointed to the state file (the
    /// journal is emptied then).
    pub flush_interval: Duration,
    /// How many live events a watcher may have pending before the server
    /// closes it as too slow (its client then resumes or relists).
    pub watch_buffer: usize,
    /// Record `operation: Update` managedFields for ordinary writes (on by
    /// default; see [`State::set_track_update_managers`]).
    pub track_update_managers: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            state_file: None,
            fsync: true,
            history_limit: DEFAULT_HISTORY,
            bookmark_interval: Duration::from_secs(5),
            flush_interval: Duration::from_secs(1),
            watch_buffer: crate::store::watch::DEFAULT_WATCH_BUFFER,
            track_update_managers: true,
        }
    }
}

/// What request handlers share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) addr: SocketAddr,
    /// Who runs `kubectl exec` and serves `kubectl logs` (none: 400).
    pub(crate) pod_runtime: RwLock<Option<Arc<dyn PodRuntime>>>,
}

/// Entry point: `EmbeddedApiServer::start(Config::default()).await?`.
#[derive(Debug)]
pub struct EmbeddedApiServer;

impl EmbeddedApiServer {
    /// Binds, loads state if configured, and starts serving on the current
    /// tokio runtime.
    pub async fn start(config: Config) -> Result<Handle, StartError> {
        let mut state = match &config.state_file {
            Some(path) => {
                let load_error = |source| StartError::LoadState {
                    path: path.clone(),
                    source,
                };
                let mut state = State::load(path, config.history_limit).map_err(load_error)?;
                state
                    .attach_journal(path, config.fsync)
                    .map_err(load_error)?;
                if !path.exists() {
                    // The default namespaces were made before the journal
                    // was attached: write them down, or a crash before the
                    // first checkpoint would make them anew with new uids.
                    state.checkpoint(path).map_err(load_error)?;
                }
                state
            }
            None => State::new(config.history_limit),
        };
        state.set_track_update_managers(config.track_update_managers);
        state.set_watch_buffer(config.watch_buffer);
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| StartError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            addr,
            pod_runtime: RwLock::new(None),
        });
        let mut tasks = vec![
            tokio::spawn(accept_loop(listener, shared.clone())),
            tokio::spawn(bookmark_loop(shared.clone(), config.bookmark_interval)),
        ];
        if let Some(path) = config.state_file.clone() {
            tasks.push(tokio::spawn(flush_loop(
                shared.clone(),
                path,
                config.flush_interval,
            )));
        }
        tracing::info!(%addr, "embedded API server listening");
        Ok(Handle {
            shared,
            tasks,
            state_file: config.state_file,
        })
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let shared = shared.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                let shared = shared.clone();
                async move {
                    let (parts, body) = req.into_parts();
                    let bytes = body
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    let req = http::Request::from_parts(parts, ());
                    if let route::Route::Resource(path) = route::parse_path(req.uri().path()) {
                        if pod_stream::serves(&path) {
                            return Ok(pod_stream::handle(&shared, &path, req).await);
                        }
                    }
                    let api_req = handlers::ApiRequest::from_parts(&req, bytes);
                    tracing::debug!(method = %api_req.method, path = %api_req.path, "request");
                    Ok::<_, std::convert::Infallible>(handlers::handle(&shared, api_req).await)
                }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await
            {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}

async fn bookmark_loop(shared: Arc<Shared>, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    loop {
        ticker.tick().await;
        shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send_bookmarks();
    }
}

async fn flush_loop(shared: Arc<Shared>, path: PathBuf, every: Duration) {
    // The first checkpoint comes one period after the start (the state
    // file was just written or loaded).
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        ticker.tick().await;
        flush(&shared, &path);
    }
}

fn flush(shared: &Shared, path: &Path) {
    let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
    if !state.take_dirty() {
        return;
    }
    // Under the lock: a change committed between the snapshot and emptying
    // the journal would otherwise be in neither.
    if let Err(e) = state.checkpoint(path) {
        tracing::warn!(path = %path.display(), error = %e, "failed to save API server state");
    }
}

/// A running server. Dropping it stops the server (like [`Handle::shutdown`]
/// but without the final state flush).
#[derive(Debug)]
pub struct Handle {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
    state_file: Option<PathBuf>,
}

impl Handle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// Registers (or replaces) who runs `kubectl exec` and serves `kubectl
    /// logs` for pods.
    pub fn set_pod_runtime(&self, runtime: Arc<dyn PodRuntime>) {
        *self
            .shared
            .pod_runtime
            .write()
            .unwrap_or_else(|p| p.into_inner()) = Some(runtime);
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// A kube-rs client talking to this server, default namespace `default`
    /// (cargo feature `kube-client`).
    #[cfg(feature = "kube-client")]
    pub fn kube_client(&self) -> Result<kube::Client, ClientError> {
        let url = self.url();
        let uri: http::Uri = url.parse().map_err(|source| ClientError::InvalidUrl {
            url: url.clone(),
            source,
        })?;
        let config = kube::Config::new(uri);
        kube::Client::try_from(config).map_err(|source| ClientError::Client { url, source })
    }

    /// Writes a kubeconfig naming this server (context `embedded`,
    /// namespace `default`, no credentials: the server does no auth).
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), ClientError> {
        std::fs::write(path, kubeconfig_yaml(&self.url())).map_err(|source| {
            ClientError::WriteKubeconfig {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    /// Drops the watch history and ends every open watch, so that clients
    /// resume into 410 Gone and must relist (what an etcd compaction does).
    pub fn compact_history(&self) {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .compact_history();
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .resource_version()
    }

    /// Number of stored objects (of all kinds).
    pub fn object_count(&self) -> usize {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Number of open watches.
    pub fn watch_count(&self) -> usize {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .watcher_count()
    }

    /// Stops serving, ends all watches and writes the state file (if any).
    pub async fn shutdown(mut self) {
        self.stop();
        if let Some(path) = self.state_file.clone() {
            let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
            state.take_dirty();
            if let Err(e) = state.checkpoint(&path) {
                tracing::warn!(path = %path.display(), error = %e, "failed to save API server state");
            }
        }
    }

    fn stop(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        let mut state = self.shared.state.lock().unwrap_or_else(|p| p.into_inner());
        state.close_watches();
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The kubeconfig document for a server URL.
pub fn kubeconfig_yaml(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: embedded\n  cluster:\n    server: {url}\n\
         contexts:\n- name: embedded\n  context:\n    cluster: embedded\n    user: embedded\n    namespace: default\n\
         current-context: embedded\nusers:\n- name: embedded\n  user: {{}}\n"
    )
}
