//! The real `kube-ovn-controller` binary killed with SIGKILL and restarted ten times
//! while 500 pods are created and some deleted against the embedded API server, over a
//! real NB + SB + ovn-northd. At the end, with one controller settled, the cluster must
//! hold no address owned twice (pod annotations, IP objects, NB ports and the IPAM's
//! view: the Subnet usage figures of the live controller and an IPAM rebuilt from the
//! API server), no port without its pod, no pod without its port, and annotations, IP
//! objects and NB port addresses must agree.
//!
//! A real process killed with SIGKILL rather than an aborted in-process task: nothing
//! of the dying controller runs (no drop, no Lease release, no flush of a half-sent
//! transaction or request), its sockets close mid-flight, and the next one shares no
//! memory with it: only what reached the API server and NB survives. The restarted
//! process uses the same identity (`POD_NAME`, as a restarted container has), so it
//! takes the Lease at once rather than waiting for it to expire.

use kube_ovn_test_support as common;
use kube_ovn_test_support::ControllerEnv;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use embedded_apiserver::Handle;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::Client;
use kube_ovn_api::annotations::{NamespaceAnnotations, PodNetwork, Provider};
use kube_ovn_api::crd::{Subnet, SubnetSpec, IP};
use kube_ovn_api::naming::{pod_owner, EXTERNAL_ID_LS, EXTERNAL_ID_POD, OVN_PROVIDER};
use kube_ovn_controller::ipam_rebuild::rebuild_ipam;
use ovn_harness::{Db, RaftCluster};
use ovn_nb::{LogicalSwitchPort, NbClient};

/// Pods created in all.
const PODS: usize = 500;
/// Controller kills (each followed by a restart).
const KILLS: usize = 10;
/// How long the cluster may take to settle (or a step to happen) before the test fails.
const SETTLE: Duration = Duration::from_secs(120);
/// Pod creations and deletions in flight at once.
const IN_FLIGHT: usize = 8;
/// The namespaces; the last is bound to [`BOUND_SUBNET`].
const NAMESPACES: [&str; 3] = ["churn-a", "churn-b", "churn-c"];
const BOUND_SUBNET: &str = "churn-net";
const BOUND_CIDR: &str = "10.99.0.0/23";

/// A small deterministic generator (xorshift64*): the same churn on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Where a test's controller logs go: kept after the run, for a failure's post-mortem.
fn log_dir(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("controller_churn")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The controller process, its output in `dir/controller-<n>.log`.
struct Controller {
    child: Child,
    log: PathBuf,
}

impl Controller {
    fn start(args: &[String], dir: &Path, n: usize) -> Controller {
        let log = dir.join(format!("controller-{n}.log"));
        let out = File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_kube-ovn-controller"))
            .args(args)
            .env("RUST_LOG", "info")
            .env("POD_NAME", "kube-ovn-controller-churn")
            .env("POD_NAMESPACE", "kube-system")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("start kube-ovn-controller");
        Controller { child, log }
    }

    /// SIGKILL (std's `Child::kill`), then reaps it: it gets no chance to tidy up.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Fails with the log if the process has exited.
    fn assert_alive(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            panic!(
                "the controller exited ({status}), {}:\n{log}",
                self.log.display()
            );
        }
    }
}

fn pod_object(ns: &str, name: &str) -> Pod {
    common::plain_pod(ns, name, Default::default())
}

/// One step of the churn.
#[derive(Debug, Clone)]
enum Op {
    Create { ns: &'static str, name: String },
    Delete { ns: &'static str, name: String },
}

/// The churn: `pods` creations; after each, with probability 2/5 a deletion of a
/// random pod created earlier (sometimes the one just created), so that about 200
/// pods go, some before any controller has seen them, some long after.
fn churn_plan(rng: &mut Rng, pods: usize) -> Vec<Op> {
    let mut ops = Vec::new();
    let mut alive: Vec<(&'static str, String)> = Vec::new();
    for i in 0..pods {
        let ns = NAMESPACES[rng.below(NAMESPACES.len())];
        let name = format!("p{i:03}");
        ops.push(Op::Create {
            ns,
            name: name.clone(),
        });
        alive.push((ns, name));
        if rng.below(5) < 2 {
            let (ns, name) = alive.swap_remove(rng.below(alive.len()));
            ops.push(Op::Delete { ns, name });
        }
    }
    ops
}

async fn run_op(client: &Client, op: &Op) {
    match op {
        Op::Create { ns, name } => {
            Api::<Pod>::namespaced(client.clone(), ns)
                .create(&PostParams::default(), &pod_object(ns, name))
                .await
                .unwrap();
        }
        Op::Delete { ns, name } => {
            // ops run concurrently: its creation may not have landed yet
            let api = Api::<Pod>::namespaced(client.clone(), ns);
            loop {
                match api.delete(name, &DeleteParams::default()).await {
                    Err(kube::Error::Api(e)) if e.code == 404 => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    other => break other.map(|_| ()).unwrap(),
                }
            }
        }
    }
}

/// What one NIC looks like in one place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Nic {
    subnet: String,
    ip: Option<IpAddr>,
    mac: Option<String>,
}

/// The cluster as the checks see it, keyed by `namespace/pod`.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    /// Live pods, from their annotations (None: not annotated yet).
    pods: BTreeMap<String, Option<Nic>>,
    /// Pods being deleted (waiting for the finalizer).
    terminating: BTreeSet<String>,
    /// IP objects by the pod they name.
    ips: Vec<(String, Nic)>,
    /// Kube-OVN's pod ports by the pod in `external_ids:pod`.
    ports: Vec<(String, Nic)>,
    /// `v4usingIPs` of each Subnet the pods use, as the live controller's IPAM wrote.
    using: BTreeMap<String, u64>,
}

fn nic_of_pod(pod: &Pod) -> Option<Nic> {
    let map = pod.metadata.annotations.clone().unwrap_or_default();
    let (net, _) = PodNetwork::parse_lenient(&Provider::ovn(), &map);
    if net.routed != Some(true) {
        return None;
    }
    Some(Nic {
        subnet: net.logical_switch?,
        ip: net.ip_address.and_then(|p| p.v4).map(IpAddr::V4),
        mac: net.mac_address.map(|m| m.to_string()),
    })
}

fn nic_of_port(port: &LogicalSwitchPort) -> Nic {
    // `addresses`: one "MAC IP" entry
    let entry = port.addresses.iter().next().cloned().unwrap_or_default();
    let mut words = entry.split_whitespace();
    let mac = words.next().map(String::from);
    let ip = words.next().and_then(|w| w.parse().ok());
    Nic {
        subnet: port
            .external_ids
            .get(EXTERNAL_ID_LS)
            .cloned()
            .unwrap_or_default(),
        ip,
        mac,
    }
}

async fn snapshot(client: &Client, nb: &NbClient) -> Snapshot {
    let mut snap = Snapshot::default();
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    for pod in pods.items {
        let key = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap(),
            pod.metadata.name.as_deref().unwrap()
        );
        if pod.metadata.deletion_timestamp.is_some() {
            snap.terminating.insert(key);
        } else {
            snap.pods.insert(key, nic_of_pod(&pod));
        }
    }
    let ips = Api::<IP>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    for ip in ips.items {
        let s = &ip.spec;
        let (Some(ns), Some(pod)) = (&s.namespace, &s.pod_name) else {
            continue; // a node's
        };
        let nic = Nic {
            subnet: s.subnet.clone().unwrap_or_default(),
            ip: s.v4_ip_address.as_deref().and_then(|a| a.parse().ok()),
            mac: s.mac_address.clone(),
        };
        snap.ips.push((format!("{ns}/{pod}"), nic));
    }
    for port in nb.store().rows::<LogicalSwitchPort>().unwrap() {
        if let Some(pod) = port.row.external_ids.get(EXTERNAL_ID_POD) {
            snap.ports.push((pod.clone(), nic_of_port(&port.row)));
        }
    }
    let subnets = Api::<Subnet>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    for subnet in subnets.items {
        let using = subnet
            .status
            .as_ref()
            .and_then(|s| s.v4_using_ips)
            .map_or(0, |c| c.0 as u64);
        snap.using
            .insert(subnet.metadata.name.clone().unwrap_or_default(), using);
    }
    snap
}

/// Why the snapshot is not settled yet (None: settled): every live pod annotated and
/// with exactly one port and one IP object, no deleted pod still held.
fn unsettled(snap: &Snapshot) -> Option<String> {
    if !snap.terminating.is_empty() {
        return Some(format!("{} pods still terminating", snap.terminating.len()));
    }
    let bare = snap.pods.values().filter(|n| n.is_none()).count();
    if bare > 0 {
        return Some(format!("{bare} pods not routed yet"));
    }
    let ports: BTreeSet<_> = snap.ports.iter().map(|(p, _)| p.clone()).collect();
    let ips: BTreeSet<_> = snap.ips.iter().map(|(p, _)| p.clone()).collect();
    let pods: BTreeSet<_> = snap.pods.keys().cloned().collect();
    (ports != pods || ips != pods).then(|| {
        format!(
            "{} pods, {} ports, {} IP objects",
            pods.len(),
            ports.len(),
            ips.len()
        )
    })
}

/// Everything wrong with a settled snapshot.
fn violations(snap: &Snapshot) -> Vec<String> {
    let mut found = Vec::new();
    // every (subnet, address) and MAC with the pods claiming it, from every source
    let mut by_ip: BTreeMap<(String, IpAddr), BTreeSet<String>> = BTreeMap::new();
    let mut by_mac: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let annotated = snap
        .pods
        .iter()
        .filter_map(|(p, n)| n.as_ref().map(|n| (p, n)));
    let all = annotated
        .chain(snap.ips.iter().map(|(p, n)| (p, n)))
        .chain(snap.ports.iter().map(|(p, n)| (p, n)));
    for (pod, nic) in all {
        match nic.ip {
            Some(ip) => {
                by_ip
                    .entry((nic.subnet.clone(), ip))
                    .or_default()
                    .insert(pod.clone());
            }
            None => found.push(format!("{pod}: a record without an address: {nic:?}")),
        }
        if let Some(mac) = &nic.mac {
            by_mac.entry(mac.clone()).or_default().insert(pod.clone());
        }
    }
    for ((subnet, ip), owners) in &by_ip {
        if owners.len() > 1 {
            found.push(format!("{subnet} {ip} owned twice: {owners:?}"));
        }
    }
    for (mac, owners) in &by_mac {
        if owners.len() > 1 {
            found.push(format!("MAC {mac} owned twice: {owners:?}"));
        }
    }
    // one port and one IP object per pod, none for a pod that is gone, all agreeing
    let mut ports: BTreeMap<&String, Vec<&Nic>> = BTreeMap::new();
    for (pod, nic) in &snap.ports {
        ports.entry(pod).or_default().push(nic);
    }
    let mut ips: BTreeMap<&String, Vec<&Nic>> = BTreeMap::new();
    for (pod, nic) in &snap.ips {
        ips.entry(pod).or_default().push(nic);
    }
    for (what, records) in [("port", &ports), ("IP object", &ips)] {
        for (pod, nics) in records {
            match snap.pods.get(*pod) {
                None => found.push(format!("{what} of {pod}, a pod that does not exist")),
                Some(None) => found.push(format!("{what} of {pod}, a pod not annotated")),
                Some(Some(annotated)) => {
                    for nic in nics {
                        if *nic != annotated {
                            found.push(format!(
                                "{pod}: {what} says {nic:?}, annotations {annotated:?}"
                            ));
                        }
                    }
                    if nics.len() > 1 {
                        found.push(format!("{pod} has {} {what}s", nics.len()));
                    }
                }
            }
        }
    }
    for pod in snap.pods.keys() {
        if !ports.contains_key(pod) {
            found.push(format!("{pod} has no port"));
        }
        if !ips.contains_key(pod) {
            found.push(format!("{pod} has no IP object"));
        }
    }
    // the live controller's IPAM: as many addresses in use as pods on the subnet
    let mut per_subnet: BTreeMap<&str, u64> = BTreeMap::new();
    for nic in snap.pods.values().flatten() {
        *per_subnet.entry(nic.subnet.as_str()).or_default() += 1;
    }
    for (subnet, count) in per_subnet {
        let using = snap.using.get(subnet).copied().unwrap_or(0);
        if using != count {
            found.push(format!(
                "subnet {subnet}: the IPAM counts {using} addresses in use, pods hold {count}"
            ));
        }
    }
    found
}

/// Waits for `ns` to carry its subnet's binding annotation (the Subnet reconciler's).
async fn wait_bound(client: &Client, ns: &str, subnet: &str, controller: &mut Controller) {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let got = Api::<Namespace>::all(client.clone()).get(ns).await.unwrap();
        let map = got.metadata.annotations.unwrap_or_default();
        let (ann, _) = NamespaceAnnotations::parse_lenient(&map);
        if ann
            .logical_switch
            .is_some_and(|n| n.0.iter().any(|s| s == subnet))
        {
            return;
        }
        controller.assert_alive();
        assert!(
            tokio::time::Instant::now() < deadline,
            "{ns} never bound to {subnet}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How many live pods carry `routed`.
async fn routed_count(client: &Client) -> usize {
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default())
        .await
        .unwrap();
    pods.items
        .iter()
        .filter(|p| nic_of_pod(p).is_some())
        .count()
}

/// Waits until the controller started at `routed_before` routed pods has routed one
/// more (it got through its start-up and reconciles), or no unrouted pod is left.
async fn wait_progress(client: &Client, routed_before: usize, controller: &mut Controller) {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let pods = Api::<Pod>::all(client.clone())
            .list(&ListParams::default())
            .await
            .unwrap();
        let live: Vec<_> = pods
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect();
        let routed = live.iter().filter(|p| nic_of_pod(p).is_some()).count();
        if routed > routed_before || routed == live.len() {
            return;
        }
        controller.assert_alive();
        assert!(
            tokio::time::Instant::now() < deadline,
            "the restarted controller routed nothing"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One test at a time: each runs its own controller, API server and NB.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A kubeconfig for `server` in `dir`, and [`NAMESPACES`], [`BOUND_SUBNET`] bound to
/// the last.
async fn populate(server: &Handle, client: &Client, dir: &Path) -> PathBuf {
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    for ns in NAMESPACES {
        let object = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }
    let bound = Subnet::new(
        BOUND_SUBNET,
        SubnetSpec {
            cidr_block: Some(BOUND_CIDR.into()),
            namespaces: vec![NAMESPACES[2].into()],
            ..Default::default()
        },
    );
    Api::<Subnet>::all(client.clone())
        .create(&PostParams::default(), &bound)
        .await
        .unwrap();
    kubeconfig
}

/// Runs `ops`, [`IN_FLIGHT`] at a time.
async fn run_ops(client: &Client, ops: &[Op]) {
    futures::stream::iter(ops)
        .for_each_concurrent(IN_FLIGHT, |op| {
            let client = client.clone();
            async move { run_op(&client, op).await }
        })
        .await;
}

/// Waits until the cluster is settled and passes every check; the snapshot.
async fn settle(client: &Client, nb: &NbClient, controller: &mut Controller) -> Snapshot {
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let snap = snapshot(client, nb).await;
        let found = violations(&snap);
        let why = unsettled(&snap);
        if why.is_none() && found.is_empty() {
            return snap;
        }
        controller.assert_alive();
        // the usage figures trail the last reconcile, so a settled snapshot may still
        // show violations for a moment: only the deadline decides
        assert!(
            tokio::time::Instant::now() < deadline,
            "never settled ({why:?}); {} violations: {found:#?}",
            found.len()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The pods the plan leaves alive.
fn survivors(plan: &[Op]) -> usize {
    let created = plan
        .iter()
        .filter(|o| matches!(o, Op::Create { .. }))
        .count();
    created - (plan.len() - created)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_ten_times_during_churn_of_500_pods_no_address_is_owned_twice() {
    let _serial = SERIAL.lock().await;
    // NB as the first controller finds it in a new cluster: empty
    let Some(env) = ControllerEnv::builder().without_bootstrap().start().await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let client = env.client.clone();
    let kubeconfig = populate(&env.server, &client, dir.path()).await;
    let args = vec![
        format!("--ovn-nb-addr={}", env.nb_remote),
        format!("--ovn-sb-addr={}", env.sb_remote),
        format!("--kubeconfig={}", kubeconfig.display()),
    ];
    let logs = log_dir("killed");
    let mut lives = 0;
    let mut controller = Controller::start(&args, &logs, lives);
    // the bound namespace's pods must not be placed before its binding exists
    wait_bound(&client, NAMESPACES[2], BOUND_SUBNET, &mut controller).await;

    let plan = churn_plan(&mut Rng(0x5eed_c0de_2026), PODS);
    for ops in plan.chunks(plan.len().div_ceil(KILLS)) {
        // half the chunk while it runs, killed while it is busy with them; the other
        // half while no controller runs (pods created, and deleted with or without
        // its finalizer); then the next one, let through its start-up
        let (running, down) = ops.split_at(ops.len() / 2);
        run_ops(&client, running).await;
        controller.assert_alive();
        controller.kill();
        let before = routed_count(&client).await;
        eprintln!("killed life {lives}: {before} pods routed");
        run_ops(&client, down).await;
        lives += 1;
        controller = Controller::start(&args, &logs, lives);
        wait_progress(&client, before, &mut controller).await;
    }
    assert_eq!(lives, KILLS);

    // the last controller settles the cluster
    let settled = settle(&client, env.nb(), &mut controller).await;
    controller.kill();
    eprintln!(
        "settled: {} pods, {} ports, {} IP objects, usage {:?}",
        settled.pods.len(),
        settled.ports.len(),
        settled.ips.len(),
        settled.using
    );
    assert_eq!(settled.pods.len(), survivors(&plan));

    // an IPAM rebuilt from the API server alone holds exactly what the pods hold
    let ctx = &env.ctx;
    let summary = rebuild_ipam(ctx).await.unwrap();
    assert!(summary.conflicts.is_empty(), "{summary:?}");
    for (pod, nic) in &settled.pods {
        let nic = nic.as_ref().unwrap();
        let (ns, name) = pod.split_once('/').unwrap();
        let held = ctx
            .ipam
            .get(&nic.subnet, &pod_owner(ns, name, OVN_PROVIDER))
            .unwrap()
            .unwrap_or_else(|| panic!("the rebuilt IPAM holds nothing for {pod}"));
        assert_eq!(held.v4.map(IpAddr::V4), nic.ip, "{pod}");
    }

    // the checks catch a double allocation: hand one pod's address to another
    let mut doubled = settled.clone();
    let mut nics = doubled.pods.values_mut().flatten();
    let first = nics.next().unwrap().clone();
    let second = nics.find(|n| n.subnet == first.subnet).unwrap();
    second.ip = first.ip;
    let found = violations(&doubled);
    assert!(
        found.iter().any(|v| v.contains("owned twice")),
        "{found:#?}"
    );
    env.server.shutdown().await;
}

/// Pods of the NB-leader test.
const LEADER_PODS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_nb_leader_killed_during_churn_loses_nothing() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl"]) {
        return;
    }
    let _serial = SERIAL.lock().await;
    let mut cluster = RaftCluster::start(Db::Northbound, 3).expect("a 3-member NB cluster");
    let dir = tempfile::tempdir().unwrap();
    let (server, client) = common::api_server_with_crds().await;
    let kubeconfig = populate(&server, &client, dir.path()).await;
    let all = cluster.remotes().join(",");
    // no SB: the node chassis are not what this test is about
    let args = vec![
        format!("--ovn-nb-addr={all}"),
        format!("--kubeconfig={}", kubeconfig.display()),
    ];
    let logs = log_dir("nb_leader");
    let mut controller = Controller::start(&args, &logs, 0);
    wait_bound(&client, NAMESPACES[2], BOUND_SUBNET, &mut controller).await;

    let plan = churn_plan(&mut Rng(0x001e_ade4_2026), LEADER_PODS);
    let (first, rest) = plan.split_at(plan.len() / 2);
    run_ops(&client, first).await;
    let before = routed_count(&client).await;
    let leader = cluster.leader().unwrap();
    // mid-churn: the controller has pods in flight when its NB server goes
    cluster.kill(leader);
    run_ops(&client, rest).await;
    let new_leader = cluster.wait_leader().unwrap();
    assert_ne!(new_leader, leader);
    wait_progress(&client, before, &mut controller).await;

    let nb = NbClient::connect(&all)
        .await
        .expect("NB through the new leader");
    let settled = settle(&client, &nb, &mut controller).await;
    assert_eq!(settled.pods.len(), survivors(&plan));
    controller.assert_alive();

    // the killed member comes back and catches up with every port
    cluster.restart(leader).unwrap();
    cluster.wait_leader().unwrap();
    let member = cluster.remotes()[leader].clone();
    let deadline = tokio::time::Instant::now() + SETTLE;
    let wanted: BTreeSet<String> = settled.pods.keys().cloned().collect();
    loop {
        let ports = pod_ports_on(&member).await;
        if ports == wanted {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the restarted member has {} pod ports, {} wanted",
            ports.len(),
            wanted.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    controller.kill();
    server.shutdown().await;
}

/// The pods (`external_ids:pod`) of the ports one member has, read from it directly.
async fn pod_ports_on(remote: &str) -> BTreeSet<String> {
    let Ok(client) = ovsdb::client::Client::connect(remote).await else {
        return BTreeSet::new();
    };
    let select = ovsdb::Operation::select("Logical_Switch_Port");
    let Ok(rows) = client.transact("OVN_Northbound", &[select.into()]).await else {
        return BTreeSet::new();
    };
    let mut pods = BTreeSet::new();
    for row in rows[0].rows().unwrap_or_default() {
        let pod = row
            .get("external_ids")
            .and_then(|v| v.as_map())
            .and_then(|m| m.get_str(EXTERNAL_ID_POD))
            .and_then(|a| a.as_str());
        if let Some(pod) = pod {
            pods.insert(pod.to_owned());
        }
    }
    pods
}

/// The checks on a hand-made snapshot: consistent, then one fault at a time.
#[test]
fn the_checks_catch_each_fault() {
    let nic = |subnet: &str, ip: &str, mac: &str| Nic {
        subnet: subnet.into(),
        ip: Some(ip.parse().unwrap()),
        mac: Some(mac.into()),
    };
    let a = nic("s", "10.0.0.2", "00:00:00:00:00:02");
    let b = nic("s", "10.0.0.3", "00:00:00:00:00:03");
    let good = Snapshot {
        pods: BTreeMap::from([
            ("n/a".into(), Some(a.clone())),
            ("n/b".into(), Some(b.clone())),
        ]),
        terminating: BTreeSet::new(),
        ips: vec![("n/a".into(), a.clone()), ("n/b".into(), b.clone())],
        ports: vec![("n/a".into(), a.clone()), ("n/b".into(), b.clone())],
        using: BTreeMap::from([("s".into(), 2)]),
    };
    assert_eq!(violations(&good), Vec::<String>::new());
    assert_eq!(unsettled(&good), None);

    // two pods on one address (annotations, IP objects and ports all say so)
    let mut doubled = good.clone();
    let same = nic("s", "10.0.0.2", "00:00:00:00:00:03");
    doubled.pods.insert("n/b".into(), Some(same.clone()));
    doubled.ips[1].1 = same.clone();
    doubled.ports[1].1 = same;
    let found = violations(&doubled);
    assert!(
        found.iter().any(|v| v.contains("10.0.0.2 owned twice")),
        "{found:?}"
    );

    // an IP object disagreeing with its pod's annotations
    let mut stale = good.clone();
    stale.ips[0].1 = nic("s", "10.0.0.9", "00:00:00:00:00:02");
    assert!(!violations(&stale).is_empty());

    // a port left behind by a deleted pod, and a pod without its port
    let mut orphan = good.clone();
    orphan.pods.remove("n/b");
    orphan.using.insert("s".into(), 1);
    let found = violations(&orphan);
    assert!(
        found
            .iter()
            .any(|v| v.contains("a pod that does not exist")),
        "{found:?}"
    );
    let mut portless = good.clone();
    portless.ports.pop();
    assert!(violations(&portless)
        .iter()
        .any(|v| v.contains("has no port")));
    assert!(unsettled(&portless).is_some());

    // the IPAM counting other than the pods
    let mut miscounted = good;
    miscounted.using.insert("s".into(), 3);
    assert!(!violations(&miscounted).is_empty());
}
