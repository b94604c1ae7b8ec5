//! The sandbox end to end (issue 15): `kube-ovn-sandbox` as a person runs it, with real
//! OVN, the controller, a daemon and node agent per node, and real traffic between pods.
//!
//! `cargo bench -p kube-ovn-sandbox --bench sandbox -- [MODE] [FLAGS]` (root, OVS/OVN installed):
//!
//! - `up`: `up --nodes 2` with a manifest of 50 pods over 5 namespaces, until every pod
//!   is Running (`up` waits for that), then `down`; 3 runs.
//! - `first-packet`: 200 pods on a running 2-node sandbox, created at 1/s and then all
//!   at once; each from its create call until a client pod's probe gets its answer.
//! - `policy`: a NetworkPolicy denying a client's two servers created and deleted 30
//!   times; each from the API write until the client's probes see the change.
//! - `all` (the default): the three in turn, with their defaults.
//!
//! Each mode's `--help` lists its sizes (also settable by environment:
//! `SANDBOX_BENCH_UP_PODS`, `SANDBOX_BENCH_FP_PODS`, `SANDBOX_BENCH_POLICY_SAMPLES`, ...).
//! `SANDBOX_BENCH_BIN` names another build's `kube-ovn-sandbox` to measure (before and
//! after a change). Every sandbox gets its own temporary state directory and name prefix and is brought
//! down at the end, also on failure. No peer runs in the same process: the figures are
//! set against Kubernetes' pod-startup SLO in the README.

mod cluster;
mod first_packet;
mod policy;
mod probe;
mod report;
mod up;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "sandbox bench")]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, global = true, hide = true)]
    bench: bool,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// `up` to every pod Running, then `down`.
    Up(up::Args),
    /// Pod creation to first packet answered.
    FirstPacket(first_packet::Args),
    /// A NetworkPolicy change to the change in traffic.
    Policy(policy::Args),
    /// All three with their defaults.
    All,
}

const EXTRA_TOOLS: &[&str] = &["/usr/lib/cni/portmap"];

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    }
    if !ovn_harness::require_stack(EXTRA_TOOLS) {
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.mode.unwrap_or(Mode::All) {
            Mode::Up(args) => up::run(&args).await,
            Mode::FirstPacket(args) => first_packet::run(&args).await,
            Mode::Policy(args) => policy::run(&args).await,
            Mode::All => {
                let defaults = |mode: &str| Cli::parse_from(["sandbox", mode]).mode;
                for mode in ["up", "first-packet", "policy"] {
                    match defaults(mode) {
                        Some(Mode::Up(args)) => up::run(&args).await?,
                        Some(Mode::FirstPacket(args)) => first_packet::run(&args).await?,
                        Some(Mode::Policy(args)) => policy::run(&args).await?,
                        _ => unreachable!("{mode} parses to itself"),
                    }
                }
                Ok(())
            }
        }
    })
}
