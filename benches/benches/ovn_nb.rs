//! 10k `lsp-add`s through the typed `ovn-nb` crate against the same through
//! the raw `ovsdb` client, on one real ovsdb-server (OVN_Northbound, unix
//! socket, started through ovn-harness), in one run.
//!
//! Each `lsp-add` is its own transaction, as `ovn-nbctl lsp-add` would be:
//! - typed: `NbTxn::lsp_add(switch, port)` — the switch is found by name through
//!   the replica's client-side index (never a scan), the port name is checked
//!   against the index too, then insert + mutate-by-`_uuid` are validated and
//!   sent; the call returns once the replica shows the new port.
//! - raw: `Operation::insert` + `Operation::mutate` by the switch's known
//!   `_uuid`, sent with `Client::transact` (no replica, no checks).
//! - raw + replica: the same raw operations sent through the typed client's own
//!   connection, whose monitor keeps the replica the typed path needs: the server
//!   serialises and the client applies one update per transaction. This is the
//!   fastest a client that can look names up without scanning can go, so
//!   `typed/(raw + replica)` is the cost of the typed layer itself.
//!
//! One criterion iteration = 10 000 sequential transactions into a fresh switch.
//! Prints the three throughputs and the ratios `typed/raw` and `typed/(raw + replica)`.
//! Run: `cargo bench -p kube-ovn-benches --bench ovn_nb`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use ovn_harness::{Db, OvsdbServer};
use ovn_nb::NbClient;
use ovsdb::client::Client;
use ovsdb::operation::{Condition, Mutation, Operation};
use ovsdb::value::{NamedUuid, Row};

const PORTS: u64 = 10_000;
const NB: &str = "OVN_Northbound";

#[derive(Default)]
struct Tally {
    elapsed: Duration,
    ports: u64,
}

async fn typed_run(nb: &NbClient, switch: &str) -> Duration {
    let mut txn = nb.txn();
    txn.ls_add(switch).expect("ls_add");
    nb.commit(txn).await.expect("ls_add commit");
    let start = Instant::now();
    for i in 0..PORTS {
        let mut txn = nb.txn();
        txn.lsp_add(switch, &format!("{switch}-p{i}"))
            .expect("lsp_add");
        nb.commit(txn).await.expect("lsp_add commit");
    }
    start.elapsed()
}

async fn raw_run(client: &Client, switch: &str) -> Duration {
    let created = client
        .transact(
            NB,
            &[Operation::insert("Logical_Switch", Row::new().with("name", switch)).into()],
        )
        .await
        .expect("raw ls insert");
    let ls = created[0].uuid().expect("ls uuid");
    let port = NamedUuid::new("port").unwrap();
    let start = Instant::now();
    for i in 0..PORTS {
        let ops: Vec<Operation> = vec![
            Operation::insert(
                "Logical_Switch_Port",
                Row::new().with("name", format!("{switch}-p{i}")),
            )
            .with_uuid_name(port.clone())
            .into(),
            Operation::mutate("Logical_Switch")
                .with_condition(Condition::eq("_uuid", ls))
                .with_mutation(Mutation::insert("ports", port.clone()))
                .into(),
        ];
        client.transact(NB, &ops).await.expect("raw lsp add");
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = OvsdbServer::start(Db::Northbound).expect("NB server");
    let remote = server.unix_remote();
    let nb = rt
        .block_on(NbClient::connect(&remote))
        .expect("typed client");
    let raw = rt.block_on(Client::connect(&remote)).expect("raw client");
    let typed_tally = Arc::new(Mutex::new(Tally::default()));
    let raw_tally = Arc::new(Mutex::new(Tally::default()));
    let replica_tally = Arc::new(Mutex::new(Tally::default()));

    let mut group = c.benchmark_group("lsp_add_10k");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Elements(PORTS));
    let mut run = 0u64;
    group.bench_function("typed ovn-nb", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                run += 1;
                total += rt.block_on(typed_run(&nb, &format!("t{run}")));
            }
            let mut t = typed_tally.lock().unwrap();
            t.elapsed += total;
            t.ports += iters * PORTS;
            total
        })
    });
    group.bench_function("raw ovsdb client", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                run += 1;
                total += rt.block_on(raw_run(&raw, &format!("r{run}")));
            }
            let mut t = raw_tally.lock().unwrap();
            t.elapsed += total;
            t.ports += iters * PORTS;
            total
        })
    });
    group.bench_function("raw ovsdb client + replica", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                run += 1;
                total += rt.block_on(raw_run(nb.db().client(), &format!("m{run}")));
            }
            let mut t = replica_tally.lock().unwrap();
            t.elapsed += total;
            t.ports += iters * PORTS;
            total
        })
    });
    group.finish();

    let rate = |t: &Tally| t.ports as f64 / t.elapsed.as_secs_f64();
    let (typed, raw, replica) = (
        rate(&typed_tally.lock().unwrap()),
        rate(&raw_tally.lock().unwrap()),
        rate(&replica_tally.lock().unwrap()),
    );
    println!(
        "lsp-add: typed {typed:.0}/s, raw {raw:.0}/s, raw + replica {replica:.0}/s; \
         typed/raw {:.2}, typed/(raw + replica) {:.2}",
        typed / raw,
        typed / replica
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
