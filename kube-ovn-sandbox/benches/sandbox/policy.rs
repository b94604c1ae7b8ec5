//! How long a NetworkPolicy change takes to show in traffic: a client pod probes two
//! servers (one on its node, one on the other) with a new TCP connection every few
//! milliseconds; a policy that denies all ingress to both is created, and later
//! deleted, over and over. Each sample runs from just before the API write to the start
//! of the first probe that saw the new outcome (and was followed by more that saw it:
//! one slow probe on a busy machine is not a flip).

use std::time::Duration;

use anyhow::{bail, Context};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use tokio::time::Instant;

use crate::cluster::{namespace, pod, BenchSandbox, PodPlace};
use crate::probe::{flip, tcp_stream, Outcomes, Prober};
use crate::report::{report, Row};

const NS: &str = "np";
const POLICY: &str = "deny-servers";
/// How long one flip may take before the bench gives up.
const FLIP_DEADLINE: Duration = Duration::from_secs(60);
/// How late past its timeout a probe may still be finishing.
const MARGIN: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Samples of each (create, delete).
    #[arg(long, env = "SANDBOX_BENCH_POLICY_SAMPLES", default_value_t = 30)]
    pub samples: usize,
    /// Probe interval, in milliseconds.
    #[arg(long, default_value_t = 10)]
    pub every_ms: u64,
    /// One probe's timeout, in milliseconds.
    #[arg(long, default_value_t = 150)]
    pub timeout_ms: u64,
    /// Consecutive probes with the new outcome that make a flip.
    #[arg(long, default_value_t = 5)]
    pub confirm: usize,
    /// Pause after each flip before the next write, in milliseconds.
    #[arg(long, default_value_t = 300)]
    pub settle_ms: u64,
}

/// One probed pair.
struct Pair {
    label: &'static str,
    outcomes: Outcomes,
    task: tokio::task::JoinHandle<()>,
    apply: Vec<Duration>,
    delete: Vec<Duration>,
}

pub async fn run(args: &Args) -> anyhow::Result<()> {
    let sb = BenchSandbox::new()?;
    let (n1, n2) = (sb.node(1), sb.node(2));
    let objects = [
        namespace(NS),
        pod(NS, "client", "client", Some(&n1)),
        pod(NS, "server-near", "server", Some(&n1)),
        pod(NS, "server-far", "server", Some(&n2)),
    ];
    let manifest = sb.manifest("policy.yaml", &objects)?;
    let took = sb.up(2, &manifest)?;
    println!("policy: sandbox up with 3 pods in {took:.1?}");
    let client = sb.client().await?;
    let from = sb.running_pod(&client, NS, "client").await?;
    let prober = Prober::start(&from.netns)?;
    let every = Duration::from_millis(args.every_ms.max(1));
    let limit = Duration::from_millis(args.timeout_ms.max(1));
    let mut pairs = Vec::new();
    for (name, label) in [("server-near", "same node"), ("server-far", "other node")] {
        let to: PodPlace = sb.running_pod(&client, NS, name).await?;
        let outcomes = Outcomes::default();
        let task = prober.spawn(tcp_stream(
            to.ip,
            name.into(),
            every,
            limit,
            outcomes.clone(),
        ));
        pairs.push(Pair {
            label,
            outcomes,
            task,
            apply: Vec::new(),
            delete: Vec::new(),
        });
    }
    // both pairs answer before the first write
    wait_flips(&mut pairs, Instant::now(), true, args, |_, _| {}).await?;
    let api: Api<NetworkPolicy> = Api::namespaced(client.clone(), NS);
    let policy: NetworkPolicy = serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": POLICY, "namespace": NS},
        "spec": {"podSelector": {"matchLabels": {"app": "server"}}, "policyTypes": ["Ingress"]},
    }))?;
    for _ in 0..args.samples {
        let written = Instant::now();
        api.create(&PostParams::default(), &policy)
            .await
            .context("create the policy")?;
        wait_flips(&mut pairs, written, false, args, |p, d| p.apply.push(d)).await?;
        let written = Instant::now();
        api.delete(POLICY, &DeleteParams::default())
            .await
            .context("delete the policy")?;
        wait_flips(&mut pairs, written, true, args, |p, d| p.delete.push(d)).await?;
    }
    let mut rows = Vec::new();
    for pair in &pairs {
        let what = |w: &str| format!("{w} -> traffic flips, {}", pair.label);
        rows.push(Row::new(what("policy created (deny)"), pair.apply.clone()));
        rows.push(Row::new(
            what("policy deleted (allow)"),
            pair.delete.clone(),
        ));
    }
    report(&rows);
    for pair in pairs {
        pair.task.abort();
    }
    drop(prober);
    sb.down()?;
    Ok(())
}

/// Waits until every pair's probes show `want` from some probe started after
/// `written`; records each pair's time through `note`, then settles.
async fn wait_flips(
    pairs: &mut [Pair],
    written: Instant,
    want: bool,
    args: &Args,
    mut note: impl FnMut(&mut Pair, Duration),
) -> anyhow::Result<()> {
    let limit = Duration::from_millis(args.timeout_ms.max(1));
    let mut pending: Vec<usize> = (0..pairs.len()).collect();
    while !pending.is_empty() {
        tokio::time::sleep(Duration::from_millis(20)).await;
        // every probe started before this has finished (its timeout has passed, with
        // room for a late start on a busy machine)
        let complete_before = Instant::now() - limit - MARGIN;
        let mut still = Vec::new();
        for i in pending {
            let pair = &mut pairs[i];
            let at = {
                let outcomes = pair.outcomes.lock().unwrap_or_else(|p| p.into_inner());
                flip(&outcomes, written, want, args.confirm, complete_before)
            };
            match at {
                Some(at) => note(pair, at.saturating_duration_since(written)),
                None if written.elapsed() > FLIP_DEADLINE => bail!(
                    "{}: traffic did not become {} within {FLIP_DEADLINE:?}",
                    pair.label,
                    if want { "allowed" } else { "denied" }
                ),
                None => still.push(i),
            }
        }
        pending = still;
    }
    tokio::time::sleep(Duration::from_millis(args.settle_ms)).await;
    // forget what is measured: the next sample looks only at later probes
    for pair in pairs.iter() {
        let mut outcomes = pair.outcomes.lock().unwrap_or_else(|p| p.into_inner());
        let cut = Instant::now() - limit - MARGIN;
        outcomes.retain(|(at, _)| *at >= cut);
    }
    Ok(())
}
