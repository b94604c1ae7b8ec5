//! One simulated node for the CNI tests: OVN central (NB, SB, northd), a chassis
//! (ovsdb-server, ovs-vswitchd on the userspace datapath inside a network namespace made
//! for the test, ovn-controller), an embedded API server, and the daemon serving its
//! JSON-RPC socket in a temp dir with the chassis namespace as its host namespace. The
//! test plays the controller: it writes the pods' annotations (through
//! `annotations::PodNetwork`) and their logical switch ports (through `ovn-nb`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use k8s_openapi::api::core::v1::{Container, Namespace, Pod, PodSpec};
use kube::api::{Api, PostParams};
use kube_ovn_api::annotations::{AnnotationMap, CidrPair, IpPair, PodNetwork, Provider};
use kube_ovn_daemon::server::{self, ApiServer};
use kube_ovn_daemon::{
    ensure, CniDaemon, CniSettings, DatapathType, EncapType, HostNamespace, HostNetwork,
    NodeBootstrap,
};
use ovn_harness::{Chassis, ChassisConfig, OvnCentral};
use ovn_nb::NbClient;
use ovs_vsctl::VsClient;

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A name unique in this machine for this test process.
pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{:x}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A container id as containerd makes them (64 hex digits), unique in its first 12.
pub fn container_id() -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{:07x}{:05x}{}", std::process::id(), n, "c".repeat(52))
}

/// What these tests drive beside the stack ([`ovn_harness::STACK_TOOLS`]).
pub const EXTRA_TOOLS: &[&str] = &["tc", "ping", "python3"];

/// A subnet the test sets up in NB: a logical switch attached to the cluster router.
#[derive(Debug, Clone, Copy)]
pub struct SubnetDef {
    pub name: &'static str,
    pub cidr: &'static str,
    pub gateway: &'static str,
    pub router_mac: &'static str,
}

pub const OVN_DEFAULT: SubnetDef = SubnetDef {
    name: "ovn-default",
    cidr: "10.16.0.0/16",
    gateway: "10.16.0.1",
    router_mac: "00:00:00:aa:00:01",
};

pub const SECOND: SubnetDef = SubnetDef {
    name: "second",
    cidr: "10.17.0.0/16",
    gateway: "10.17.0.1",
    router_mac: "00:00:00:aa:00:02",
};

/// ovn-default as a pod annotated with a gateway nobody answers for would see it.
pub const DEAD_GATEWAY: SubnetDef = SubnetDef {
    gateway: "10.16.0.254",
    ..OVN_DEFAULT
};

pub const ROUTER: &str = "ovn-cluster";
pub const NODE: &str = "node-a";
/// ovn0's MAC.
pub const JOIN_MAC: &str = "00:00:00:aa:64:02";

/// A pod network namespace, deleted on drop.
pub struct PodNetns {
    pub name: String,
}

impl PodNetns {
    pub fn new() -> PodNetns {
        let name = unique("kocp");
        ovn_harness::run("ip", &["netns", "add", &name]).expect("ip netns add");
        ovn_harness::run("ip", &["-n", &name, "link", "set", "lo", "up"]).expect("lo up");
        PodNetns { name }
    }

    pub fn path(&self) -> PathBuf {
        PathBuf::from("/var/run/netns").join(&self.name)
    }

    /// Runs a command inside the namespace.
    pub fn exec(&self, args: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("ip netns exec")
    }

    /// `ip -n NS ARGS` output.
    pub fn ip(&self, args: &[&str]) -> String {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        ovn_harness::run("ip", &all).unwrap_or_else(|e| format!("{e}"))
    }
}

impl Drop for PodNetns {
    fn drop(&mut self) {
        let _ = ovn_harness::run("ip", &["netns", "del", &self.name]);
    }
}

/// The whole node.
pub struct Env {
    pub daemon: Arc<CniDaemon>,
    pub server: Option<ApiServer>,
    pub socket: PathBuf,
    pub nb: NbClient,
    pub client: kube::Client,
    /// Kept running for the test's length.
    _api: Handle,
    pub dir: tempfile::TempDir,
    // dropped after the daemon's clients: the chassis, then OVN central
    pub chassis: Chassis,
    pub central: OvnCentral,
}

impl Env {
    /// Starts everything, or `None` outside CI when a tool or root is missing.
    pub async fn start(settings: impl FnOnce(&mut CniSettings)) -> Option<Env> {
        if !ovn_harness::require_stack(EXTRA_TOOLS) {
            return None;
        }
        let central = OvnCentral::start().expect("OVN central");
        let name = unique("kocn");
        let chassis = Chassis::start(ChassisConfig::new(&name, &central.sb_remote(), "127.0.0.1"))
            .expect("chassis");
        let nb = NbClient::connect(&central.nb_remote())
            .await
            .expect("NB client");
        for subnet in [OVN_DEFAULT, SECOND] {
            topology(&central.nb_remote(), subnet);
        }
        let api = EmbeddedApiServer::start(Config::default())
            .await
            .expect("API server");
        let client = api.kube_client().expect("kube client");
        let vs = VsClient::connect(&chassis.ovs_remote())
            .await
            .expect("OVS client");
        let mut cni = CniSettings::new(NODE);
        cni.host_netns = HostNamespace::Path(PathBuf::from("/var/run/netns").join(&name));
        cni.userspace_datapath = true;
        cni.annotation_wait = Duration::from_secs(10);
        cni.ovn_installed_wait = Duration::from_secs(20);
        settings(&mut cni);
        let daemon = CniDaemon::new(client.clone(), vs, cni);
        let dir = tempfile::tempdir().expect("temp dir");
        let socket = dir.path().join("kube-ovn-daemon.sock");
        let server = server::serve(&socket, daemon.clone()).await.expect("serve");
        Some(Env {
            daemon,
            server: Some(server),
            socket,
            nb,
            client,
            _api: api,
            dir,
            chassis,
            central,
        })
    }

    /// Stops the API socket (the daemon is "down").
    pub async fn stop_server(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
    }

    /// Creates the pod (scheduled here) without any network annotation.
    pub async fn create_pod(&self, namespace: &str, name: &str, annotations: AnnotationMap) {
        create_pod(&self.client, namespace, name, annotations, NODE).await;
    }

    /// Plays the controller for one pod: annotations and the logical switch port.
    pub async fn allocate(
        &self,
        namespace: &str,
        name: &str,
        subnet: SubnetDef,
        host: u8,
    ) -> (String, String) {
        allocate(&self.client, &self.nb, namespace, name, subnet, host, NODE).await
    }

    /// Plays the controller and the daemon's bootstrap for the node: the join switch and
    /// the node's port on it in NB, then `br-int`/`ovn0` and the host routes through
    /// `daemon::ensure` in the node's namespace (keeping the chassis' own identity).
    pub async fn bootstrap_node(&self) {
        let db = format!("--db={}", self.central.nb_remote());
        let node_port = format!("node-{NODE}");
        ovn_harness::run(
            "ovn-nbctl",
            &[
                &db,
                "ls-add",
                "join",
                "--",
                "lrp-add",
                ROUTER,
                "ovn-cluster-join",
                "00:00:00:aa:00:64",
                "100.64.0.1/16",
                "--",
                "lsp-add",
                "join",
                "join-ovn-cluster",
                "--",
                "lsp-set-type",
                "join-ovn-cluster",
                "router",
                "--",
                "lsp-set-addresses",
                "join-ovn-cluster",
                "router",
                "--",
                "lsp-set-options",
                "join-ovn-cluster",
                "router-port=ovn-cluster-join",
                "--",
                "lsp-add",
                "join",
                &node_port,
                "--",
                "lsp-set-addresses",
                &node_port,
                &format!("{JOIN_MAC} 100.64.0.2"),
            ],
        )
        .expect("join switch");
        let name = self.chassis.config().name.clone();
        let boot = NodeBootstrap {
            node_name: NODE.into(),
            system_id: name.clone(),
            hostname: name.clone(),
            ovn_remotes: vec![self.central.sb_remote()],
            encap_type: EncapType::Geneve,
            encap_ip: "127.0.0.1".parse().unwrap(),
            encap_csum: true,
            bridge_mappings: Default::default(),
            datapath_type: DatapathType::Netdev,
            join_mac: JOIN_MAC.into(),
            join_ip: IpPair::v4("100.64.0.2".parse().unwrap()),
            join_cidr: CidrPair::v4("100.64.0.0/16".parse().unwrap()),
            join_gateway: IpPair::v4("100.64.0.1".parse().unwrap()),
            mtu: 1400,
            routes: vec![
                OVN_DEFAULT.cidr.parse().unwrap(),
                SECOND.cidr.parse().unwrap(),
            ],
        };
        let vs = VsClient::connect(&self.chassis.ovs_remote())
            .await
            .expect("OVS client");
        let path = PathBuf::from("/var/run/netns").join(&name);
        let net = HostNetwork::open(&path).await.expect("node netlink");
        ensure(&vs, &net, &boot).await.expect("node bootstrap");
        assert!(
            self.chassis
                .wait_ovn_installed("ovn0", Duration::from_secs(20)),
            "ovn0 not installed"
        );
    }

    /// Restarts ovs-vswitchd: the running one exits (its ports stay in the database and
    /// the veths in the namespace), a new one is started on the same database and
    /// namespace. Returns the new process, to stop by pid at the end.
    pub fn restart_vswitchd(&self) -> VswitchdProcess {
        let remote = self.chassis.ovs_remote();
        let dir = Path::new(remote.trim_start_matches("unix:"))
            .parent()
            .unwrap()
            .to_path_buf();
        let old = dir.join("ovs-vswitchd.ctl").display().to_string();
        ovn_harness::run("ovs-appctl", &["-t", &old, "exit"]).expect("vswitchd exit");
        let ctl = dir.join("ovs-vswitchd-restarted.ctl");
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                self.chassis.netns().unwrap(),
                "ovs-vswitchd",
                &remote,
            ])
            .arg("--disable-system")
            .arg(format!("--unixctl={}", ctl.display()))
            .arg(format!(
                "--log-file={}",
                dir.join("ovs-vswitchd-restarted.log").display()
            ))
            .args(["--no-chdir", "-vconsole:off"])
            .env("OVS_RUNDIR", &dir)
            .env("OVS_DBDIR", &dir)
            .stdin(Stdio::null())
            .spawn()
            .expect("start ovs-vswitchd again");
        let process = VswitchdProcess { child, ctl };
        let ctl = process.ctl.display().to_string();
        let up = (0..300).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            ovn_harness::run("ovs-appctl", &["-t", &ctl, "version"]).is_ok()
        });
        assert!(up, "restarted ovs-vswitchd does not answer");
        process
    }

    /// Runs a command in the node's namespace.
    pub fn node_exec(&self, args: &[&str]) -> Output {
        Command::new("ip")
            .args([
                "netns",
                "exec",
                self.chassis.netns().expect("chassis namespace"),
            ])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("ip netns exec")
    }

    /// `ovs-vsctl` on the node's database.
    pub fn vsctl(&self, args: &[&str]) -> String {
        let mut all = vec!["--timeout=20"];
        all.extend_from_slice(args);
        self.chassis.vsctl(&all).expect("ovs-vsctl")
    }

    /// `ip -n <node> ARGS` in the node's namespace.
    pub fn node_ip(&self, args: &[&str]) -> String {
        let ns = self.chassis.netns().expect("chassis namespace");
        let mut all = vec!["-n", ns];
        all.extend_from_slice(args);
        ovn_harness::run("ip", &all).unwrap_or_else(|e| format!("{e}"))
    }

    /// The ports on br-int (without the bridge's own).
    pub fn ports(&self) -> Vec<String> {
        self.vsctl(&["list-ports", "br-int"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Rows of a table, as `ovs-vsctl --bare --columns=_uuid list TABLE` prints them.
    pub fn rows(&self, table: &str) -> usize {
        self.vsctl(&["--bare", "--columns=_uuid", "list", table])
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count()
    }

    /// The kube-ovn plugin's configuration as the runtime passes it on stdin.
    pub fn plugin_conf(&self) -> String {
        serde_json::json!({
            "cniVersion": "0.3.1",
            "name": "kube-ovn",
            "type": "kube-ovn",
            "server_socket": self.socket.display().to_string(),
        })
        .to_string()
    }
}

/// Creates the pod, scheduled on `node`, with `annotations`.
pub async fn create_pod(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    annotations: AnnotationMap,
    node: &str,
) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(namespace.into());
    let _ = namespaces.create(&PostParams::default(), &ns).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    pod.metadata.annotations = Some(annotations);
    pod.spec = Some(PodSpec {
        node_name: Some(node.into()),
        containers: vec![Container {
            name: "c".into(),
            image: Some("pause".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
}

/// Plays the controller for one pod on `node`: the pod with its annotations (address
/// `<subnet prefix>.0.<host>`, a fresh MAC) and its logical switch port. Returns the
/// address and the MAC.
pub async fn allocate(
    client: &kube::Client,
    nb: &NbClient,
    namespace: &str,
    name: &str,
    subnet: SubnetDef,
    host: u8,
    node: &str,
) -> (String, String) {
    let (ip, mac, map) = pod_network(subnet, host);
    create_pod(client, namespace, name, map, node).await;
    add_port(nb, subnet, &format!("{name}.{namespace}"), &mac, &ip).await;
    (ip, mac)
}

/// The controller's annotations for a pod at `<subnet prefix>.0.<host>` with a fresh
/// MAC: the address, the MAC and the annotations.
pub fn pod_network(subnet: SubnetDef, host: u8) -> (String, String, AnnotationMap) {
    let prefix = subnet.cidr.split('/').next().unwrap();
    let octets: Vec<&str> = prefix.split('.').collect();
    let ip = format!("{}.{}.0.{host}", octets[0], octets[1]);
    let mac = format!(
        "00:00:00:{:02x}:{:02x}:{host:02x}",
        octets[1].parse::<u8>().unwrap(),
        NEXT.fetch_add(1, Ordering::Relaxed) as u8
    );
    let network = PodNetwork {
        allocated: Some(true),
        routed: Some(true),
        ip_address: Some(IpPair::v4(ip.parse().unwrap())),
        mac_address: Some(mac.parse().unwrap()),
        cidr: Some(CidrPair::v4(subnet.cidr.parse().unwrap())),
        gateway: Some(IpPair::v4(subnet.gateway.parse().unwrap())),
        logical_switch: Some(subnet.name.into()),
        ..Default::default()
    };
    let mut map = AnnotationMap::new();
    network.write_into(&Provider::ovn(), &mut map);
    (ip, mac, map)
}

/// The pod's logical switch port, as the controller adds it.
pub async fn add_port(nb: &NbClient, subnet: SubnetDef, port: &str, mac: &str, ip: &str) {
    let mut txn = nb.txn();
    txn.lsp_add(subnet.name, port).expect("lsp-add");
    txn.lsp_set_addresses(port, [format!("{mac} {ip}")])
        .expect("lsp-set-addresses");
    nb.commit(txn).await.expect("commit LSP");
}

/// A TCP server in `server` on `ip:8080` answers "pong"; the client in `client` reads it.
pub fn tcp_exchange(server: &PodNetns, ip: &str, client: &PodNetns) -> String {
    let script = format!(
        "import socket\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
         s.bind(('{ip}',8080))\ns.listen(1)\ns.settimeout(20)\nc,_=s.accept()\nc.sendall(b'pong')\nc.close()\n"
    );
    let mut child = std::process::Command::new("ip")
        .args(["netns", "exec", &server.name, "python3", "-c", &script])
        .spawn()
        .expect("server");
    let client_script = format!(
        "import socket,time\nfor i in range(100):\n  try:\n    c=socket.create_connection(('{ip}',8080),timeout=2)\n    break\n  except OSError:\n    time.sleep(0.1)\nprint(c.recv(10).decode(),end='')\n"
    );
    let out = client.exec(&["python3", "-c", &client_script]);
    let _ = child.wait();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An ovs-vswitchd the test started; stopped by its own pid on drop.
pub struct VswitchdProcess {
    child: std::process::Child,
    ctl: PathBuf,
}

impl Drop for VswitchdProcess {
    fn drop(&mut self) {
        let ctl = self.ctl.display().to_string();
        let _ = ovn_harness::run("ovs-appctl", &["-t", &ctl, "exit", "--cleanup"]);
        let exited = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            matches!(self.child.try_wait(), Ok(Some(_)))
        });
        if !exited {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Runs the kube-ovn binary with `CNI_*` as containerd sets them and `conf` on stdin.
pub fn run_cni(
    command: &str,
    container: &str,
    netns: &str,
    namespace: &str,
    pod: &str,
    conf: &str,
) -> Output {
    use std::io::Write;
    let args = format!(
        "IgnoreUnknown=1;K8S_POD_NAMESPACE={namespace};K8S_POD_NAME={pod};K8S_POD_INFRA_CONTAINER_ID={container};K8S_POD_UID=0b5c6c4e-{pod}"
    );
    let mut child = Command::new(kube_ovn_test_support::workspace_binary("kube-ovn"))
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", container)
        .env("CNI_NETNS", netns)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", "/usr/lib/cni")
        .env("CNI_ARGS", args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kube-ovn");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(conf.as_bytes())
        .unwrap();
    child.wait_with_output().expect("kube-ovn output")
}

/// The kube-ovn binary's directory, for a runtime's plugin path.
pub fn plugin_dir() -> PathBuf {
    let cni = kube_ovn_test_support::workspace_binary("kube-ovn");
    cni.parent().unwrap().to_path_buf()
}

/// The switch and its router port, as the Subnet reconciler writes them.
pub fn topology(nb: &str, subnet: SubnetDef) {
    let (net, len) = subnet.cidr.split_once('/').unwrap();
    let _ = net;
    let lrp = format!("{ROUTER}-{}", subnet.name);
    let lsp = format!("{}-{ROUTER}", subnet.name);
    let db = format!("--db={nb}");
    ovn_harness::run(
        "ovn-nbctl",
        &[
            &db,
            "--may-exist",
            "lr-add",
            ROUTER,
            "--",
            "ls-add",
            subnet.name,
            "--",
            "lrp-add",
            ROUTER,
            &lrp,
            subnet.router_mac,
            &format!("{}/{len}", subnet.gateway),
            "--",
            "lsp-add",
            subnet.name,
            &lsp,
            "--",
            "lsp-set-type",
            &lsp,
            "router",
            "--",
            "lsp-set-addresses",
            &lsp,
            "router",
            "--",
            "lsp-set-options",
            &lsp,
            &format!("router-port={lrp}"),
        ],
    )
    .expect("ovn-nbctl topology");
}
