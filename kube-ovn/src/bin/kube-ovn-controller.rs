//! `kube-ovn-controller`: parses Kube-OVN's flags, connects to the OVN northbound
//! database (the Raft leader among `--ovn-nb-addr`'s remotes) and runs the start-up
//! writes. The reconcilers that follow in Kube-OVN (Subnet and IPAM rebuild, then one
//! worker per kind) are not implemented yet; the binary says so and exits.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use kube_ovn::config::{ConfigError, ControllerConfig};
use kube_ovn::controller::bootstrap;
use ovn_nb::NbClient;

/// How long to look for a reachable NB leader before giving up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let config = match ControllerConfig::parse_from(std::env::args_os()) {
        Ok(config) => config,
        // --help, or clap's own usage errors, printed the way clap prints them
        Err(ConfigError::Usage(err)) => err.exit(),
        Err(err) => {
            eprintln!("kube-ovn-controller: {err}");
            return ExitCode::from(2);
        }
    };
    config.log_ignored();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("kube-ovn-controller: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kube-ovn-controller: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(config: &ControllerConfig) -> anyhow::Result<()> {
    let remotes = config
        .ovn_nb_addr
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let nb = tokio::time::timeout(CONNECT_TIMEOUT, NbClient::connect(&remotes))
        .await
        .with_context(|| format!("no NB leader reachable at {remotes} within {CONNECT_TIMEOUT:?}"))?
        .with_context(|| format!("connecting to NB at {remotes}"))?;
    tracing::info!(remotes = %remotes, "connected to the OVN northbound database");
    let report = bootstrap(&nb, config)
        .await
        .context("start-up writes to NB")?;
    tracing::info!(operations = report.ops_written(), "start-up done");
    let not_yet = "the reconcilers are not implemented yet: no Subnet objects \
        (ovn-default, join) are created, no IPAM rebuild and no workers run; \
        kube-ovn-controller stops after the start-up";
    tracing::warn!("{not_yet}");
    println!(
        "kube-ovn-controller: start-up done ({} NB operations); {not_yet}",
        report.ops_written()
    );
    Ok(())
}
