//! Per-command cost of our `ovn-nbctl` (examples/src/bin/ovn-nbctl.rs) against the real
//! `ovn-nbctl` (OVN 23.03) on the same ovsdb-server, on an empty Northbound database and
//! on one holding 25,000 logical switches (inserted in one transaction). Every sample is
//! a whole process run — connect, fetch schema and tables, transact, exit — which is what
//! a caller of either tool pays. Flat sampling keeps each case at ~10-20 invocations.
//!
//! Our binary is taken from `OVN_NBCTL_BIN` if set, else `target/release/ovn-nbctl`
//! (built with `cargo build --release -p kube-ovn-examples --bin ovn-nbctl` if missing;
//! run that command first after changing the tool).

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use ovn_harness::{Db, OvsdbServer};
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const SWITCHES: usize = 25_000;

/// Our ovn-nbctl binary, built on demand.
fn our_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("OVN_NBCTL_BIN") {
        return PathBuf::from(p);
    }
    // target/release/deps/nbctl-<hash> -> target/release/ovn-nbctl
    let exe = std::env::current_exe().expect("bench executable path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .to_path_buf();
    let bin = dir.join("ovn-nbctl");
    // Built on demand only: `cargo bench` holds the build lock while benchmarks run, so
    // a cargo call from here would wait for it. Rebuild by hand after changing the tool.
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "-p",
                "kube-ovn-examples",
                "--bin",
                "ovn-nbctl",
            ])
            .status()
            .expect("run cargo build for ovn-nbctl");
        assert!(status.success(), "building ovn-nbctl failed");
    }
    bin
}

/// Runs one tool invocation; panics if it fails (a failing command measures nothing).
fn invoke(program: &str, remote: &str, args: &[&str]) {
    let out = Command::new(program)
        .arg(format!("--db={remote}"))
        .args(args)
        .output()
        .expect("spawn ovn-nbctl");
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Inserts `n` switches (`bulk0`..) in one `transact`, straight over the socket: the
/// command line of either tool would be too long for 25k commands.
fn populate(socket: &str, n: usize) {
    let mut ops = vec![json!("OVN_Northbound")];
    ops.extend((0..n).map(
        |i| json!({"op": "insert", "table": "Logical_Switch", "row": {"name": format!("bulk{i}")}}),
    ));
    let mut stream = UnixStream::connect(socket).expect("connect NB socket");
    let request = json!({"id": 1, "method": "transact", "params": ops});
    stream
        .write_all(request.to_string().as_bytes())
        .expect("send transact");
    let reply: Value = serde_json::Deserializer::from_reader(stream)
        .into_iter::<Value>()
        .next()
        .expect("reply")
        .expect("JSON reply");
    let results = reply["result"].as_array().expect("transact result array");
    assert!(
        results.iter().all(|r| r.get("error").is_none()),
        "populate failed: {reply}"
    );
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn unique(prefix: &str) -> String {
    format!("{prefix}{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

fn bench_database(c: &mut Criterion, label: &str, remote: &str, ours: &str) {
    invoke("ovn-nbctl", remote, &["--may-exist", "ls-add", "sw0"]);
    let mut group = c.benchmark_group(format!("nbctl/{label}"));
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));
    for (tool, program) in [("real", "ovn-nbctl"), ("ours", ours)] {
        group.bench_function(format!("{tool}/ls-add"), |b| {
            b.iter(|| invoke(program, remote, &["ls-add", &unique(&format!("{tool}-ls"))]))
        });
        group.bench_function(format!("{tool}/lsp-add"), |b| {
            b.iter(|| {
                invoke(
                    program,
                    remote,
                    &["lsp-add", "sw0", &unique(&format!("{tool}-lsp"))],
                )
            })
        });
        group.bench_function(format!("{tool}/get"), |b| {
            b.iter(|| invoke(program, remote, &["get", "Logical_Switch", "sw0", "name"]))
        });
        group.bench_function(format!("{tool}/lsp-list"), |b| {
            b.iter(|| invoke(program, remote, &["lsp-list", "sw0"]))
        });
    }
    group.finish();
}

fn bench_nbctl(c: &mut Criterion) {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovn-nbctl"]) {
        return;
    }
    let ours = our_binary();
    let ours = ours.to_str().expect("utf-8 path");
    let empty = OvsdbServer::start(Db::Northbound).expect("start empty NB");
    bench_database(c, "empty", &empty.unix_remote(), ours);
    drop(empty);

    let big = OvsdbServer::start(Db::Northbound).expect("start NB for 25k switches");
    let remote = big.unix_remote();
    populate(remote.strip_prefix("unix:").expect("unix remote"), SWITCHES);
    bench_database(c, "25k-switches", &remote, ours);
}

criterion_group!(benches, bench_nbctl);
criterion_main!(benches);
