//! `restart`: the API server holds N pods that the controller allocated before (its
//! annotations, finalizer and IP object, exactly as the Pod reconciler writes them) and
//! NB holds their ports (written through the reconciler's own port builder, 1,000 per
//! transaction); seeding is not timed. Then a fresh `kube-ovn-controller` starts, one
//! new pod is created at once, and the time from the process's start until that pod is
//! `allocated` is measured (its address checked against all N), with the phases its
//! log shows, and how long until the controller has gone through every old pod (its CPU
//! idle).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use futures::StreamExt;
use ipam::{Allocation, Mac};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, watcher, Event};
use kube_ovn_api::annotations::{CidrPair, IpPair, PodNetwork, Provider};
use kube_ovn_api::crd::IP;
use kube_ovn_api::naming::{pod_port_name, OVN_PROVIDER};
use kube_ovn_controller::pod::annotate::{with_result, NicResult};
use kube_ovn_controller::pod::ip_object::{desired_ip, IpHolder};
use kube_ovn_controller::pod::port::{desired_port, write_port};
use kube_ovn_controller::pod::FINALIZER;
use ovn_nb::NbClient;

use crate::cluster::{self, for_each, subnet_base, subnet_name, Cluster, Controller, DEADLINE};
use crate::pods::pod_object;

/// Ports per NB transaction while seeding.
const NB_BATCH: usize = 1_000;
/// The new pod: named and placed to come last in a list (namespace, then name, as
/// etcd and the embedded API server order them), the worst place for it.
const FRESH: &str = "zz-new-pod";
const ALLOCATED: &str = "ovn.kubernetes.io/allocated";
const IP_ADDRESS: &str = "ovn.kubernetes.io/ip_address";
const MAC_ADDRESS: &str = "ovn.kubernetes.io/mac_address";
/// The first byte of the seeded MACs: the rest is the pod's index.
const MAC_PREFIX: [u8; 3] = [0x00, 0x00, 0x0b];

/// What the run measured.
#[derive(Debug)]
pub struct RestartReport {
    pub pods: usize,
    pub namespaces: usize,
    /// Seeding (untimed for the goal): API objects, NB ports.
    pub seed_api: Duration,
    pub seed_nb: Duration,
    /// This process's RSS once seeded (the API server holding it all), KiB.
    pub api_rss: u64,
    /// Process start until the new pod was `allocated`.
    pub first_allocated: Duration,
    /// Its address.
    pub fresh_ip: String,
    /// Phases from the log: (what, offset from process start).
    pub phases: Vec<(&'static str, Option<Duration>)>,
    /// Process start until its CPU went idle (every old pod looked at), if it did.
    pub idle: Option<Duration>,
    pub controller_cpu: Duration,
    pub rss_peak: u64,
    /// Reconciles that failed (and were retried), from the log.
    pub failed_reconciles: usize,
    pub load: String,
}

/// The namespace that lists last.
fn fresh_ns(namespaces: usize) -> usize {
    (0..namespaces)
        .max_by_key(|i| cluster::ns_name(*i))
        .expect("a namespace")
}

/// Pod `k`: namespace `k % namespaces`, index `k / namespaces` within its subnet.
struct Seeded {
    ns: usize,
    name: String,
    alloc: Allocation,
}

fn seeded(k: usize, namespaces: usize) -> Seeded {
    let ns = k % namespaces;
    let j = (k / namespaces) as u32;
    // .1 is the gateway: the pods start at .2
    let ip = u32::from(Ipv4Addr::from(subnet_base(ns))) + 2 + j;
    let k = k as u32;
    let mac = [
        MAC_PREFIX[0],
        MAC_PREFIX[1],
        MAC_PREFIX[2],
        (k >> 16) as u8,
        (k >> 8) as u8,
        k as u8,
    ];
    Seeded {
        ns,
        name: format!("pod-{k}"),
        alloc: Allocation {
            v4: Some(Ipv4Addr::from(ip)),
            v6: None,
            mac: Some(Mac(mac)),
        },
    }
}

/// The pod as the Pod reconciler left it: result annotations and the finalizer.
fn allocated_pod(s: &Seeded) -> Pod {
    let ns = cluster::ns_name(s.ns);
    let [a, b, _, _] = subnet_base(s.ns);
    let result = NicResult {
        subnet: subnet_name(s.ns),
        cidr: CidrPair::v4(format!("{a}.{b}.0.0/16").parse().expect("cidr")),
        gateway: IpPair::v4(Ipv4Addr::new(a, b, 0, 1)),
        allocation: s.alloc,
        routed: true,
    };
    let mut annotations = Default::default();
    with_result(&PodNetwork::default(), &result).write_into(&Provider::ovn(), &mut annotations);
    let mut pod = pod_object(&ns, &s.name);
    pod.metadata.annotations = Some(annotations);
    pod.metadata.finalizers = Some(vec![FINALIZER.to_owned()]);
    pod
}

fn ip_object(s: &Seeded) -> IP {
    let ns = cluster::ns_name(s.ns);
    let port = pod_port_name(&ns, &s.name, OVN_PROVIDER);
    let holder = IpHolder {
        name: &port,
        pod: &s.name,
        namespace: &ns,
        node: None,
        pod_type: None,
    };
    desired_ip(&holder, &subnet_name(s.ns), &s.alloc)
}

async fn seed_api(cluster: &Cluster, pods: usize, namespaces: usize) {
    let client = &cluster.client;
    for_each(pods, |k| async move {
        let s = seeded(k, namespaces);
        let api: Api<Pod> = Api::namespaced(client.clone(), &cluster::ns_name(s.ns));
        api.create(&PostParams::default(), &allocated_pod(&s))
            .await
            .expect("seed pod");
        Api::<IP>::all(client.clone())
            .create(&PostParams::default(), &ip_object(&s))
            .await
            .expect("seed IP object");
        if (k + 1) % 10_000 == 0 {
            eprintln!("  {} pods and IP objects seeded", k + 1);
        }
    })
    .await;
}

async fn seed_nb(remote: &str, pods: usize, namespaces: usize) {
    let nb = NbClient::connect(remote).await.expect("NB");
    for start in (0..pods).step_by(NB_BATCH) {
        let mut txn = nb.txn();
        for k in start..(start + NB_BATCH).min(pods) {
            let s = seeded(k, namespaces);
            let ns = cluster::ns_name(s.ns);
            let port = pod_port_name(&ns, &s.name, OVN_PROVIDER);
            let spec = desired_port(&port, &ns, &s.name, &subnet_name(s.ns), &s.alloc, false);
            write_port(&mut txn, &spec).expect("port");
        }
        nb.commit(txn).await.expect("seed ports");
    }
}

/// Waits for the new pod's `allocated`; its annotations.
async fn wait_allocated(
    cluster: &Cluster,
    cluster_namespaces: usize,
    controller: &mut Controller,
) -> std::collections::BTreeMap<String, String> {
    let ns = cluster::ns_name(fresh_ns(cluster_namespaces));
    let api: Api<PartialObjectMeta<Pod>> = Api::namespaced(cluster.client.clone(), &ns);
    let config = watcher::Config::default().fields(&format!("metadata.name={FRESH}"));
    let mut events = watcher(api, config).boxed();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(1), events.next()).await;
        controller.assert_alive();
        assert!(
            controller.spawned_at.elapsed() < DEADLINE,
            "the new pod was never allocated"
        );
        let Ok(Some(Ok(Event::Apply(meta) | Event::InitApply(meta)))) = next else {
            continue;
        };
        let annotations = meta.metadata.annotations.unwrap_or_default();
        if annotations.get(ALLOCATED).is_some_and(|v| v == "true") {
            return annotations;
        }
    }
}

/// Checks the new pod's address and MAC against every seeded pod's.
fn check_fresh(
    annotations: &std::collections::BTreeMap<String, String>,
    pods: usize,
    namespaces: usize,
) -> String {
    let ip: Ipv4Addr = annotations[IP_ADDRESS].parse().expect("an IPv4 address");
    let ns = fresh_ns(namespaces);
    let base = u32::from(Ipv4Addr::from(subnet_base(ns)));
    let offset = u32::from(ip)
        .checked_sub(base)
        .expect("an address of its subnet");
    // pods k = ns, ns + namespaces, ... live there
    let seeded_there = (pods + namespaces - 1 - ns) / namespaces;
    assert!(
        offset >= 2 + seeded_there as u32,
        "the new pod got {ip}, an address a seeded pod holds (or the gateway)"
    );
    let mac: Mac = annotations[MAC_ADDRESS].parse().expect("a MAC");
    let k = u32::from_be_bytes([0, mac.0[3], mac.0[4], mac.0[5]]) as usize;
    assert!(
        mac.0[..3] != MAC_PREFIX || k >= pods,
        "the new pod got MAC {mac}, a seeded pod's"
    );
    ip.to_string()
}

/// Waits until the controller's CPU time stops growing (less than 20 ms in a second).
async fn wait_idle(controller: &mut Controller) -> Option<Duration> {
    let mut last = cluster::cpu_time(controller.pid());
    while controller.spawned_at.elapsed() < DEADLINE {
        tokio::time::sleep(Duration::from_secs(1)).await;
        controller.assert_alive();
        let now = cluster::cpu_time(controller.pid());
        // zero: /proc unreadable (this process out of descriptors), not idle
        if now > Duration::ZERO && now.saturating_sub(last) < Duration::from_millis(20) {
            return Some(
                controller
                    .spawned_at
                    .elapsed()
                    .saturating_sub(Duration::from_secs(1)),
            );
        }
        last = now;
    }
    None
}

pub async fn run(pods: usize, namespaces: usize) -> RestartReport {
    let binary = cluster::controller_binary();
    let cluster = Cluster::start().await;
    cluster.bound_namespaces(namespaces).await;
    let args = cluster.controller_args();
    // a first controller creates the default subnets, the switches and the bindings
    let mut first = Controller::start(&binary, &args, "restart-first");
    cluster.wait_bound(namespaces, &mut first).await;
    first.kill();

    eprintln!("restart: seeding {pods} allocated pods, their IP objects and ports");
    let start = Instant::now();
    seed_api(&cluster, pods, namespaces).await;
    let seed_api_time = start.elapsed();
    let start = Instant::now();
    seed_nb(&cluster.nb.unix_remote(), pods, namespaces).await;
    let seed_nb_time = start.elapsed();
    let (api_rss, _) = cluster::memory_kib(std::process::id());
    eprintln!(
        "  seeded: API {seed_api_time:.1?}, NB {seed_nb_time:.1?}, this process {} MiB",
        api_rss / 1024
    );

    let load = cluster::uptime();
    let mut controller = Controller::start(&binary, &args, "restart");
    let fresh_ns_name = cluster::ns_name(fresh_ns(namespaces));
    let fresh = pod_object(&fresh_ns_name, FRESH);
    Api::<Pod>::namespaced(cluster.client.clone(), &fresh_ns_name)
        .create(&PostParams::default(), &fresh)
        .await
        .expect("the new pod");
    let annotations = wait_allocated(&cluster, namespaces, &mut controller).await;
    let first_allocated = controller.spawned_at.elapsed();
    let fresh_ip = check_fresh(&annotations, pods, namespaces);
    eprintln!("  new pod allocated {fresh_ip} at {first_allocated:.2?}; waiting for the controller to go idle");
    let idle = wait_idle(&mut controller).await;
    let fresh_key = format!("{fresh_ns_name}/{FRESH}");
    let phases = vec![
        ("lease held", controller.first_log(&["became the leader"])),
        (
            "NB connected (replica loaded)",
            controller.first_log(&["connected to the OVN northbound"]),
        ),
        (
            "NB start-up writes done",
            controller.first_log(&["start-up done"]),
        ),
        (
            "default subnets checked",
            controller.first_log(&["default subnets present"]),
        ),
        (
            "caches filled (one list per kind)",
            controller.first_log(&["caches filled"]),
        ),
        ("IPAM rebuilt", controller.first_log(&["IPAM rebuilt"])),
        (
            "start-up GC done, reconcilers started",
            controller.first_log(&["kube_runtime::controller"]),
        ),
        (
            "new pod reconciled",
            controller.first_log(&["pod network reconciled", &fresh_key]),
        ),
    ];
    let report = RestartReport {
        pods,
        namespaces,
        seed_api: seed_api_time,
        seed_nb: seed_nb_time,
        api_rss,
        first_allocated,
        fresh_ip,
        phases,
        idle,
        controller_cpu: cluster::cpu_time(controller.pid()),
        rss_peak: cluster::memory_kib(controller.pid()).1,
        failed_reconciles: controller
            .log_lines()
            .iter()
            .filter(|(_, line)| line.contains("reconcile failed"))
            .count(),
        load,
    };
    controller.kill();
    report
}
