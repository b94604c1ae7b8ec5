//! Two simulated nodes over GENEVE (ovn-harness `Cluster`: each node a network namespace
//! with its own ovsdb-server, userspace ovs-vswitchd, ovn-controller and `br-phy`
//! underlay), each with its own kube-ovn daemon: its own `Open_vSwitch` connection, its
//! own JSON-RPC socket, its node name (what `KUBE_NODE_NAME` gives the real daemon) and
//! the node's namespace as the host namespace of its veths. Pods are plugged by the
//! `kube-ovn` CNI binary, as containerd runs it, through the socket of the node they are
//! scheduled on, and talk to each other across the nodes.
//!
//! The daemons run in this process (the node namespaces cannot reach the embedded API
//! server on the root namespace's loopback), entering the node's namespace for the
//! datapath work as `HostNamespace::Path` does.

#[allow(dead_code)]
#[path = "cni_node/env.rs"]
mod env;

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use embedded_apiserver::{Config, EmbeddedApiServer};
use env::{allocate, container_id, run_cni, tcp_exchange, topology, PodNetns, OVN_DEFAULT, SECOND};
use kube_ovn_daemon::server::{self, ApiServer};
use kube_ovn_daemon::{CniDaemon, CniSettings, HostNamespace};
use ovn_harness::{unique_tag, Cluster, Node};
use ovn_nb::NbClient;
use ovs_vsctl::VsClient;

/// One node's daemon, serving on its own socket.
struct NodeDaemon {
    name: String,
    socket: PathBuf,
    _server: ApiServer,
    _dir: tempfile::TempDir,
}

impl NodeDaemon {
    async fn start(node: &Node, client: &kube::Client) -> NodeDaemon {
        let vs = VsClient::connect(&node.chassis().ovs_remote())
            .await
            .expect("node's OVS client");
        let mut cni = CniSettings::new(node.name());
        cni.host_netns = HostNamespace::Path(PathBuf::from("/var/run/netns").join(node.name()));
        cni.userspace_datapath = true;
        cni.annotation_wait = Duration::from_secs(10);
        cni.ovn_installed_wait = Duration::from_secs(20);
        let daemon = CniDaemon::new(client.clone(), vs, cni);
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("kube-ovn-daemon.sock");
        let server = server::serve(&socket, daemon).await.expect("serve");
        NodeDaemon {
            name: node.name().to_string(),
            socket,
            _server: server,
            _dir: dir,
        }
    }

    fn conf(&self) -> String {
        serde_json::json!({
            "cniVersion": "0.3.1",
            "name": "kube-ovn",
            "type": "kube-ovn",
            "server_socket": self.socket.display().to_string(),
        })
        .to_string()
    }
}

/// Runs the CNI binary off the runtime the daemons serve on; panics unless it succeeds.
async fn cni(daemon: &NodeDaemon, command: &str, container: &str, netns: &PodNetns, pod: &str) {
    let conf = daemon.conf();
    let (command, container, path, pod) = (
        command.to_string(),
        container.to_string(),
        netns.path().display().to_string(),
        pod.to_string(),
    );
    let out: Output = tokio::task::spawn_blocking(move || {
        run_cni(&command, &container, &path, "mn", &pod, &conf)
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "CNI on {} failed: {} {}",
        daemon.name,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ping(from: &PodNetns, to: &str) -> Result<(), String> {
    let out = from.exec(&["ping", "-c", "3", "-i", "0.2", "-W", "2", to]);
    if out.status.success() {
        return Ok(());
    }
    Err(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The chassis (by name) SB binds a logical port to.
fn bound_chassis(cluster: &Cluster, lsp: &str) -> String {
    let uuid = cluster
        .sbctl(&[
            "--bare",
            "--columns=chassis",
            "find",
            "Port_Binding",
            &format!("logical_port={lsp}"),
        ])
        .expect("Port_Binding");
    cluster
        .sbctl(&["--bare", "--columns=name", "list", "Chassis", uuid.trim()])
        .expect("Chassis")
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_on_two_nodes_talk_over_geneve_both_ways() {
    if !ovn_harness::require_stack(env::EXTRA_TOOLS) {
        return;
    }
    let cluster = Cluster::start(&unique_tag("km"), 2).expect("cluster");
    let (n1, n2) = (&cluster.nodes()[0], &cluster.nodes()[1]);
    let nb_remote = cluster.central().nb_remote();
    for subnet in [OVN_DEFAULT, SECOND] {
        topology(&nb_remote, subnet);
    }
    let nb = NbClient::connect(&nb_remote).await.expect("NB client");
    let api = EmbeddedApiServer::start(Config::default())
        .await
        .expect("API server");
    let client = api.kube_client().expect("kube client");
    let d1 = NodeDaemon::start(n1, &client).await;
    let d2 = NodeDaemon::start(n2, &client).await;

    // a on n1; b (same subnet) and c (the other subnet) on n2
    let (ip_a, _) = allocate(&client, &nb, "mn", "a", OVN_DEFAULT, 10, n1.name()).await;
    let (ip_b, _) = allocate(&client, &nb, "mn", "b", OVN_DEFAULT, 11, n2.name()).await;
    let (ip_c, _) = allocate(&client, &nb, "mn", "c", SECOND, 12, n2.name()).await;
    let (a, b, c) = (PodNetns::new(), PodNetns::new(), PodNetns::new());
    let ids = [container_id(), container_id(), container_id()];
    cni(&d1, "ADD", &ids[0], &a, "a").await;
    cni(&d2, "ADD", &ids[1], &b, "b").await;
    cni(&d2, "ADD", &ids[2], &c, "c").await;

    // each pod's port is on its own node's br-int, and SB binds it to that chassis
    let host = |id: &str| format!("{}_h", &id[..12]);
    let ports = |node: &Node| node.chassis().vsctl(&["list-ports", "br-int"]).unwrap();
    assert!(ports(n1).contains(&host(&ids[0])), "{}", ports(n1));
    assert!(!ports(n2).contains(&host(&ids[0])), "{}", ports(n2));
    assert!(ports(n2).contains(&host(&ids[1])), "{}", ports(n2));
    assert_eq!(bound_chassis(&cluster, "a.mn"), n1.name());
    assert_eq!(bound_chassis(&cluster, "b.mn"), n2.name());

    // the daemon of n1 refuses a pod scheduled on n2
    let stray = PodNetns::new();
    let conf = d1.conf();
    let path = stray.path().display().to_string();
    let refused = tokio::task::spawn_blocking(move || {
        run_cni("ADD", &container_id(), &path, "mn", "b", &conf)
    })
    .await
    .unwrap();
    assert!(!refused.status.success(), "n1 plugged n2's pod");

    // both ways across the nodes: ping, TCP; and across nodes and the cluster router
    ping(&a, &ip_b).expect("a (n1) -> b (n2)");
    ping(&b, &ip_a).expect("b (n2) -> a (n1)");
    ping(&a, &ip_c).expect("a (n1) -> c (n2, other subnet)");
    ping(&c, &ip_a).expect("c (n2, other subnet) -> a (n1)");
    assert_eq!(tcp_exchange(&b, &ip_b, &a), "pong", "TCP a (n1) -> b (n2)");
    assert_eq!(tcp_exchange(&a, &ip_a, &b), "pong", "TCP b (n2) -> a (n1)");

    // DEL through each node's daemon leaves each br-int without the pods' ports
    cni(&d1, "DEL", &ids[0], &a, "a").await;
    cni(&d2, "DEL", &ids[1], &b, "b").await;
    cni(&d2, "DEL", &ids[2], &c, "c").await;
    for (node, id) in [(n1, &ids[0]), (n2, &ids[1]), (n2, &ids[2])] {
        assert!(!ports(node).contains(&host(id)), "{}", ports(node));
    }
}
