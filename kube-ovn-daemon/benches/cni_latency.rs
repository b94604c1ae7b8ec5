//! CNI ADD and DEL latency on the real stack: the `kube-ovn` binary as a runtime runs it,
//! the daemon, ovs-vswitchd (userspace datapath), ovn-controller, OVN central; the test
//! env plays the controller (annotations, logical switch ports, written before the
//! timed ADD). Beside it, in the same run, Debian's `bridge` + `host-local` ADD and DEL
//! into fresh namespaces, the same numbers one after the other and at once (the bridge
//! lives in a namespace made for the bench).
//!
//! `cargo bench -p kube-ovn-daemon --bench cni_latency` (root, OVS/OVN installed). Scale with
//! `CNI_BENCH_SEQUENTIAL` (default 100) and `CNI_BENCH_CONCURRENT` (default 20).
//! `RUST_LOG=kube_ovn_daemon=info` prints each ADD's `cni_add` span with the time of
//! every step (lock, annotation wait, veth, OVS port, ovn-installed, gateway check).

#[allow(dead_code)]
#[path = "../tests/cni_node/env.rs"]
mod env;

use std::time::{Duration, Instant};

use cni_spec::runtime::{CniRuntime, RuntimeConf};
use cni_spec::NetworkConfigList;
use env::{container_id, run_cni, Env, PodNetns, OVN_DEFAULT};

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let Some(env) = Env::start(|_| {}).await else {
        return;
    };
    let sequential = count("CNI_BENCH_SEQUENTIAL", 100).min(150);
    let concurrent = count("CNI_BENCH_CONCURRENT", 20).min(50);
    let (add, del) = kube_ovn_pods(&env, sequential, 0, false).await;
    report("kube-ovn ADD, sequential", sequential, &add);
    report("kube-ovn DEL, sequential", sequential, &del);
    let (add, del) = kube_ovn_pods(&env, concurrent, 160, true).await;
    report("kube-ovn ADD, concurrent", concurrent, &add);
    report("kube-ovn DEL, concurrent", concurrent, &del);
    let (add, del) = tokio::task::spawn_blocking(move || bridge_pods(sequential, false))
        .await
        .expect("bridge bench");
    report("bridge+host-local ADD, sequential", sequential, &add);
    report("bridge+host-local DEL, sequential", sequential, &del);
    let (add, del) = tokio::task::spawn_blocking(move || bridge_pods(concurrent, true))
        .await
        .expect("bridge bench");
    report("bridge+host-local ADD, concurrent", concurrent, &add);
    report("bridge+host-local DEL, concurrent", concurrent, &del);
}

/// `n` pods: all ADDs, then all DELs; one after the other or all at once.
async fn kube_ovn_pods(
    env: &Env,
    n: usize,
    first_host: usize,
    at_once: bool,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut pods = Vec::new();
    for i in 0..n {
        let name = format!("p{}", first_host + i);
        let host = (first_host + i + 2) as u8;
        env.allocate("bench", &name, OVN_DEFAULT, host).await;
        pods.push((name, PodNetns::new(), container_id()));
    }
    let conf = env.plugin_conf();
    let mut times = Vec::new();
    for command in ["ADD", "DEL"] {
        let jobs = pods.iter().map(|(name, netns, id)| {
            let (conf, name, id) = (conf.clone(), name.clone(), id.clone());
            let path = netns.path().display().to_string();
            move || {
                let start = Instant::now();
                let out = run_cni(command, &id, &path, "bench", &name, &conf);
                let took = start.elapsed();
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(out.status.success(), "{command} {name}: {stdout}");
                took
            }
        });
        let mut took = Vec::new();
        if at_once {
            let handles: Vec<_> = jobs.map(tokio::task::spawn_blocking).collect();
            for handle in handles {
                took.push(handle.await.expect("CNI job"));
            }
        } else {
            for job in jobs {
                took.push(tokio::task::spawn_blocking(job).await.expect("CNI job"));
            }
        }
        times.push(took);
    }
    let del = times.pop().unwrap_or_default();
    (times.pop().unwrap_or_default(), del)
}

/// Debian's bridge + host-local for `n` pods, all ADDs then all DELs, one after the
/// other or all at once; from threads inside a namespace made for the bench (the
/// plugins create the bridge in the caller's namespace; the host's stays untouched).
fn bridge_pods(n: usize, at_once: bool) -> (Vec<Duration>, Vec<Duration>) {
    let host = PodNetns::new();
    let dir = tempfile::tempdir().expect("temp dir");
    let data_dir = dir.path().join("host-local").display().to_string();
    let conf = serde_json::json!({
        "cniVersion": "1.0.0",
        "name": "bench-bridge",
        "plugins": [{
            "type": "bridge", "bridge": "cnibench0", "isGateway": true, "ipMasq": false,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.0.0/16"}]],
                     "dataDir": data_dir},
        }],
    });
    let list = NetworkConfigList::from_slice(conf.to_string().as_bytes()).expect("conflist");
    let runtime = CniRuntime::new(vec!["/usr/lib/cni".into()], dir.path().join("cache"));
    let pods: Vec<_> = (0..n).map(|_| (PodNetns::new(), container_id())).collect();
    let bench_ns = host.path();
    let enter = || {
        let file = std::fs::File::open(&bench_ns).expect("bench namespace");
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
    };
    let one = |add: bool, netns: &PodNetns, id: &str| {
        let rt = RuntimeConf::new(id, netns.path(), "eth0");
        let start = Instant::now();
        if add {
            runtime.add_network_list(&list, &rt).expect("bridge ADD");
        } else {
            runtime.del_network_list(&list, &rt).expect("bridge DEL");
        }
        start.elapsed()
    };
    let start_line = std::sync::Barrier::new(pods.len());
    let mut times = Vec::new();
    for add in [true, false] {
        let took: Vec<Duration> = std::thread::scope(|s| {
            if at_once {
                let (start_line, enter, one) = (&start_line, &enter, &one);
                let jobs: Vec<_> = pods
                    .iter()
                    .map(|(netns, id)| {
                        s.spawn(move || {
                            enter();
                            start_line.wait();
                            one(add, netns, id)
                        })
                    })
                    .collect();
                jobs.into_iter()
                    .map(|j| j.join().expect("bridge job"))
                    .collect()
            } else {
                s.spawn(|| {
                    enter();
                    pods.iter().map(|(netns, id)| one(add, netns, id)).collect()
                })
                .join()
                .expect("bridge thread")
            }
        });
        times.push(took);
    }
    let del = times.pop().unwrap_or_default();
    (times.pop().unwrap_or_default(), del)
}

fn report(what: &str, n: usize, took: &[Duration]) {
    let mut ms: Vec<f64> = took.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1];
    let (p50, p99) = (at(0.50), at(0.99));
    println!("{what:<36} n={n:<4} p50 {p50:>7.1} ms   p99 {p99:>7.1} ms");
}
