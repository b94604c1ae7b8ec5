//! Pod creation to first packet answered: on a running 2-node sandbox, pods are created
//! one after another at a fixed rate (Kubernetes' pod-startup SLO style), then, after
//! they are deleted, all at once. Each is probed from the moment the controller has
//! given it an address until its responder answers with the pod's name, from two places
//! on node 1 at once: the node itself (its network namespace, through `ovn0` and OVN's
//! router, as kubelet's probes go) and a client pod (through its `eth0` on the same
//! logical switch). The time runs from just before the pod's create call.
//!
//! The client pod asks for the new pod's MAC before the pod exists; Linux repeats an
//! unanswered ARP request after 1 s, so its figure includes that wait. Its neighbour
//! table is flushed between waves (a deleted pod's address comes back with a new MAC).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::watcher;
use tokio::time::Instant;

use crate::cluster::{annotated_ip, is_running, namespace, pod, BenchSandbox};
use crate::probe::{first_answer, Prober, Protocol};
use crate::report::{report, Row};

const CLIENT_NS: &str = "fp-client";
const NS: &str = "fp";
/// How long one pod may take from create to first answer before it counts as lost.
const POD_DEADLINE: Duration = Duration::from_secs(180);

#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Pods per wave.
    #[arg(long, env = "SANDBOX_BENCH_FP_PODS", default_value_t = 200)]
    pub pods: usize,
    /// Nodes.
    #[arg(long, env = "SANDBOX_BENCH_FP_NODES", default_value_t = 2)]
    pub nodes: usize,
    /// Creations per second in the paced wave (below what the sandbox starts per
    /// second, about 2 on these machines with its one-pod-at-a-time node agents: at a
    /// faster rate the figure is the queue's, not a pod's).
    #[arg(long, env = "SANDBOX_BENCH_FP_RATE", default_value_t = 1.0)]
    pub rate: f64,
    /// Waves to run: paced (at --rate), burst (all create calls back to back).
    #[arg(long, value_delimiter = ',', default_value = "paced,burst")]
    pub waves: Vec<Wave>,
    /// How the client probes.
    #[arg(long, value_enum, default_value = "udp")]
    pub protocol: Protocol,
    /// Probe interval per pod in the paced wave, in milliseconds.
    #[arg(long, default_value_t = 10)]
    pub every_ms: u64,
    /// Probe interval per pod in the burst wave, in milliseconds (every pod is waiting
    /// at once: 200 pods every 10 ms would be 20,000 packets a second into the
    /// client's node).
    #[arg(long, default_value_t = 50)]
    pub burst_every_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Wave {
    Paced,
    Burst,
}

/// What was seen of one pod, as instants.
#[derive(Debug, Default, Clone)]
struct Track {
    created: Option<Instant>,
    scheduled: Option<Instant>,
    addressed: Option<Instant>,
    running: Option<Instant>,
    /// From node 1, through `ovn0`.
    from_node: Option<Instant>,
    /// From the client pod on node 1.
    from_pod: Option<Instant>,
    node: String,
}

type Tracks = Arc<Mutex<HashMap<String, Track>>>;

/// One of a pod's moments.
type Moment = fn(&Track) -> Option<Instant>;

pub async fn run(args: &Args) -> anyhow::Result<()> {
    let sb = BenchSandbox::new()?;
    let objects = [
        namespace(CLIENT_NS),
        namespace(NS),
        pod(CLIENT_NS, "client", "client", Some(&sb.node(1))),
    ];
    let manifest = sb.manifest("first-packet.yaml", &objects)?;
    let took = sb.up(args.nodes, &manifest)?;
    println!("first-packet: sandbox up with the client pod in {took:.1?}");
    let client = sb.client().await?;
    let probe_from = sb.running_pod(&client, CLIENT_NS, "client").await?;
    let node_netns = kube_ovn_sandbox::netns::netns_path(&probe_from.node);
    let probers = [
        Prober::start(&node_netns)?,
        Prober::start(&probe_from.netns)?,
    ];
    println!(
        "first-packet: probing from {} and client pod {}, over {:?} every {} ms (burst: {} ms)",
        probe_from.node, probe_from.ip, args.protocol, args.every_ms, args.burst_every_ms
    );
    // `up` is ready before the nodes' `ovn0` and its routes are (the supervisor makes
    // them in the background): node 1 must reach the client before anything is timed
    let reached = probers[0].spawn(first_answer(
        Protocol::Udp,
        probe_from.ip,
        "client".into(),
        Duration::from_millis(50),
        Instant::now() + Duration::from_secs(120),
    ));
    if reached.await?.is_none() {
        bail!("node 1 did not reach the client pod through ovn0 within 120 s");
    }
    for (i, wave) in args.waves.iter().enumerate() {
        flush_neighbours(&probe_from.netns)?;
        let tracks = run_wave(&client, &probers, args, *wave, i).await?;
        print_wave(args, *wave, &tracks, &probe_from.node);
        delete_all(&client).await?;
    }
    drop(probers);
    sb.down()?;
    Ok(())
}

async fn run_wave(
    client: &kube::Client,
    probers: &[Prober; 2],
    args: &Args,
    wave: Wave,
    index: usize,
) -> anyhow::Result<HashMap<String, Track>> {
    let tracks: Tracks = Arc::default();
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let every = Duration::from_millis(match wave {
        Wave::Paced => args.every_ms,
        Wave::Burst => args.burst_every_ms,
    })
    .max(Duration::from_millis(1));
    let watch = tokio::spawn(follow(
        api.clone(),
        tracks.clone(),
        (args.protocol, every),
        [probers[0].handle(), probers[1].handle()],
    ));
    let names: Vec<String> = (0..args.pods).map(|i| format!("w{index}-p{i}")).collect();
    let start = Instant::now();
    let gap = match wave {
        Wave::Paced => Duration::from_secs_f64(1.0 / args.rate.max(0.01)),
        Wave::Burst => Duration::ZERO,
    };
    for (i, name) in names.iter().enumerate() {
        tokio::time::sleep_until(start + gap * i as u32).await;
        let object: Pod = serde_json::from_value(pod(NS, name, "fp", None))?;
        let created = Instant::now();
        tracks
            .lock()
            .unwrap()
            .entry(name.clone())
            .or_default()
            .created = Some(created);
        api.create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("create pod {name}"))?;
    }
    let created_in = start.elapsed();
    let deadline = Instant::now() + POD_DEADLINE;
    loop {
        let done = {
            let tracks = tracks.lock().unwrap();
            names
                .iter()
                .filter(|n| {
                    tracks
                        .get(*n)
                        .is_some_and(|t| t.from_node.is_some() && t.from_pod.is_some())
                })
                .count()
        };
        if done == names.len() || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    watch.abort();
    println!(
        "first-packet {wave:?}: {} create calls in {created_in:.1?}",
        names.len()
    );
    let tracks = tracks.lock().unwrap().clone();
    Ok(tracks)
}

/// Watches the wave's pods: notes when each is scheduled, addressed and Running, and
/// starts its probe once it has an address.
async fn follow(
    api: Api<Pod>,
    tracks: Tracks,
    (protocol, every): (Protocol, Duration),
    probes: [tokio::runtime::Handle; 2],
) {
    let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
    while let Some(event) = events.next().await {
        let pod = match event {
            Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => pod,
            Ok(_) => continue,
            Err(e) => {
                eprintln!("first-packet: watch: {e}");
                continue;
            }
        };
        let now = Instant::now();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let mut all = tracks.lock().unwrap();
        let track = all.entry(name.clone()).or_default();
        if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
            track.scheduled.get_or_insert(now);
            track.node = node;
        }
        if is_running(&pod) {
            track.running.get_or_insert(now);
        }
        if track.addressed.is_some() {
            continue;
        }
        let Some(ip) = annotated_ip(&pod) else {
            continue;
        };
        track.addressed = Some(now);
        let deadline = track.created.unwrap_or(now) + POD_DEADLINE;
        for (from_node, runtime) in [(true, &probes[0]), (false, &probes[1])] {
            let (tracks, name) = (tracks.clone(), name.clone());
            runtime.spawn(async move {
                let answered = first_answer(protocol, ip, name.clone(), every, deadline).await;
                if let Some(track) = tracks.lock().unwrap().get_mut(&name) {
                    if from_node {
                        track.from_node = answered;
                    } else {
                        track.from_pod = answered;
                    }
                }
            });
        }
    }
}

fn print_wave(args: &Args, wave: Wave, tracks: &HashMap<String, Track>, client_node: &str) {
    let since = |t: &Track, at: Moment| Some(at(t)?.saturating_duration_since(t.created?));
    let all: Vec<&Track> = tracks.values().collect();
    let lost = |at: Moment| all.iter().filter(|t| at(t).is_none()).count();
    let what = match wave {
        Wave::Paced => format!("{} pods at {}/s", args.pods, args.rate),
        Wave::Burst => format!("{} pods at once", args.pods),
    };
    let rows: [(&str, Moment); 5] = [
        ("create -> scheduled (seen)", |t| t.scheduled),
        ("create -> address annotated (seen)", |t| t.addressed),
        ("create -> Running (seen)", |t| t.running),
        ("create -> first answer from node 1 (ovn0)", |t| t.from_node),
        ("create -> first answer from client pod", |t| t.from_pod),
    ];
    let mut out = Vec::new();
    for (label, at) in rows {
        let took: Vec<Duration> = all.iter().filter_map(|t| since(t, at)).collect();
        out.push(Row::new(format!("{what}: {label}"), took));
    }
    for (label, same) in [("on node 1", true), ("on node 2", false)] {
        let took: Vec<Duration> = all
            .iter()
            .filter(|t| (t.node == client_node) == same)
            .filter_map(|t| since(t, |t| t.from_node))
            .collect();
        out.push(Row::new(
            format!("{what}: create -> first answer from node 1, pods {label}"),
            took,
        ));
    }
    report(&out);
    for (from, at) in [
        ("node 1", (|t| t.from_node) as Moment),
        ("the client pod", |t| t.from_pod),
    ] {
        if lost(at) > 0 {
            println!(
                "  {} of {} pods never answered {from} within {POD_DEADLINE:?}",
                lost(at),
                all.len()
            );
        }
    }
}

/// Empties the client pod's neighbour table.
fn flush_neighbours(netns: &std::path::Path) -> anyhow::Result<()> {
    let netns = netns.display().to_string();
    let name = netns.rsplit('/').next().unwrap_or_default();
    ovn_harness::run("ip", &["-n", name, "neigh", "flush", "all"])?;
    Ok(())
}

/// Deletes the wave's pods and waits until they are gone (the node agents tear their
/// network down first).
async fn delete_all(client: &kube::Client) -> anyhow::Result<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    for pod in api.list(&ListParams::default()).await?.items {
        let name = pod.metadata.name.unwrap_or_default();
        api.delete(&name, &DeleteParams::default())
            .await
            .with_context(|| format!("delete pod {name}"))?;
    }
    let start = Instant::now();
    while !api.list(&ListParams::default()).await?.items.is_empty() {
        if start.elapsed() > Duration::from_secs(300) {
            bail!("the wave's pods were not gone within 300 s");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "first-packet: the wave's pods deleted in {:.1?}",
        start.elapsed()
    );
    Ok(())
}
