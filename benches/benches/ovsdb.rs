//! OVSDB client benchmarks against a real ovsdb-server serving OVN_Northbound on a unix
//! socket (started through ovn-harness), each workload beside the same workload done by
//! a minimal raw-socket client (hand-written JSON over a blocking `UnixStream`):
//!
//! - sequential single-insert transactions (one round trip each),
//! - pipelined single-insert transactions (1000 in flight on one connection),
//! - one transaction of 2000 inserts,
//! - decoding a ~7 MB `monitor_cond_since` reply of 25k `Logical_Switch` + 10k
//!   `Logical_Switch_Port` rows into the replica cache (framing + message + rows + cache).
//!
//! Each pair prints `ours`, `raw` and `ours/raw` (throughput ratio; goal >= 0.90). Our
//! client runs on a current-thread tokio runtime, like the single-threaded raw client.
//! Run: `cargo bench -p kube-ovn-benches --bench ovsdb`.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ovn_harness::{Db, OvsdbServer};
use ovsdb::update::MonitorCondSinceReply;
use ovsdb::{Atom, Client, DatabaseSchema, Deframer, Message, Operation, Row, Writer};

const NB: &str = "OVN_Northbound";
const PIPELINE: u64 = 1000;
const BATCH: u64 = 2000;

/// Time per element measured by one variant, summed over criterion's iterations.
#[derive(Default)]
struct Tally {
    elapsed: Duration,
    elements: u64,
}

impl Tally {
    fn per_second(&self) -> f64 {
        self.elements as f64 / self.elapsed.as_secs_f64()
    }
}

fn report(what: &str, unit: &str, ours: &Mutex<Tally>, raw: &Mutex<Tally>) {
    let (ours, raw) = (ours.lock().unwrap(), raw.lock().unwrap());
    if ours.elements == 0 || raw.elements == 0 {
        return; // filtered out on the command line
    }
    let (ours, raw) = (ours.per_second(), raw.per_second());
    println!(
        "ovsdb {what}: ours {ours:.0} {unit}/s ({:.3} ms each), raw socket {raw:.0} {unit}/s ({:.3} ms each), ours/raw = {:.2}",
        1000.0 / ours,
        1000.0 / raw,
        ours / raw
    );
}

/// The minimal client the figures are compared with: a blocking unix socket, requests
/// written as literal JSON, replies found by counting braces (these replies hold no
/// braces inside strings).
struct RawClient {
    stream: UnixStream,
    buf: Vec<u8>,
    next_id: u64,
}

impl RawClient {
    fn connect(path: &str) -> RawClient {
        RawClient {
            stream: UnixStream::connect(path).unwrap(),
            buf: vec![0; 1 << 16],
            next_id: 1,
        }
    }

    fn insert_request(&mut self, name: &str) -> String {
        self.next_id += 1;
        format!(
            r#"{{"id":{},"method":"transact","params":["{NB}",{{"op":"insert","table":"Logical_Switch","row":{{"name":"{name}"}}}}]}}"#,
            self.next_id
        )
    }

    fn batch_request(&mut self, prefix: &str, n: u64) -> String {
        self.next_id += 1;
        let mut req = format!(
            r#"{{"id":{},"method":"transact","params":["{NB}""#,
            self.next_id
        );
        for i in 0..n {
            req.push_str(&format!(
                r#",{{"op":"insert","table":"Logical_Switch","row":{{"name":"{prefix}{i}"}}}}"#
            ));
        }
        req.push_str("]}");
        req
    }

    /// Reads until `replies` whole top-level objects have arrived.
    fn read_replies(&mut self, mut replies: u64) {
        let mut depth = 0i64;
        while replies > 0 {
            let n = self.stream.read(&mut self.buf).unwrap();
            assert!(n > 0, "server closed the raw connection");
            for &b in &self.buf[..n] {
                match b {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            replies -= 1;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn send(&mut self, request: &str) {
        self.stream.write_all(request.as_bytes()).unwrap();
    }
}

fn insert(name: String) -> Operation {
    Operation::insert("Logical_Switch", Row::new().with("name", Atom::from(name))).into()
}

/// What the transaction benchmarks share: one client of ours, one raw client, both on the
/// same server, and a counter for unique switch names.
struct Ctx {
    rt: tokio::runtime::Runtime,
    client: Client,
    raw: Mutex<RawClient>,
    unique: Arc<AtomicU64>,
}

impl Ctx {
    fn name(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.unique.fetch_add(1, Ordering::Relaxed))
    }
}

fn record(tally: &Mutex<Tally>, elapsed: Duration, elements: u64) -> Duration {
    let mut t = tally.lock().unwrap();
    t.elapsed += elapsed;
    t.elements += elements;
    elapsed
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
    elements: u64,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(elements));
    group
}

fn bench_sequential(c: &mut Criterion, ctx: &Ctx) {
    let (ours, raw) = (Mutex::new(Tally::default()), Mutex::new(Tally::default()));
    let mut g = group(c, "ovsdb_sequential_insert", 1);
    g.bench_function("ours", |b| {
        b.to_async(&ctx.rt).iter_custom(|iters| {
            let ours = &ours;
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    ctx.client
                        .transact(NB, &[insert(ctx.name("s"))])
                        .await
                        .unwrap();
                }
                record(ours, start.elapsed(), iters)
            }
        })
    });
    g.bench_function("raw", |b| {
        b.iter_custom(|iters| {
            let mut raw_client = ctx.raw.lock().unwrap();
            let start = Instant::now();
            for _ in 0..iters {
                let req = raw_client.insert_request(&ctx.name("s"));
                raw_client.send(&req);
                raw_client.read_replies(1);
            }
            record(&raw, start.elapsed(), iters)
        })
    });
    g.finish();
    report("sequential single-insert", "txn", &ours, &raw);
}

fn bench_pipelined(c: &mut Criterion, ctx: &Ctx) {
    let (ours, raw) = (Mutex::new(Tally::default()), Mutex::new(Tally::default()));
    let mut g = group(c, "ovsdb_pipelined_insert", PIPELINE);
    g.bench_function("ours", |b| {
        b.to_async(&ctx.rt).iter_custom(|iters| {
            let ours = &ours;
            async move {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iters {
                    let ops: Vec<[Operation; 1]> =
                        (0..PIPELINE).map(|_| [insert(ctx.name("p"))]).collect();
                    let start = Instant::now();
                    let all = ops.iter().map(|op| ctx.client.transact(NB, op));
                    for result in futures::future::join_all(all).await {
                        result.unwrap();
                    }
                    elapsed += start.elapsed();
                }
                record(ours, elapsed, iters * PIPELINE)
            }
        })
    });
    g.bench_function("raw", |b| {
        b.iter_custom(|iters| {
            let mut raw_client = ctx.raw.lock().unwrap();
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                let requests: String = (0..PIPELINE)
                    .map(|_| raw_client.insert_request(&ctx.name("p")))
                    .collect();
                let start = Instant::now();
                raw_client.send(&requests);
                raw_client.read_replies(PIPELINE);
                elapsed += start.elapsed();
            }
            record(&raw, elapsed, iters * PIPELINE)
        })
    });
    g.finish();
    report(
        "pipelined single-insert (1000 in flight)",
        "txn",
        &ours,
        &raw,
    );
}

fn bench_batch(c: &mut Criterion, ctx: &Ctx) {
    let (ours, raw) = (Mutex::new(Tally::default()), Mutex::new(Tally::default()));
    let mut g = group(c, "ovsdb_batch_insert", BATCH);
    g.bench_function("ours", |b| {
        b.to_async(&ctx.rt).iter_custom(|iters| {
            let ours = &ours;
            async move {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iters {
                    let prefix = ctx.name("b") + "-";
                    // Building the operations is part of the client's cost, as the raw
                    // client's string building is part of its own.
                    let start = Instant::now();
                    let ops: Vec<Operation> =
                        (0..BATCH).map(|i| insert(format!("{prefix}{i}"))).collect();
                    let results = ctx.client.transact(NB, &ops).await.unwrap();
                    assert_eq!(results.len() as u64, BATCH);
                    elapsed += start.elapsed();
                }
                record(ours, elapsed, iters * BATCH)
            }
        })
    });
    g.bench_function("raw", |b| {
        b.iter_custom(|iters| {
            let mut raw_client = ctx.raw.lock().unwrap();
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                let prefix = ctx.name("b") + "-";
                let start = Instant::now();
                let request = raw_client.batch_request(&prefix, BATCH);
                raw_client.send(&request);
                raw_client.read_replies(1);
                elapsed += start.elapsed();
            }
            record(&raw, elapsed, iters * BATCH)
        })
    });
    g.finish();
    report(
        "batch of 2000 inserts in one transaction",
        "row",
        &ours,
        &raw,
    );
}

/// A `monitor_cond_since` reply as ovsdb-server writes it: 25k switches, 10k ports
/// (one-element sets as bare atoms, default-valued columns left out).
fn monitor_reply(switches: usize, ports: usize) -> Vec<u8> {
    let uuid = |kind: u32, i: usize| format!("{kind:08x}-0000-4000-8000-{i:012x}");
    let mut text = String::with_capacity(8 << 20);
    text.push_str(
        r#"{"id":7,"result":[false,"00000000-0000-0000-0000-000000000000",{"Logical_Switch":{"#,
    );
    for i in 0..switches {
        if i > 0 {
            text.push(',');
        }
        // Ports are spread over the first switches, 4 per switch.
        let ports_json = match i * 4 < ports {
            true => {
                let list: Vec<String> = (i * 4..(i * 4 + 4).min(ports))
                    .map(|p| format!(r#"["uuid","{}"]"#, uuid(2, p)))
                    .collect();
                format!(r#","ports":["set",[{}]]"#, list.join(","))
            }
            false => String::new(),
        };
        text.push_str(&format!(
            r#""{}":{{"initial":{{"name":"ls-{i}","external_ids":["map",[["kube-ovn/logical_router","ovn-cluster"],["vendor","kube-ovn"]]],"other_config":["map",[["subnet","10.{}.{}.0/24"]]]{ports_json}}}}}"#,
            uuid(1, i),
            (i / 256) % 256,
            i % 256
        ));
    }
    text.push_str(r#"},"Logical_Switch_Port":{"#);
    for p in 0..ports {
        if p > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            r#""{}":{{"initial":{{"name":"pod-{p}.default","addresses":"00:00:00:{:02x}:{:02x}:{:02x} 10.16.{}.{}","port_security":"00:00:00:{:02x}:{:02x}:{:02x} 10.16.{}.{}","external_ids":["map",[["ls","ls-{}"],["pod","pod-{p}"],["vendor","kube-ovn"]]]}}}}"#,
            uuid(2, p),
            p >> 16 & 255, p >> 8 & 255, p & 255, p / 256, p % 256,
            p >> 16 & 255, p >> 8 & 255, p & 255, p / 256, p % 256,
            p / 4
        ));
    }
    text.push_str(r#"}}],"error":null}"#);
    text.into_bytes()
}

fn bench_cache_decode(c: &mut Criterion) {
    let schema_text = std::fs::read_to_string(Db::Northbound.schema_path()).unwrap();
    let schema = Arc::new(DatabaseSchema::from_json_str(&schema_text).unwrap());
    let bytes = monitor_reply(25_000, 10_000);
    println!("ovsdb monitor reply: {:.1} MB", bytes.len() as f64 / 1e6);
    let decode = |bytes: &[u8]| {
        let mut deframer = Deframer::default();
        deframer.push(bytes);
        let Some(Message::Reply { result, .. }) = deframer.next_message().unwrap() else {
            panic!("not a reply")
        };
        let reply = MonitorCondSinceReply::from_str(result.get(), &schema).unwrap();
        let mut writer = Writer::new(schema.clone());
        writer.apply_monitor_cond_since(reply).unwrap();
        writer
    };
    let writer = decode(&bytes);
    assert_eq!(writer.store().len("Logical_Switch"), 25_000);
    assert_eq!(writer.store().len("Logical_Switch_Port"), 10_000);

    let mut group = c.benchmark_group("ovsdb_cache_decode");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    let total = Mutex::new(Tally::default());
    group.bench_function("monitor_reply_25k_ls_10k_lsp", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                drop(decode(&bytes));
            }
            let elapsed = start.elapsed();
            let mut t = total.lock().unwrap();
            t.elapsed += elapsed;
            t.elements += iters;
            elapsed
        })
    });
    group.finish();
    let t = total.lock().unwrap();
    if t.elements == 0 {
        return;
    }
    println!(
        "ovsdb cache decode of a {:.1} MB monitor reply (25k LS + 10k LSP): {:.1} ms (goal < 100 ms)",
        bytes.len() as f64 / 1e6,
        t.elapsed.as_secs_f64() * 1000.0 / t.elements as f64
    );
}

fn benches(c: &mut Criterion) {
    bench_cache_decode(c);
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    let server = OvsdbServer::start(Db::Northbound).expect("start ovsdb-server");
    // One thread: the caller, the client's connection task and the socket share it, so a
    // request and its reply cost no cross-thread wake-ups (the raw client is one thread too).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(Client::connect(&server.unix_remote())).unwrap();
    rt.block_on(client.get_schema(NB)).unwrap();
    let path = server.unix_remote().trim_start_matches("unix:").to_owned();
    let ctx = Ctx {
        rt,
        client,
        raw: Mutex::new(RawClient::connect(&path)),
        unique: Arc::new(AtomicU64::new(0)),
    };
    bench_sequential(c, &ctx);
    bench_pipelined(c, &ctx);
    bench_batch(c, &ctx);
}

criterion_group!(ovsdb_benches, benches);
criterion_main!(ovsdb_benches);
