//! Shared helpers.

use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use std::future::Future;
use std::time::Duration;

/// Starts a server on a free port.
pub async fn server() -> Handle {
    EmbeddedApiServer::start(Config::default())
        .await
        .expect("server starts")
}

/// Fails the test instead of hanging forever when an expected event never
/// comes (a liveness guard, not a speed assertion: the bound is generous).
pub async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(60), fut).await {
        Ok(v) => v,
        Err(_) => panic!("gave up waiting for {what}"),
    }
}
