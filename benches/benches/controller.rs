//! The controller at scale (issue 12): the real `kube-ovn-controller` binary (this
//! workspace's, in release, or `KUBE_OVN_CONTROLLER`) against the embedded API server and
//! a real NB `ovsdb-server` (ovn-harness), each mode with its peer in the same run.
//!
//! * `pods`: 10,000 pods in 100 namespaces, each namespace bound to its own Subnet,
//!   created as fast as the API server takes them (64 in flight); timed from the first
//!   create until every pod carries `ovn.kubernetes.io/routed=true` (a watch). Pods per
//!   second, and the controller process's RSS growth per pod. Peer: the raw `ovsdb`
//!   client inserting the same Logical_Switch_Port rows with their switch mutations on
//!   the same server, one switch (100 rows) per transaction. Goal: 1,000 pods/s.
//! * `restart`: 100,000 pods the controller had allocated (annotations, finalizer, IP
//!   objects, NB ports), seeded untimed; a fresh controller process starts and one new
//!   pod is created at once; time from the process's start until that pod is
//!   `allocated`, its address checked against all seeded ones. Goal: under 30 s.
//!
//! Run (the binary first: `cargo bench` holds the target directory while the bench
//! runs, and the bench refuses a binary older than its sources):
//! `cargo build --release -p kube-ovn-controller --bin kube-ovn-controller &&
//! cargo bench -p kube-ovn-benches --bench controller [-- pods|restart]` (both when
//! neither is named). Smaller runs: `CONTROLLER_BENCH_PODS` (pods mode, default
//! 10000), `CONTROLLER_BENCH_RESTART_PODS` (default 100000) and
//! `CONTROLLER_BENCH_NAMESPACES` (default 100); the controller logs at
//! `CONTROLLER_BENCH_LOG` (its `RUST_LOG`, default `info`) into `target/tmp/controller-bench/`.

#[path = "controller/cluster.rs"]
mod cluster;
#[path = "controller/pods.rs"]
mod pods;
#[path = "controller/restart.rs"]
mod restart;

use std::time::Duration;

fn count(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Ok(v) => v
            .replace(['_', ','], "")
            .parse()
            .unwrap_or_else(|_| panic!("{var}={v} is not a count")),
        Err(_) => default,
    }
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn print_pods(r: &pods::PodsReport) {
    let pods_per_s = r.pods as f64 / r.routed.as_secs_f64();
    let peer_per_s = r.peer_rows as f64 / r.peer_time.as_secs_f64();
    let growth = r.rss_after.saturating_sub(r.rss_before) as f64 * 1024.0 / r.pods as f64;
    println!(
        "\ncontroller pods: {} pods in {} namespaces/subnets (load before: {})",
        r.pods, r.namespaces, r.load
    );
    println!("| measure | value |\n|---|---|");
    println!(
        "| all created (API answered) | {} ({:.0} creates/s) |",
        secs(r.created),
        r.pods as f64 / r.created.as_secs_f64()
    );
    println!(
        "| all routed | {} ({pods_per_s:.0} pods/s) |",
        secs(r.routed)
    );
    println!(
        "| controller RSS | {} MiB before, {} MiB after, peak {} MiB: {:.1} KiB per pod |",
        r.rss_before / 1024,
        r.rss_after / 1024,
        r.rss_peak / 1024,
        growth / 1024.0
    );
    println!(
        "| CPU during the run | controller {}, bench process (API server, client, watch) {}, NB ovsdb-server {} |",
        secs(r.controller_cpu),
        secs(r.bench_cpu),
        secs(r.nb_cpu)
    );
    println!(
        "| raw ovsdb peer | {} rows in {} transactions in {} ({peer_per_s:.0} rows/s) |",
        r.peer_rows,
        r.peer_txns,
        secs(r.peer_time)
    );
    println!(
        "| ours / peer | {:.3} (goal 1,000 pods/s: {}) |",
        pods_per_s / peer_per_s,
        if pods_per_s >= 1000.0 {
            "met"
        } else {
            "not met"
        }
    );
}

fn print_restart(r: &restart::RestartReport) {
    println!(
        "\ncontroller restart: {} allocated pods in {} namespaces/subnets (load before start: {})",
        r.pods, r.namespaces, r.load
    );
    println!(
        "seeding (untimed): API objects {}, NB ports {}; bench process (API server) RSS {} MiB",
        secs(r.seed_api),
        secs(r.seed_nb),
        r.api_rss / 1024
    );
    println!("| phase (from process start) | at |\n|---|---|");
    for (what, at) in &r.phases {
        println!("| {what} | {} |", at.map_or("-".into(), secs));
    }
    println!(
        "| **new pod allocated** ({}) | **{}** (goal < 30 s: {}) |",
        r.fresh_ip,
        secs(r.first_allocated),
        if r.first_allocated < Duration::from_secs(30) {
            "met"
        } else {
            "not met"
        }
    );
    println!(
        "| controller idle (every old pod looked at) | {} |",
        r.idle.map_or("not within the deadline".into(), secs)
    );
    println!(
        "controller CPU {}, peak RSS {} MiB, {} failed reconciles (retried)",
        secs(r.controller_cpu),
        r.rss_peak / 1024,
        r.failed_reconciles
    );
}

fn main() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    // cargo bench passes `--bench`; the mode is the first other word
    let mode = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let namespaces = count("CONTROLLER_BENCH_NAMESPACES", 100);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (run_pods, run_restart) = match mode.as_deref() {
        None => (true, true),
        Some("pods") => (true, false),
        Some("restart") => (false, true),
        Some(other) => panic!("unknown mode {other}: pods or restart"),
    };
    if run_pods {
        let n = count("CONTROLLER_BENCH_PODS", 10_000);
        print_pods(&rt.block_on(pods::run(n, namespaces)));
    }
    if run_restart {
        let n = count("CONTROLLER_BENCH_RESTART_PODS", 100_000);
        print_restart(&rt.block_on(restart::run(n, namespaces)));
    }
}
