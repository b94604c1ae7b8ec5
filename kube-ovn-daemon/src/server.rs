//! The daemon's unix socket (`--bind-socket`): JSON-RPC 2.0 over HTTP/1.1 with
//! `jsonrpsee`, methods [`METHOD_ADD`], [`METHOD_DEL`], [`METHOD_CHECK`],
//! [`METHOD_STATUS`] and [`METHOD_GC`]. The socket is created owner-only (0600): whoever
//! can write to it can plug any pod of the node into any network.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use jsonrpsee::server::{serve_with_graceful_shutdown, stop_channel, Server, ServerHandle};
use jsonrpsee::types::{ErrorObject, ErrorObjectOwned};
use jsonrpsee::RpcModule;
use tokio::net::UnixListener;

use super::handler::{CniDaemon, CniFailure};
use kube_ovn_cni::api::{
    CniRequest, METHOD_ADD, METHOD_CHECK, METHOD_DEL, METHOD_GC, METHOD_STATUS,
};

/// The socket could not be served.
#[derive(Debug, thiserror::Error)]
#[error("cannot serve the CNI API on {path}")]
pub struct ServeError {
    /// The socket path.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// A running API server; [`ApiServer::stop`] or dropping it stops accepting.
#[derive(Debug)]
pub struct ApiServer {
    handle: ServerHandle,
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl ApiServer {
    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, lets open requests finish, removes the socket file.
    pub async fn stop(self) {
        let _ = self.handle.stop();
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The JSON-RPC methods on `daemon`.
pub fn rpc_module(daemon: Arc<CniDaemon>) -> RpcModule<Arc<CniDaemon>> {
    let mut module = RpcModule::new(daemon);
    let registered = [
        module
            .register_async_method(METHOD_ADD, |params, daemon, _| async move {
                let req: CniRequest = params.one()?;
                daemon.add(req).await.map_err(rpc_error)
            })
            .map(|_| ()),
        module
            .register_async_method(METHOD_DEL, |params, daemon, _| async move {
                let req: CniRequest = params.one()?;
                daemon.del(req).await.map_err(rpc_error)
            })
            .map(|_| ()),
        module
            .register_async_method(METHOD_CHECK, |params, daemon, _| async move {
                let req: CniRequest = params.one()?;
                daemon.check(req).await.map_err(rpc_error)
            })
            .map(|_| ()),
        module
            .register_method(METHOD_STATUS, |_, _, _| Ok::<(), ErrorObjectOwned>(()))
            .map(|_| ()),
        module
            .register_async_method(METHOD_GC, |_, daemon, _| async move {
                daemon.gc().await.map_err(rpc_error)
            })
            .map(|_| ()),
    ];
    for result in registered {
        // the names are distinct constants: a clash is a bug here, not an input
        result.expect("distinct JSON-RPC method names");
    }
    module
}

/// The failure as a JSON-RPC error: the code says what kind, the message carries the
/// whole cause chain for the CNI binary to show.
fn rpc_error(failure: CniFailure) -> ErrorObjectOwned {
    let message = super::error_chain(&failure);
    tracing::warn!(error = %message, "CNI request failed");
    ErrorObject::owned(failure.code(), message, None::<()>)
}

/// Binds `path` (replacing a stale socket), owner-only, and serves `daemon` on it.
pub async fn serve(path: &Path, daemon: Arc<CniDaemon>) -> Result<ApiServer, ServeError> {
    let fail = |source| ServeError {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(fail(e)),
    }
    let listener = UnixListener::bind(path).map_err(fail)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(fail)?;
    let methods = rpc_module(daemon);
    let (stop, handle) = stop_channel();
    let builder = Server::builder().to_service_builder();
    let task = tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                _ = stop.clone().shutdown() => return,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!(%error, "accept on the CNI socket failed");
                        continue;
                    }
                },
            };
            let service = builder.clone().build(methods.clone(), stop.clone());
            let stopped = stop.clone().shutdown();
            tokio::spawn(async move {
                if let Err(error) = serve_with_graceful_shutdown(stream, service, stopped).await {
                    tracing::debug!(%error, "CNI API connection ended with an error");
                }
            });
        }
    });
    Ok(ApiServer {
        handle,
        path: path.to_path_buf(),
        task,
    })
}
