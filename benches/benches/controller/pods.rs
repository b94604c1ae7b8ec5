//! `pods`: N pods in M namespaces, each bound to its own Subnet, created as fast as the
//! API server takes them while the real controller runs; timed from the first create
//! until every pod carries `ovn.kubernetes.io/routed=true` (seen through a watch). Then
//! the peer: the raw `ovsdb` client inserting the same Logical_Switch_Port rows the
//! controller wrote (renamed, on switches of their own), one switch's ports and the
//! switch's `ports` mutation per transaction, on the same server.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, watcher, Event};
use kube::Client;
use ovsdb::client::Client as RawClient;
use ovsdb::operation::{Condition, Mutation, Operation};
use ovsdb::value::{NamedUuid, Row, Value};

use crate::cluster::{self, for_each, Cluster, Controller, DEADLINE};

const NB: &str = "OVN_Northbound";
/// The annotation the CNI waits for.
pub const ROUTED: &str = "ovn.kubernetes.io/routed";

/// What the run measured.
#[derive(Debug)]
pub struct PodsReport {
    pub pods: usize,
    pub namespaces: usize,
    /// First create until the last create answered.
    pub created: Duration,
    /// First create until the last pod routed.
    pub routed: Duration,
    /// Controller RSS before the pods and after, KiB; its peak.
    pub rss_before: u64,
    pub rss_after: u64,
    pub rss_peak: u64,
    /// Controller CPU time spent during the run.
    pub controller_cpu: Duration,
    /// This process (API server, the creating client, the watch) during the run.
    pub bench_cpu: Duration,
    /// NB ovsdb-server during the run.
    pub nb_cpu: Duration,
    /// The peer: rows inserted, transactions, time.
    pub peer_rows: usize,
    pub peer_txns: usize,
    pub peer_time: Duration,
    pub load: String,
}

pub fn pod_object(ns: &str, name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("busybox".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

/// Counts the pods (all namespaces) that carry `routed=true`.
fn watch_routed(client: Client) -> (Arc<Mutex<HashSet<String>>>, tokio::task::JoinHandle<()>) {
    let routed: Arc<Mutex<HashSet<String>>> = Arc::default();
    let seen = routed.clone();
    let task = tokio::spawn(async move {
        let pods: Api<PartialObjectMeta<Pod>> = Api::all(client);
        let mut events = watcher(pods, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let Ok(Event::Apply(meta) | Event::InitApply(meta)) = event else {
                continue;
            };
            let is_routed = meta
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ROUTED))
                .is_some_and(|v| v == "true");
            if is_routed {
                let key = format!(
                    "{}/{}",
                    meta.metadata.namespace.unwrap_or_default(),
                    meta.metadata.name.unwrap_or_default()
                );
                seen.lock().unwrap().insert(key);
            }
        }
    });
    (routed, task)
}

async fn wait_count(routed: &Mutex<HashSet<String>>, n: usize, controller: &mut Controller) {
    let start = Instant::now();
    let mut last = 0;
    while routed.lock().unwrap().len() < n {
        controller.assert_alive();
        assert!(start.elapsed() < DEADLINE, "only {last} of {n} pods routed");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = routed.lock().unwrap().len();
        if now / 1000 != last / 1000 {
            eprintln!("  {now} routed at {:.1?}", start.elapsed());
        }
        last = now;
    }
}

pub async fn run(pods: usize, namespaces: usize) -> PodsReport {
    let binary = cluster::controller_binary();
    let cluster = Cluster::start().await;
    cluster.bound_namespaces(namespaces).await;
    let mut controller = Controller::start(&binary, &cluster.controller_args(), "pods");
    cluster.wait_bound(namespaces, &mut controller).await;
    let (routed, watch) = watch_routed(cluster.client.clone());
    // let the start-up's writes and the watch's first list settle
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_before, _) = cluster::memory_kib(controller.pid());
    let nb_pid = cluster.nb.pid().expect("NB pid");
    let cpu0 = (
        cluster::cpu_time(controller.pid()),
        cluster::own_cpu_time(),
        cluster::cpu_time(nb_pid),
    );
    let load = cluster::uptime();
    eprintln!("pods: creating {pods} pods in {namespaces} namespaces (load {load})");

    let start = Instant::now();
    let client = &cluster.client;
    for_each(pods, |i| async move {
        let ns = cluster::ns_name(i % namespaces);
        let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let pod = pod_object(&ns, &format!("pod-{i}"));
        api.create(&PostParams::default(), &pod)
            .await
            .expect("create");
    })
    .await;
    let created = start.elapsed();
    eprintln!("  {pods} created in {created:.2?}");
    wait_count(&routed, pods, &mut controller).await;
    let routed_in = start.elapsed();
    let (rss_after, rss_peak) = cluster::memory_kib(controller.pid());
    let cpu1 = (
        cluster::cpu_time(controller.pid()),
        cluster::own_cpu_time(),
        cluster::cpu_time(nb_pid),
    );
    watch.abort();
    controller.kill();

    let (peer_rows, peer_txns, peer_time) = peer(&cluster.nb.unix_remote()).await;
    assert_eq!(peer_rows, pods, "the peer inserts as many rows as pods");
    PodsReport {
        pods,
        namespaces,
        created,
        routed: routed_in,
        rss_before,
        rss_after,
        rss_peak,
        controller_cpu: cpu1.0.saturating_sub(cpu0.0),
        bench_cpu: cpu1.1.saturating_sub(cpu0.1),
        nb_cpu: cpu1.2.saturating_sub(cpu0.2),
        peer_rows,
        peer_txns,
        peer_time,
        load,
    }
}

/// The raw client inserts a copy of every pod port the controller wrote (renamed
/// `raw.<name>`, on switch `raw.<switch>`), one switch per transaction: rows, txns, time.
async fn peer(remote: &str) -> (usize, usize, Duration) {
    let raw = RawClient::connect(remote).await.expect("raw client");
    let select = Operation::select("Logical_Switch_Port")
        .with_condition(Condition::includes("external_ids", pod_ids()));
    let rows = raw.transact(NB, &[select.into()]).await.expect("select");
    let mut by_switch: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for mut row in rows[0].rows().unwrap_or_default().iter().cloned() {
        row.remove("_uuid");
        row.remove("_version");
        let name = row
            .get("name")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_owned();
        let ids = row.get("external_ids").and_then(|v| v.as_map());
        let id = |key: &str| {
            ids.and_then(|m| m.get_str(key))
                .and_then(|a| a.as_str())
                .map(str::to_owned)
        };
        // pod ports only (the start-up's router ports are Kube-OVN's too)
        let (Some(ls), Some(_)) = (id("ls"), id("pod")) else {
            continue;
        };
        row.insert("name", format!("raw.{name}"));
        by_switch.entry(ls).or_default().push(row);
    }
    // the switches, untimed
    let mut switches = BTreeMap::new();
    for ls in by_switch.keys() {
        let insert = Operation::insert(
            "Logical_Switch",
            Row::new().with("name", format!("raw.{ls}")),
        );
        let done = raw.transact(NB, &[insert.into()]).await.expect("switch");
        switches.insert(ls.clone(), done[0].uuid().expect("uuid"));
    }
    let rows: usize = by_switch.values().map(Vec::len).sum();
    let start = Instant::now();
    for (ls, ports) in &by_switch {
        let mut ops: Vec<ovsdb::Operation> = Vec::new();
        let mut names = Vec::new();
        for (i, row) in ports.iter().enumerate() {
            let name = NamedUuid::new(format!("p{i}")).expect("uuid name");
            ops.push(
                Operation::insert("Logical_Switch_Port", row.clone())
                    .with_uuid_name(name.clone())
                    .into(),
            );
            names.push(name);
        }
        ops.push(
            Operation::mutate("Logical_Switch")
                .with_condition(Condition::eq("_uuid", switches[ls]))
                .with_mutation(Mutation::insert("ports", Value::set(names)))
                .into(),
        );
        raw.transact(NB, &ops).await.expect("raw batch");
    }
    (rows, by_switch.len(), start.elapsed())
}

/// `external_ids` holding `vendor=kube-ovn`, for an `includes` condition.
fn pod_ids() -> Value {
    Value::map(BTreeMap::from([(
        "vendor".to_string(),
        "kube-ovn".to_string(),
    )]))
}
