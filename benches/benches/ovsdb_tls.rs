//! OVSDB over TLS beside the unix socket, in one run: one ovsdb-server serving
//! OVN_Northbound on both a unix socket and `pssl:` (certificates from ovn-harness's test
//! CA, ECDSA P-256, as Kube-OVN would use with `ENABLE_SSL`), and two clients of ours, one
//! per transport, doing the same work:
//!
//! - sequential single-insert transactions (one round trip each),
//! - pipelined single-insert transactions (1000 in flight on one connection).
//!
//! Each client has its own tokio runtime with one worker thread, which runs the client's
//! connection task while the other client is being measured: ovsdb-server probes idle
//! TLS connections (5 s) and drops those that do not answer, so a client whose runtime
//! sits unpolled (a current-thread runtime, as in the `ovsdb` bench) would lose its
//! connection. Requests are made from the bench thread (`block_on`); a sequential caller
//! reads its replies itself, so round trips mostly stay on that thread.
//! Both insert into the same database, which grows as they go, so besides criterion's
//! figures the bench prints paired rounds that alternate which transport goes first; the
//! printed `tls/unix` is total TLS time over total unix time (the cost factor of TLS),
//! with the median of the per-round ratios beside it.
//!
//! Run: `cargo bench -p kube-ovn-benches --bench ovsdb_tls`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ovn_harness::{Db, OvsdbServer, Pki};
use ovsdb::client::{ClientOptions, TlsConfig};
use ovsdb::{Atom, Client, Operation, Row};

const NB: &str = "OVN_Northbound";
const PIPELINE: u64 = 1000;

/// One client and the runtime it runs on.
struct Side {
    label: &'static str,
    rt: tokio::runtime::Runtime,
    client: Client,
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

fn insert(prefix: &str) -> Operation {
    let name = format!("{prefix}{}", UNIQUE.fetch_add(1, Ordering::Relaxed));
    Operation::insert("Logical_Switch", Row::new().with("name", Atom::from(name))).into()
}

impl Side {
    fn connect(label: &'static str, options: ClientOptions) -> Side {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(Client::connect_with(options)).unwrap();
        Side { label, rt, client }
    }

    /// `iters` sequential single-insert transactions.
    fn sequential(&self, iters: u64) -> Duration {
        self.rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                self.client.transact(NB, &[insert("s")]).await.unwrap();
            }
            start.elapsed()
        })
    }

    /// `iters` times [`PIPELINE`] single-insert transactions in flight at once; building
    /// the operations is not timed.
    fn pipelined(&self, iters: u64) -> Duration {
        self.rt.block_on(async {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                let ops: Vec<[Operation; 1]> = (0..PIPELINE).map(|_| [insert("p")]).collect();
                let start = Instant::now();
                let all = ops.iter().map(|op| self.client.transact(NB, op));
                for result in futures::future::join_all(all).await {
                    result.unwrap();
                }
                elapsed += start.elapsed();
            }
            elapsed
        })
    }
}

type Workload = fn(&Side, u64) -> Duration;

/// Criterion figures for each side, then `rounds` paired rounds of `per_round`
/// iterations, alternating which side goes first.
fn compare(
    c: &mut Criterion,
    name: &str,
    per_iter: u64,
    (rounds, per_round): (usize, u64),
    sides: [&Side; 2],
    work: Workload,
) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(per_iter));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(3));
    for side in sides {
        group.bench_function(side.label, |b| b.iter_custom(|iters| work(side, iters)));
    }
    group.finish();

    let [unix, tls] = sides;
    let (mut unix_total, mut tls_total) = (Duration::ZERO, Duration::ZERO);
    let mut ratios = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let (u, t) = if round % 2 == 0 {
            let u = work(unix, per_round);
            (u, work(tls, per_round))
        } else {
            let t = work(tls, per_round);
            (work(unix, per_round), t)
        };
        unix_total += u;
        tls_total += t;
        ratios.push(t.as_secs_f64() / u.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    let per_op =
        |total: Duration| total.as_secs_f64() * 1e6 / (rounds as u64 * per_round * per_iter) as f64;
    println!(
        "{name}: unix {:.1} us/txn, tls {:.1} us/txn, tls/unix {:.2} (median round {:.2}; \
         {rounds} paired rounds of {per_round})",
        per_op(unix_total),
        per_op(tls_total),
        tls_total.as_secs_f64() / unix_total.as_secs_f64(),
        ratios[ratios.len() / 2],
    );
}

fn benches(c: &mut Criterion) {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    let pki = Pki::new("ovn-ca").expect("test CA");
    let ovn = pki.issue("ovn").expect("certificate");
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).expect("start ovsdb-server");
    let tls = TlsConfig::from_files(&ovn.private_key, &ovn.certificate, &ovn.ca_cert).unwrap();
    let unix = Side::connect("unix", ClientOptions::new([server.unix_remote()]).unwrap());
    let ssl = Side::connect(
        "ssl",
        ClientOptions::new([server.ssl_remote().unwrap()])
            .unwrap()
            .with_tls(tls),
    );
    compare(
        c,
        "ovsdb_tls_sequential_insert",
        1,
        (20, 200),
        [&unix, &ssl],
        Side::sequential,
    );
    compare(
        c,
        "ovsdb_tls_pipelined_insert",
        PIPELINE,
        (10, 1),
        [&unix, &ssl],
        Side::pipelined,
    );
}

criterion_group!(ovsdb_tls_benches, benches);
criterion_main!(ovsdb_tls_benches);
