//! One pod interface set up and torn down (veth pair, move into the pod's
//! namespace, rename to eth0, lo/eth0 up, one address, default route,
//! delete) through the `datapath` crate, beside the same steps done with
//! `ip` commands the way shell-based CNI plugins do. Needs root: it creates
//! one network namespace and removes it at the end.
//!
//! Run: `cargo bench -p kube-ovn-benches --bench datapath`

use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use datapath::{Ipv4Dad, Ipv6Dad, PodInterface};

const NETNS: &str = "dpbench";
const HOST_END: &str = "dpbench0001_h";
const PEER: &str = "dpbench0001_c";

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The steps a shell-based plugin runs for one pod, then the delete.
fn with_ip_commands() {
    ip(&[
        "link", "add", HOST_END, "mtu", "1400", "type", "veth", "peer", "name", PEER, "mtu", "1400",
    ]);
    ip(&["link", "set", HOST_END, "up"]);
    ip(&["link", "set", PEER, "netns", NETNS]);
    ip(&["-n", NETNS, "link", "set", PEER, "name", "eth0"]);
    ip(&["-n", NETNS, "link", "set", "lo", "up"]);
    ip(&["-n", NETNS, "link", "set", "eth0", "up"]);
    ip(&["-n", NETNS, "addr", "add", "10.90.0.2/24", "dev", "eth0"]);
    ip(&["-n", NETNS, "route", "add", "default", "via", "10.90.0.1"]);
    ip(&["link", "del", HOST_END]);
}

fn pod_spec() -> PodInterface {
    let mut pod = PodInterface::new("dpbench0001", format!("/var/run/netns/{NETNS}"), "eth0")
        .expect("valid spec");
    pod.mtu = Some(1400);
    pod.container.addresses = vec!["10.90.0.2/24".parse().unwrap()];
    pod.container.gateways = vec!["10.90.0.1".parse().unwrap()];
    // Same work as the ip sequence: no ARP, no DAD, no gateway check.
    pod.container.ipv4_dad = Ipv4Dad::Off;
    pod.container.ipv6_dad = Ipv6Dad::Skip;
    pod
}

async fn with_crate(pod: &PodInterface) {
    datapath::setup(pod).await.expect("setup");
    datapath::teardown(pod).await.expect("teardown");
}

/// Mean time per pod over `n` rounds.
fn per_pod(n: u32, mut round: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        round();
    }
    start.elapsed() / n
}

fn bench(c: &mut Criterion) {
    let _ = Command::new("ip").args(["netns", "del", NETNS]).output();
    let created = Command::new("ip").args(["netns", "add", NETNS]).status();
    if !created.is_ok_and(|s| s.success()) {
        eprintln!("datapath bench skipped: cannot create a network namespace (needs root)");
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let pod = pod_spec();

    let mut group = c.benchmark_group("pod_interface_setup_teardown");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(5));
    group.bench_function("datapath_crate", |b| {
        b.to_async(&rt).iter(|| with_crate(&pod))
    });
    group.bench_function("ip_commands", |b| b.iter(with_ip_commands));
    group.finish();

    let rounds = 30;
    let ours = per_pod(rounds, || rt.block_on(with_crate(&pod)));
    let shell = per_pod(rounds, with_ip_commands);
    println!(
        "datapath summary over {rounds} pods: crate {:.2} ms/pod, ip commands {:.2} ms/pod, \
         ip/crate ratio {:.1}x",
        ours.as_secs_f64() * 1e3,
        shell.as_secs_f64() * 1e3,
        shell.as_secs_f64() / ours.as_secs_f64()
    );
    ip(&["netns", "del", NETNS]);
}

criterion_group!(benches, bench);
criterion_main!(benches);
