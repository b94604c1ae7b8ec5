//! Embedded API server: write throughput with watch fan-out, and memory per
//! stored object.
//!
//! * `apiserver/create_pods_10_watchers/N`: N pod creates over HTTP (16 in
//!   flight, via kube-rs) while 10 raw HTTP watches are attached; an
//!   iteration ends when every watcher has received every ADDED event.
//!   Throughput is in delivered events (N x 10).
//! * A one-shot run before the criterion groups prints the headline figures
//!   for 10,000 pods: creates/s, events delivered/s, and resident memory per
//!   stored pod (RSS growth of a bare store holding 10,000 pods).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use embedded_apiserver::store::{State, WriteOptions};
use embedded_apiserver::{Config, EmbeddedApiServer};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WATCHERS: usize = 10;
const IN_FLIGHT: usize = 16;
const PROBE_ENV: &str = "APISERVER_BENCH_MEMORY_PROBE";

fn pod_json(n: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{n}"), "namespace": "default",
            "labels": {"app": "bench", "shard": (n % 16).to_string()},
            "annotations": {"ovn.kubernetes.io/ip_address": format!("10.16.{}.{}", n / 250, n % 250 + 2),
                            "ovn.kubernetes.io/mac_address": "00:00:00:12:34:56",
                            "ovn.kubernetes.io/logical_switch": "ovn-default"}},
        "spec": {"nodeName": format!("node-{}", n % 8),
                 "containers": [{"name": "app", "image": "registry.example/app:1.0",
                                 "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                 "env": [{"name": "MODE", "value": "bench"}]}]}
    })
}

/// Creates `n` pods with `WATCHERS` watches attached; returns the elapsed
/// time until the last watcher has seen the last ADDED event.
async fn run_creates(n: usize) -> Duration {
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("server starts");
    let client = server.kube_client().expect("client");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let from = server.resource_version().to_string();
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        watchers.push(tokio::spawn(count_raw_events(
            server.addr(),
            from.clone(),
            n,
        )));
    }
    while server.watch_count() < WATCHERS {
        tokio::task::yield_now().await;
    }
    let start = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let pods = pods.clone();
            async move {
                let pod: Pod = serde_json::from_value(pod_json(i)).expect("pod");
                pods.create(&PostParams::default(), &pod)
                    .await
                    .expect("create");
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    let writes = start.elapsed();
    for w in watchers {
        w.await.expect("watcher");
    }
    let total = start.elapsed();
    if n >= 10_000 {
        println!(
            "apiserver figures: {n} pod creates in {:.2?} ({:.0} creates/s); {} events delivered to {WATCHERS} watchers in {:.2?} ({:.0} events/s)",
            writes,
            n as f64 / writes.as_secs_f64(),
            n * WATCHERS,
            total,
            (n * WATCHERS) as f64 / total.as_secs_f64()
        );
    }
    server.shutdown().await;
    total
}

/// A watcher that reads the raw HTTP watch stream and counts ADDED events
/// without decoding objects, so the figure is the server's delivery rate
/// and not the client's JSON decoding speed.
async fn count_raw_events(addr: std::net::SocketAddr, from: String, n: usize) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /api/v1/namespaces/default/pods?watch=1&resourceVersion={from} HTTP/1.1\r\nHost: {addr}\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send watch");
    let pattern = br#""type":"ADDED""#;
    let (mut seen, mut carry, mut buf) = (0, Vec::new(), vec![0u8; 64 * 1024]);
    while seen < n {
        let got = stream.read(&mut buf).await.expect("read watch");
        assert!(got > 0, "watch stream ended early");
        carry.extend_from_slice(&buf[..got]);
        seen += carry
            .windows(pattern.len())
            .filter(|w| w == pattern)
            .count();
        let keep = carry.len().saturating_sub(pattern.len() - 1);
        carry.drain(..keep);
    }
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// RSS growth per pod of a bare store (no HTTP), and the store's own create
/// rate; with and without `operation: Update` managedFields.
fn memory_per_pod(n: usize, track_update_managers: bool) {
    let before = rss_bytes();
    let mut state = State::new(n);
    state.set_track_update_managers(track_update_managers);
    let rt = state
        .registry()
        .find("", "v1", "pods")
        .cloned()
        .expect("pods");
    let opts = WriteOptions::manager("bench");
    let start = Instant::now();
    for i in 0..n {
        state
            .create(&rt, Some("default"), pod_json(i), &opts)
            .expect("create");
    }
    let elapsed = start.elapsed();
    let grown = rss_bytes().saturating_sub(before);
    let pod = state.get(&rt, Some("default"), "pod-0").expect("get");
    let json_size = serde_json::to_vec(&pod).map(|v| v.len()).unwrap_or(0);
    println!(
        "apiserver figures: store without HTTP, update managedFields {}: {n} pod creates in {elapsed:.2?} ({:.0} creates/s); RSS grew {:.1} MiB = {} bytes per pod (a stored pod is {json_size} bytes of JSON)",
        if track_update_managers { "on" } else { "off" },
        n as f64 / elapsed.as_secs_f64(),
        grown as f64 / (1024.0 * 1024.0),
        grown / n as u64
    );
}

fn bench_apiserver(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // Each memory probe runs in a fresh process: freed memory is not handed
    // back to the OS, so a second probe in this process would under-count.
    if let Ok(mode) = std::env::var(PROBE_ENV) {
        memory_per_pod(10_000, mode == "on");
        std::process::exit(0);
    }
    for mode in ["on", "off"] {
        let exe = std::env::current_exe().expect("bench executable");
        let status = std::process::Command::new(exe)
            .args(std::env::args().skip(1))
            .env(PROBE_ENV, mode)
            .status()
            .expect("memory probe runs");
        assert!(status.success(), "memory probe failed");
    }
    rt.block_on(run_creates(10_000));

    let mut group = c.benchmark_group("apiserver");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    let n = 1_000;
    group.throughput(Throughput::Elements((n * WATCHERS) as u64));
    group.bench_with_input(
        BenchmarkId::new("create_pods_10_watchers", n),
        &n,
        |b, &n| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += rt.block_on(run_creates(n));
                }
                total
            })
        },
    );
    group.finish();
}

criterion_group!(benches, bench_apiserver);
criterion_main!(benches);
