//! `embedded-apiserver --listen 127.0.0.1:PORT --kubeconfig PATH [--state FILE]`
//!
//! Runs the embedded Kubernetes API server until SIGINT/SIGTERM. Port 0 picks
//! a free port; the kubeconfig names the real one. Prints `listening on ADDR`
//! once clients can connect.

use anyhow::Context;
use clap::Parser;
use embedded_apiserver::{Config, EmbeddedApiServer};
use std::net::SocketAddr;
use std::path::PathBuf;

/// An in-process Kubernetes API server for tests and the sandbox.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to write a kubeconfig for kubectl and kube-rs.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// State file: loaded at start if present, kept up to date while running.
    #[arg(long)]
    state: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = Config {
        listen: args.listen,
        state_file: args.state.clone(),
        ..Config::default()
    };
    let server = EmbeddedApiServer::start(config)
        .await
        .context("starting the API server")?;
    server
        .write_kubeconfig(&args.kubeconfig)
        .with_context(|| format!("writing {}", args.kubeconfig.display()))?;
    println!("listening on {}", server.addr());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    server.shutdown().await;
    Ok(())
}
