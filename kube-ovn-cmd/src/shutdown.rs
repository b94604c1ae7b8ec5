//! The one way a kube-ovn process learns it should stop.

/// Resolves on SIGTERM (what kubelet and the sandbox send) or SIGINT (Ctrl-C). Without a
/// SIGTERM handler (it could not be installed) SIGINT alone ends the wait.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
