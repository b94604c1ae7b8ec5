//! The `kube-ovn-daemon` binary as Kube-OVN's DaemonSet runs it, on a simulated node (a
//! namespace with its own ovsdb-server and ovs-vswitchd on the userspace datapath) and
//! the embedded API server: started with the args of Kube-OVN's chart, it bootstraps
//! the node from its Node's join annotations (Open_vSwitch external_ids with the tunnel
//! endpoint taken from `--iface`, `br-int`, `ovn0` with the join address, the MTU of
//! the interface less GENEVE's header, routes to every subnet and the service range),
//! follows Subnets coming and going, repairs drift, reports the join gateway check in
//! the Node's `NetworkUnavailable` condition, and stops on SIGTERM. Bad flags stop
//! it before it writes anything, naming the flag.

#[path = "daemon_node/sim.rs"]
mod sim;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube_ovn_api::crd::{Subnet, SubnetSpec};
use sim::{wait_until, SimNode};

const DAEMON: &str = env!("CARGO_BIN_EXE_kube-ovn-daemon");
/// How long a convergence may take before the test gives up.
const WAIT: Duration = Duration::from_secs(60);
/// The tunnel interface made in the node's namespace, and its address.
const TUNNEL: &str = "eth-tun";
const TUNNEL_IP: &str = "192.0.2.7";

/// The embedded API server with our CRDs, and a kubeconfig naming it.
async fn api_server(dir: &Path) -> (Handle, PathBuf) {
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.kube_client().expect("a client");
    let crd_api: Api<CustomResourceDefinition> = Api::all(client);
    for crd in kube_ovn_api::crd::crds() {
        crd_api.create(&PostParams::default(), &crd).await.unwrap();
    }
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    (server, kubeconfig)
}

fn subnet(name: &str, cidr: &str) -> Subnet {
    Subnet::new(
        name,
        SubnetSpec {
            cidr_block: Some(cidr.into()),
            ..Default::default()
        },
    )
}

/// The Node as the controller leaves it: its join port allocated.
fn node_object(name: &str) -> Node {
    let annotations = [
        ("ovn.kubernetes.io/allocated", "true"),
        ("ovn.kubernetes.io/ip_address", "100.64.0.2"),
        ("ovn.kubernetes.io/mac_address", "00:00:00:5e:bb:02"),
        ("ovn.kubernetes.io/cidr", "100.64.0.0/16"),
        ("ovn.kubernetes.io/gateway", "100.64.0.1"),
        ("ovn.kubernetes.io/logical_switch", "join"),
    ];
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The args of Kube-OVN's chart for `cni-server`, as far as they apply here, plus the
/// node-simulation ones.
fn daemon_args(node: &SimNode, dir: &Path, kubeconfig: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "--enable-mirror=false",
        "--mirror-iface=mirror0",
        "--node-switch=100.64.0.0/16",
        "--encap-checksum=true",
        "--service-cluster-ip-range=10.96.0.0/12",
        "--network-type=geneve",
        "--logtostderr=false",
        "--alsologtostderr=true",
        "--kubelet-dir=/var/lib/kubelet",
        "--enable-tproxy=false",
        "--ovs-vsctl-concurrency=100",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.push(format!("--kubeconfig={}", kubeconfig.display()));
    args.push(format!(
        "--bind-socket={}",
        dir.join("daemon.sock").display()
    ));
    args.push(format!("--ovs-socket={}", node.db.unix_remote()));
    args.push(format!("--host-netns={}", node.netns_path().display()));
    args.push("--ovn-remote=tcp:192.0.2.10:6642".into());
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

struct Daemon(Child);

impl Daemon {
    fn start(args: &[String], log: &Path) -> Daemon {
        let log = std::fs::File::create(log).unwrap();
        let child = Command::new(DAEMON)
            .args(args)
            .env("KUBE_NODE_NAME", "n1")
            .env_remove("POD_IP")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn kube-ovn-daemon");
        Daemon(child)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run_to_exit(args: &[String]) -> Output {
    Command::new(DAEMON)
        .args(args)
        .env("KUBE_NODE_NAME", "n1")
        .env_remove("POD_IP")
        .output()
        .expect("run kube-ovn-daemon")
}

/// `ip -n <node> ARGS`, empty while the device is missing.
fn ip(node: &SimNode, args: &[&str]) -> String {
    let mut all = vec!["-n", node.netns.as_str()];
    all.extend_from_slice(args);
    ovn_harness::run("ip", &all).unwrap_or_default()
}

fn routes(node: &SimNode) -> String {
    ip(node, &["route", "show", "dev", "ovn0"])
}

/// Waits off the runtime's threads (the API server runs on them).
async fn until(what: &str, log: &Path, check: impl FnMut() -> bool + Send + 'static) {
    let ok = tokio::task::spawn_blocking(move || wait_until(WAIT, check))
        .await
        .unwrap();
    assert!(
        ok,
        "{what} within {WAIT:?}; daemon log:\n{}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_bootstraps_its_node_and_follows_subnets() {
    if !ovn_harness::require_root(sim::TOOLS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (server, kubeconfig) = api_server(dir.path()).await;
    let client = server.kube_client().unwrap();
    let node = std::sync::Arc::new(SimNode::start());
    node.vsctl(&["--no-wait", "init"]);
    node.ip(&[
        "link",
        "add",
        TUNNEL,
        "mtu",
        "1500",
        "type",
        "veth",
        "peer",
        "name",
        "eth-tun-p",
    ]);
    node.ip(&["addr", "add", &format!("{TUNNEL_IP}/24"), "dev", TUNNEL]);
    node.ip(&["link", "set", TUNNEL, "up"]);
    let subnets: Api<Subnet> = Api::all(client.clone());
    for s in [
        subnet("join", "100.64.0.0/16"),
        subnet("ovn-default", "10.16.0.0/16"),
    ] {
        subnets.create(&PostParams::default(), &s).await.unwrap();
    }
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node_object("n1"))
        .await
        .unwrap();

    let log = dir.path().join("daemon.log");
    let iface = format!("--iface=eth-nope,{TUNNEL}");
    let mut daemon = Daemon::start(
        &daemon_args(&node, dir.path(), &kubeconfig, &[&iface]),
        &log,
    );

    let n = node.clone();
    until("ovn0 on the join network with routes", &log, move || {
        let addrs = ip(&n, &["addr", "show", "dev", "ovn0"]);
        let routes = routes(&n);
        addrs.contains("100.64.0.2/16")
            && routes.contains("10.16.0.0/16 via 100.64.0.1")
            && routes.contains("10.96.0.0/12 via 100.64.0.1")
    })
    .await;
    let root = |key: &str| node.get("Open_vSwitch", ".", &format!("external_ids:{key}"));
    assert_eq!(root("ovn-encap-ip"), TUNNEL_IP);
    assert_eq!(root("ovn-remote"), "tcp:192.0.2.10:6642");
    assert_eq!(root("ovn-encap-type"), "geneve");
    assert_eq!(root("ovn-encap-csum"), "true");
    assert_eq!(root("system-id"), "n1");
    assert_eq!(
        node.get("Interface", "ovn0", "external_ids:iface-id"),
        "node-n1"
    );
    // the tunnel interface's 1500 less GENEVE's 100, as Kube-OVN's default
    assert!(
        node.ip(&["link", "show", "dev", "ovn0"])
            .contains("mtu 1400"),
        "{}",
        node.ip(&["link", "show", "dev", "ovn0"])
    );
    assert!(
        !routes(&node).contains("100.64.0.0/16 via"),
        "join is on-link"
    );
    // no OVN behind br-int here: the join gateway never answers, and the Node says so
    let nodes: Api<Node> = Api::all(client.clone());
    let mut condition = None;
    for _ in 0..300 {
        let n = nodes.get_status("n1").await.unwrap();
        condition = n
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.type_ == "NetworkUnavailable");
        if condition.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let condition = condition.expect("a NetworkUnavailable condition");
    assert_eq!(condition.status, "True");
    assert_eq!(
        condition.reason.as_deref(),
        Some("JoinSubnetGatewayUnreachable")
    );
    assert!(condition.message.unwrap_or_default().contains("100.64.0.1"));

    // a new subnet is routed, a deleted one is not, a deleted route comes back
    subnets
        .create(&PostParams::default(), &subnet("extra", "10.77.0.0/16"))
        .await
        .unwrap();
    let n = node.clone();
    until("the new subnet routed", &log, move || {
        routes(&n).contains("10.77.0.0/16 via 100.64.0.1")
    })
    .await;
    subnets
        .delete("extra", &DeleteParams::default())
        .await
        .unwrap();
    let n = node.clone();
    until("the deleted subnet unrouted", &log, move || {
        !routes(&n).contains("10.77.0.0/16")
    })
    .await;
    node.ip(&["route", "del", "10.16.0.0/16", "dev", "ovn0"]);
    let n = node.clone();
    until("the deleted route repaired", &log, move || {
        routes(&n).contains("10.16.0.0/16 via 100.64.0.1")
    })
    .await;

    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("kubelet-dir") && text.contains("ignored"),
        "unimplemented Kube-OVN flags are logged as ignored: {text}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || {
        let status = daemon.0.wait();
        drop(daemon);
        status
    })
    .await
    .unwrap()
    .unwrap();
    assert!(status.success(), "stopped by SIGTERM: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_flags_name_themselves_and_nothing_is_written() {
    if !ovn_harness::require_root(sim::TOOLS) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_server, kubeconfig) = api_server(dir.path()).await;
    let node = SimNode::start();
    node.vsctl(&["--no-wait", "init"]);
    let before = node.vsctl(&["--format=json", "list", "Open_vSwitch"]);
    for (extra, named) in [
        ("--network-type=carrier-pigeon", "carrier-pigeon"),
        ("--service-cluster-ip-range=10.96.0.0/33", "10.96.0.0/33"),
        ("--iface=eth-missing", "eth-missing"),
        ("--iface=([", "(["),
        ("--no-such-flag=1", "--no-such-flag"),
    ] {
        let out = tokio::task::spawn_blocking({
            let args = daemon_args(&node, dir.path(), &kubeconfig, &[extra]);
            move || run_to_exit(&args)
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra} was accepted: {stderr}");
        assert!(stderr.contains(named), "{extra}: {stderr}");
    }
    assert_eq!(
        node.vsctl(&["--format=json", "list", "Open_vSwitch"]),
        before,
        "nothing written"
    );
    assert!(!node.ip(&["link", "show"]).contains("ovn0"));
}
