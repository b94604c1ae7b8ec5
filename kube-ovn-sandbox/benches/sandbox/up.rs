//! `kube-ovn-sandbox up --nodes N` with a manifest of M pods spread over namespaces, from
//! the process's start until it exits (it waits for every pod to be Running), with the
//! moment its supervisor reported the cluster ready; then the pods are checked through
//! the API (all Running, Ready, addressed, on every node) and the sandbox is brought
//! down, timed too.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube_ovn_sandbox::cluster::SandboxRecord;

use crate::cluster::{is_ready, is_running, namespace, pod, BenchSandbox};
use crate::report::{report, Row};

#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Nodes.
    #[arg(long, env = "SANDBOX_BENCH_UP_NODES", default_value_t = 2)]
    pub nodes: usize,
    /// Pods in the manifest.
    #[arg(long, env = "SANDBOX_BENCH_UP_PODS", default_value_t = 50)]
    pub pods: usize,
    /// Namespaces the pods are spread over.
    #[arg(long, default_value_t = 5)]
    pub namespaces: usize,
    /// Times to run up and down.
    #[arg(long, env = "SANDBOX_BENCH_UP_RUNS", default_value_t = 3)]
    pub runs: usize,
}

struct Sample {
    ready: Duration,
    up: Duration,
    down: Duration,
}

pub async fn run(args: &Args) -> anyhow::Result<()> {
    let mut samples = Vec::new();
    for i in 0..args.runs {
        let s = once(args).await?;
        println!(
            "up run {}: cluster ready {:.2?}, all {} pods Running {:.2?}, down {:.2?}",
            i + 1,
            s.ready,
            args.pods,
            s.up,
            s.down
        );
        samples.push(s);
    }
    let what = format!("{} nodes, {} pods", args.nodes, args.pods);
    report(&[
        Row::new(
            format!("up ({what}): supervisor ready"),
            samples.iter().map(|s| s.ready).collect(),
        ),
        Row::new(
            format!("up ({what}): all pods Running (up exits)"),
            samples.iter().map(|s| s.up).collect(),
        ),
        Row::new(
            format!("down ({what})"),
            samples.iter().map(|s| s.down).collect(),
        ),
    ]);
    Ok(())
}

async fn once(args: &Args) -> anyhow::Result<Sample> {
    let sb = BenchSandbox::new()?;
    let spaces = args.namespaces.max(1);
    let mut objects: Vec<_> = (0..spaces).map(|n| namespace(&format!("up{n}"))).collect();
    for i in 0..args.pods {
        let ns = format!("up{}", i % spaces);
        objects.push(pod(&ns, &format!("p{i}"), &format!("app{}", i % 7), None));
    }
    let manifest = sb.manifest("up.yaml", &objects)?;
    let record = sb.state().join("sandbox-processes.json");
    let start = Instant::now();
    let mut up = sb
        .up_command(args.nodes, &manifest)
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("run up")?;
    let mut ready = None;
    let status = loop {
        if let Some(status) = up.try_wait()? {
            break status;
        }
        if ready.is_none() && SandboxRecord::load(&record)?.is_some_and(|r| r.ready) {
            ready = Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = start.elapsed();
    if !status.success() {
        bail!("up exited with {status}");
    }
    check_pods(&sb, args).await?;
    let down = sb.down()?;
    Ok(Sample {
        ready: ready.unwrap_or(took),
        up: took,
        down,
    })
}

/// Every pod of the manifest is Running and Ready with an address, and every node runs
/// some.
async fn check_pods(sb: &BenchSandbox, args: &Args) -> anyhow::Result<()> {
    let client = sb.client().await?;
    let pods = Api::<Pod>::all(client).list(&ListParams::default()).await?;
    if pods.items.len() != args.pods {
        bail!("{} pods, not {}", pods.items.len(), args.pods);
    }
    let mut nodes = BTreeSet::new();
    for p in &pods.items {
        let name = p.metadata.name.as_deref().unwrap_or_default();
        let ip = p.status.as_ref().and_then(|s| s.pod_ip.as_deref());
        if !is_running(p) || !is_ready(p) || ip.is_none() {
            bail!(
                "pod {name} is not Running, Ready and addressed: {:?}",
                p.status
            );
        }
        nodes.extend(p.spec.as_ref().and_then(|s| s.node_name.clone()));
    }
    if nodes.len() != args.nodes.min(args.pods) {
        bail!("pods run on {nodes:?}, not on all {} nodes", args.nodes);
    }
    Ok(())
}
