//! `kube-ovn-sandbox`: a multi-node Kube-OVN cluster on one machine, with real OVN,
//! the controller, a daemon per node, the CNI path and pods, that `kubectl` and
//! `kubectl ko` work against. `up`, `status`, `matrix`, `down`; see
//! `kube_ovn_sandbox::cluster`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kube_ovn_sandbox::cluster::{
    self, ProbeOptions, StateLayout, SuperviseOptions, UpOptions, DEFAULT_PREFIX,
};
use kube_ovn_sandbox::policy_eval::Protocol;
use kubectl_ko::target::DEFAULT_STATE_DIR;

#[derive(Debug, Parser)]
#[command(
    name = "kube-ovn-sandbox",
    about = "A multi-node Kube-OVN cluster on this machine: real OVN, controller, daemons, CNI and pods"
)]
struct Cli {
    /// Where the sandbox keeps its state (pids, kubeconfig, sandbox.json, logs).
    #[arg(long, global = true, env = "KUBE_OVN_SANDBOX", default_value = DEFAULT_STATE_DIR)]
    state_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the sandbox (or find it running), apply the manifests, wait for the pods.
    Up {
        /// How many nodes.
        #[arg(long, default_value_t = 2)]
        nodes: usize,
        /// Prefix of the namespaces (= node names) it creates.
        #[arg(long, default_value = DEFAULT_PREFIX)]
        prefix: String,
        /// How long to wait for every pod to be Running, in seconds.
        #[arg(long, default_value_t = 180)]
        timeout: u64,
        /// Manifest files or directories (default: the repository's examples/sandbox).
        manifests: Vec<PathBuf>,
    },
    /// Nodes, pods and subnets.
    Status,
    /// Probe every pod pair over real traffic against the NetworkPolicy evaluator.
    Matrix {
        /// Only pods of these namespaces (comma-separated; default all).
        #[arg(long, value_delimiter = ',')]
        namespaces: Vec<String>,
        /// Destination ports.
        #[arg(long, value_delimiter = ',', default_value = "80,81")]
        ports: Vec<u16>,
        /// Protocols (tcp, udp).
        #[arg(long, value_delimiter = ',', default_value = "tcp,udp", value_parser = parse_protocol)]
        protocols: Vec<Protocol>,
        /// Print every probe as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop everything the sandbox started and remove what it made.
    Down,
    /// The background process `up` starts (not for direct use).
    #[command(hide = true)]
    Supervise {
        #[arg(long)]
        nodes: usize,
        #[arg(long)]
        prefix: String,
    },
}

fn parse_protocol(text: &str) -> Result<Protocol, String> {
    match Protocol::parse(&text.to_ascii_uppercase()) {
        Some(Protocol::Sctp) | None => Err(format!("{text:?} is not tcp or udp")),
        Some(p) => Ok(p),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // the supervisor's log is the sandbox's record of what happened: info by default;
    // the commands a person runs print their results and only warn on stderr
    let default_level = match cli.command {
        Command::Supervise { .. } => "info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("kube-ovn-sandbox: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("kube-ovn-sandbox: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let dir = std::path::absolute(&cli.state_dir)
        .with_context(|| format!("state directory {}", cli.state_dir.display()))?;
    let layout = StateLayout::new(dir);
    let bin_dir = std::env::current_exe()
        .context("locating this binary")?
        .parent()
        .map(Path::to_path_buf)
        .context("this binary's directory")?;
    match cli.command {
        Command::Up {
            nodes,
            prefix,
            timeout,
            manifests,
        } => {
            let manifests = if manifests.is_empty() {
                vec![default_manifests()?]
            } else {
                manifests
            };
            let opts = UpOptions {
                layout: layout.clone(),
                nodes,
                prefix,
                manifests,
                bin_dir,
                pod_timeout: Duration::from_secs(timeout),
            };
            let outcome = cluster::up(opts).await?;
            print_up(&layout, &outcome);
        }
        Command::Status => {
            let report = cluster::status(&layout).await?;
            print!("{}", report.render());
        }
        Command::Matrix {
            namespaces,
            ports,
            protocols,
            json,
        } => {
            let opts = ProbeOptions {
                namespaces,
                ports,
                protocols,
            };
            let outcome = cluster::run_probe(&layout, &opts).await?;
            if json {
                let mut value = outcome.report.to_json();
                value["left_out"] = serde_json::json!(outcome.left_out);
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                print!("{}", outcome.report.render());
                for why in &outcome.left_out {
                    println!("left out {why}");
                }
            }
            if !outcome.report.mismatches().is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        Command::Down => {
            let report = cluster::down(&layout)?;
            if report.is_empty() {
                println!("nothing to stop in {}", layout.dir().display());
            } else {
                println!(
                    "stopped {} process(es), deleted {} network namespace(s), removed {} file(s) in {}",
                    report.stopped.len(),
                    report.namespaces.len(),
                    report.files.len(),
                    layout.dir().display()
                );
            }
        }
        Command::Supervise { nodes, prefix } => {
            let opts = SuperviseOptions {
                layout,
                nodes,
                prefix,
                bin_dir,
            };
            cluster::supervise(opts).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `examples/sandbox` of the current directory, else of the repository this binary
/// was built from.
fn default_manifests() -> anyhow::Result<PathBuf> {
    let here = PathBuf::from("examples/sandbox");
    if here.is_dir() {
        return Ok(here);
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sandbox");
    anyhow::ensure!(
        repo.is_dir(),
        "no manifests given, and neither ./examples/sandbox nor {} exists",
        repo.display()
    );
    Ok(repo)
}

fn print_up(layout: &StateLayout, outcome: &cluster::UpOutcome) {
    let kubeconfig = layout.kubeconfig();
    let state = layout.dir().display();
    if outcome.started {
        println!(
            "sandbox up: {} nodes, {} pods Running (supervisor pid {}, state in {state})",
            outcome.record.nodes,
            outcome.pods.len(),
            outcome.supervisor
        );
    } else {
        println!(
            "sandbox already running (supervisor pid {}); manifests re-applied, {} pods Running",
            outcome.supervisor,
            outcome.pods.len()
        );
    }
    let flag = if layout.dir() == Path::new(DEFAULT_STATE_DIR) {
        String::new()
    } else {
        format!(" --state-dir {state}")
    };
    println!("kubeconfig: {}", kubeconfig.display());
    println!();
    println!("  export KUBECONFIG={}", kubeconfig.display());
    if !flag.is_empty() {
        println!("  export KUBE_OVN_SANDBOX={state}");
    }
    println!("  kubectl get pods -A -o wide");
    println!("  kubectl get subnets");
    println!("  kubectl -n tour exec web-static -- ping -c 3 <another pod's IP>");
    println!("  kubectl ko nbctl show");
    println!("  kubectl ko diagnose all");
    println!("  kube-ovn-sandbox{flag} status");
    println!("  kube-ovn-sandbox{flag} matrix --ports 80 --protocols tcp");
    println!("  kube-ovn-sandbox{flag} down");
}
