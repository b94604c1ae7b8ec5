//! `kube-ovn-controller`: parses Kube-OVN's flags, waits to hold the Lease
//! `kube-ovn-controller` (namespace `POD_NAMESPACE`, identity `POD_NAME`), and while it
//! holds it connects to the OVN northbound database (the Raft leader among
//! `--ovn-nb-addr`'s remotes), runs the start-up writes and then the controller (the
//! default Subnets, the IPAM rebuild, start-up garbage collection, then the Subnet,
//! IPPool and periodic GC reconcilers) until SIGINT/SIGTERM or until the Lease is lost,
//! which stops every writer at once. Kube-OVN's other workers (pods, nodes, ...) are not
//! implemented yet; the binary says so.

use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use kube_ovn_cmd::kube_client::kube_client;
use kube_ovn_controller::config::{ConfigError, ControllerConfig};
use kube_ovn_controller::leader::{self, LeaderElection};
use kube_ovn_controller::{self as controller, bootstrap};
use ovn_nb::NbClient;
use ovn_sb::SbClient;

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
    let client = kube_client(config.kubeconfig.as_deref()).await?;
    let election = LeaderElection::from_env();
    tracing::info!(
        lease = %election.lease_name,
        namespace = %election.namespace,
        identity = %election.identity,
        "waiting to lead"
    );
    // a term's failure, handed out of the spawned term to fail the process
    let failure: Arc<Mutex<Option<anyhow::Error>>> = Arc::default();
    let term = {
        let (config, client, failure) = (config.clone(), client.clone(), failure.clone());
        move || {
            let (config, client, failure) = (config.clone(), client.clone(), failure.clone());
            async move {
                if let Err(err) = lead(&config, client).await {
                    *failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(err);
                }
            }
        }
    };
    let stop = kube_ovn_cmd::shutdown_signal();
    leader::run_as_leader(client, &election, term, stop)
        .await
        .context("leader election")?;
    if let Some(err) = failure
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        return Err(err);
    }
    tracing::info!("stopped by signal");
    Ok(())
}

/// One term of leadership: connect to NB, write the start-up rows, rebuild the IPAM
/// and run the reconcilers. Every term starts from the API server and NB afresh.
async fn lead(config: &ControllerConfig, client: kube::Client) -> anyhow::Result<()> {
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
    // VPCs, NAT, EIPs, VIPs and underlay (Vlan, ProviderNetwork) come in a later wave
    let not_yet = "Subnets, IPPools, Pods, Nodes, Services and NetworkPolicies are \
        reconciled; Vpc, Vip, Vlan, ProviderNetwork, the OVN EIP/FIP/SNAT/DNAT kinds, \
        QoSPolicy and SwitchLBRule are not yet";
    tracing::info!("{not_yet}");
    println!(
        "kube-ovn-controller: start-up done ({} NB operations); {not_yet}",
        report.ops_written()
    );
    let mut ctx = controller::Context::new(client, Arc::new(nb), Arc::new(config.clone()));
    if let Some(sb) = connect_sb(config).await {
        ctx = ctx.with_sb(Arc::new(sb));
    }
    controller::run(Arc::new(ctx)).await.context("controller")?;
    Ok(())
}

/// The southbound database at `--ovn-sb-addr`, read by the node reconciler for each
/// node's chassis. Without it (flag empty or SB unreachable) nodes get no `chassis`
/// annotation and their chassis are not deleted with them: a warning says so.
async fn connect_sb(config: &ControllerConfig) -> Option<SbClient> {
    let remotes = config
        .ovn_sb_addr
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if remotes.is_empty() {
        tracing::warn!("no --ovn-sb-addr: node chassis are not tracked");
        return None;
    }
    match tokio::time::timeout(CONNECT_TIMEOUT, SbClient::connect(&remotes)).await {
        Ok(Ok(sb)) => {
            tracing::info!(remotes = %remotes, "connected to the OVN southbound database");
            Some(sb)
        }
        Ok(Err(err)) => {
            tracing::warn!(remotes = %remotes, error = %err, "SB unreachable: node chassis are not tracked");
            None
        }
        Err(_) => {
            tracing::warn!(remotes = %remotes, "no SB leader within {CONNECT_TIMEOUT:?}: node chassis are not tracked");
            None
        }
    }
}
