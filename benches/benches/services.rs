//! The Service reconciler at scale, against a real NB ovsdb-server (started through
//! ovn-harness) and the embedded API server, in one run:
//!
//! * converge: 5,000 ClusterIP Services with 10 ready endpoints each are in the API
//!   when the reconciler starts (a controller restart); time until the cluster TCP
//!   balancer holds all 5,000 VIPs with their backends (one transaction per Service);
//! * one endpoint change: one EndpointSlice replaced (an endpoint stops or starts
//!   being ready); time until NB shows that Service's new backends;
//! * peer: the raw `ovsdb` client writing the same 5,000 VIPs in one transaction
//!   (one `mutate` insert into a balancer): the floor for getting those rows into NB.
//!
//! Prints the headline figures, then criterion measures the endpoint change and the
//! raw batch. Run: `cargo bench -p kube-ovn-benches --bench services`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, PostParams};
use kube::Client;
use kube_ovn_controller::config::ControllerConfig;
use kube_ovn_controller::{bootstrap, service, Context};
use ovn_harness::{Db, OvsdbServer};
use ovn_nb::{LoadBalancer, NbClient};
use ovsdb::client::Client as RawClient;
use ovsdb::operation::{Condition, Mutation, Operation};
use ovsdb::value::{Atom, Map, Row, Value as OvsValue};
use serde_json::json;

const SERVICES: usize = 5_000;
const ENDPOINTS: usize = 10;
const IN_FLIGHT: usize = 16;
const TCP_LB: &str = "cluster-tcp-loadbalancer";

fn cluster_ip(i: usize) -> String {
    format!("10.96.{}.{}", i / 250, i % 250 + 1)
}

fn endpoint_ip(i: usize, j: usize) -> String {
    format!("10.16.{}.{}", i / 25, (i % 25) * 10 + j + 1)
}

fn service(i: usize) -> Service {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": format!("svc-{i}"), "namespace": "default"},
        "spec": {"clusterIP": cluster_ip(i), "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    }))
    .unwrap()
}

/// Service `i`'s slice; endpoint 0 is ready iff `first_ready`.
fn slice(i: usize, first_ready: bool) -> EndpointSlice {
    let endpoints: Vec<_> = (0..ENDPOINTS)
        .map(|j| json!({"addresses": [endpoint_ip(i, j)], "conditions": {"ready": j > 0 || first_ready}}))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("svc-{i}-a"), "namespace": "default",
                     "labels": {"kubernetes.io/service-name": format!("svc-{i}")}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": endpoints,
    }))
    .unwrap()
}

fn backends(i: usize, first_ready: bool) -> String {
    let mut all: Vec<String> = (0..ENDPOINTS)
        .filter(|j| *j > 0 || first_ready)
        .map(|j| format!("{}:8080", endpoint_ip(i, j)))
        .collect();
    all.sort();
    all.join(",")
}

/// The TCP balancer's `vips` in the replica, without decoding the row.
fn with_vips<R>(nb: &NbClient, f: impl FnOnce(&Map) -> R) -> Option<R> {
    let id = nb
        .store()
        .ids_by::<LoadBalancer>("name", TCP_LB)
        .into_iter()
        .next()?;
    let row = nb.store().get_raw(id)?;
    match row.get("vips")? {
        OvsValue::Map(map) => Some(f(map)),
        _ => None,
    }
}

async fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn populate(client: &Client) {
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    futures::stream::iter(0..SERVICES)
        .map(|i| {
            let (services, slices) = (services.clone(), slices.clone());
            async move {
                services
                    .create(&PostParams::default(), &service(i))
                    .await
                    .unwrap();
                slices
                    .create(&PostParams::default(), &slice(i, true))
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

struct Setup {
    _nb_server: OvsdbServer,
    _api: embedded_apiserver::Handle,
    client: Client,
    ctx: Arc<Context>,
    raw: RawClient,
    converge: Duration,
}

async fn setup() -> Setup {
    let nb_server = OvsdbServer::start(Db::Northbound).expect("NB server");
    let remote = nb_server.unix_remote();
    let nb_flag = format!("--ovn-nb-addr={remote}");
    let config = ControllerConfig::parse_from(["kube-ovn-controller", nb_flag.as_str()]).unwrap();
    let nb = NbClient::connect(&remote).await.expect("NB client");
    bootstrap(&nb, &config).await.expect("start-up");
    let api = embedded_apiserver::EmbeddedApiServer::start(embedded_apiserver::Config::default())
        .await
        .expect("API server");
    let client = api.kube_client().expect("client");
    populate(&client).await;
    let ctx = Arc::new(Context::new(client.clone(), Arc::new(nb), Arc::new(config)));
    let start = Instant::now();
    tokio::spawn(service::run(ctx.clone()));
    until(|| with_vips(&ctx.nb, |m| m.len()).unwrap_or(0) >= SERVICES).await;
    let converge = start.elapsed();
    let last = format!("{}:80", cluster_ip(SERVICES - 1));
    let got = with_vips(&ctx.nb, |m| {
        m.get_str(&last).and_then(|a| a.as_str().map(String::from))
    });
    assert_eq!(got.flatten(), Some(backends(SERVICES - 1, true)));
    let raw = RawClient::connect(&remote).await.expect("raw client");
    Setup {
        _nb_server: nb_server,
        _api: api,
        client,
        ctx,
        raw,
        converge,
    }
}

/// Replaces Service `i`'s slice and waits until NB shows its new backends.
async fn endpoint_change(setup: &Setup, i: usize, first_ready: bool) -> Duration {
    let slices: Api<EndpointSlice> = Api::namespaced(setup.client.clone(), "default");
    let name = format!("svc-{i}-a");
    let mut new = slice(i, first_ready);
    new.metadata.resource_version = slices.get(&name).await.unwrap().metadata.resource_version;
    let (vip, want) = (format!("{}:80", cluster_ip(i)), backends(i, first_ready));
    let start = Instant::now();
    slices
        .replace(&name, &PostParams::default(), &new)
        .await
        .unwrap();
    until(|| {
        with_vips(&setup.ctx.nb, |m| {
            m.get_str(&vip).and_then(Atom::as_str) == Some(want.as_str())
        })
        .unwrap_or(false)
    })
    .await;
    start.elapsed()
}

/// The raw client writes the same 5,000 VIPs in one transaction into a fresh balancer.
async fn raw_batch(raw: &RawClient, run: usize) -> Duration {
    let vips: BTreeMap<String, String> = (0..SERVICES)
        .map(|i| (format!("{}:80", cluster_ip(i)), backends(i, true)))
        .collect();
    let name = format!("raw-{run}");
    let created = raw
        .transact(
            "OVN_Northbound",
            &[Operation::insert("Load_Balancer", Row::new().with("name", name.as_str())).into()],
        )
        .await
        .expect("raw lb insert");
    let lb = created[0].uuid().expect("lb uuid");
    let map: Map = vips
        .into_iter()
        .map(|(k, v)| (Atom::from(k), Atom::from(v)))
        .collect();
    let op = Operation::mutate("Load_Balancer")
        .with_condition(Condition::eq("_uuid", lb))
        .with_mutation(Mutation::insert("vips", OvsValue::Map(map)));
    let start = Instant::now();
    raw.transact("OVN_Northbound", &[op.into()])
        .await
        .expect("raw vips");
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let setup = rt.block_on(setup());
    let one = rt.block_on(endpoint_change(&setup, 7, false));
    let batch = rt.block_on(raw_batch(&setup.raw, 0));
    println!(
        "services: {SERVICES} x {ENDPOINTS} endpoints converged in {:.2?} ({:.0} Services/s); \
         one endpoint change {:.2?}; raw ovsdb one-batch write of the same VIPs {:.2?}",
        setup.converge,
        SERVICES as f64 / setup.converge.as_secs_f64(),
        one,
        batch
    );
    let mut group = c.benchmark_group("services_5k");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    // whether each Service's first endpoint is ready now (Service 7's went above)
    let mut ready = vec![true; SERVICES];
    ready[7] = false;
    let mut next = 0usize;
    group.bench_function("one endpoint change", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                next = (next + 37) % SERVICES;
                ready[next] = !ready[next];
                total += rt.block_on(endpoint_change(&setup, next, ready[next]));
            }
            total
        })
    });
    let mut run = 0;
    group.bench_function("raw ovsdb 5k VIPs one batch", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                run += 1;
                total += rt.block_on(raw_batch(&setup.raw, run));
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
