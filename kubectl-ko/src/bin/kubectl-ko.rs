//! `kubectl-ko`: Kube-OVN's kubectl plugin (`kubectl ko ...` once on PATH).
//!
//! Against a sandbox (`--state-dir`, `$KUBE_OVN_SANDBOX`, or a `sandbox.json` in
//! `/var/lib/kube-ovn-sandbox`) it finds the databases and nodes there; otherwise it
//! execs into Kube-OVN's `ovn-central` and `ovs-ovn` pods as Kube-OVN's plugin does.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kubectl_ko::diagnose::{self, Scope};
use kubectl_ko::target::{Place, StateDir};
use kubectl_ko::trace::{self, TraceRequest};
use kubectl_ko::{podnet, usage, Ko, KoError};

#[derive(Parser, Debug)]
#[command(name = "kubectl-ko", about = "Kube-OVN's kubectl plugin")]
struct Cli {
    /// The sandbox's state directory (holding sandbox.json).
    #[arg(long, global = true)]
    state_dir: Option<PathBuf>,
    /// The kubeconfig (else the sandbox's, else KUBECONFIG / ~/.kube/config).
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// ovn-nbctl against the NB database.
    Nbctl {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// ovn-sbctl against the SB database.
    Sbctl {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// ovs-vsctl on a node.
    Vsctl {
        node: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// ovs-ofctl on a node.
    Ofctl {
        node: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// trace NAMESPACE/POD TARGET_IP [icmp|tcp|udp] [PORT] (exit status 1 unless delivered)
    Trace {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// diagnose all | subnet NAME | node NAME (exit status 1 when a check fails)
    Diagnose { what: String, name: Option<String> },
    /// Each Subnet's used and available addresses.
    SubnetUsage,
    /// A pod's annotations, port, OVS interface and netns.
    GetPodNetwork { pod: String },
}

fn scope(what: &str, name: Option<String>) -> Result<Scope, KoError> {
    match (what, name) {
        ("all", None) => Ok(Scope::All),
        ("subnet", Some(n)) => Ok(Scope::Subnet(n)),
        ("node", Some(n)) => Ok(Scope::Node(n)),
        (other, _) => Err(KoError::BadArgument {
            value: other.to_string(),
            reason: "expected: diagnose all | subnet NAME | node NAME".to_string(),
        }),
    }
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    let sandbox = StateDir::from_flag_or_env(cli.state_dir).load()?;
    let ko = Ko {
        sandbox,
        kubeconfig: cli.kubeconfig,
    };
    let code = match cli.command {
        Command::Nbctl { args } => ko.pass_through(&Place::Nb, "ovn-nbctl", &args).await?,
        Command::Sbctl { args } => ko.pass_through(&Place::Sb, "ovn-sbctl", &args).await?,
        Command::Vsctl { node, args } => {
            ko.pass_through(&Place::Node(node), "ovs-vsctl", &args)
                .await?
        }
        Command::Ofctl { node, args } => {
            ko.pass_through(&Place::Node(node), "ovs-ofctl", &args)
                .await?
        }
        Command::Trace { args } => {
            let req = TraceRequest::parse(&args)?;
            let report = trace::trace(&ko, &req)
                .await
                .with_context(|| format!("trace {}", req.pod))?;
            print!("{report}");
            i32::from(!report.starts_with("verdict: delivered"))
        }
        Command::Diagnose { what, name } => {
            let checks = diagnose::diagnose(&ko, &scope(&what, name)?).await?;
            print!("{}", diagnose::render(&checks));
            i32::from(checks.iter().any(|c| c.failure.is_some()))
        }
        Command::SubnetUsage => {
            print!("{}", usage::subnet_usage(&ko).await?);
            0
        }
        Command::GetPodNetwork { pod } => {
            print!("{}", podnet::get_pod_network(&ko, &pod).await?);
            0
        }
    };
    Ok(code)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(err) => {
            eprintln!("kubectl-ko: {err:#}");
            ExitCode::from(1)
        }
    }
}
