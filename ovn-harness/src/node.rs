//! Simulated Kubernetes nodes joined by GENEVE: each [`Node`] is a network namespace
//! holding that node's [`Chassis`] (ovsdb-server, ovs-vswitchd on the userspace
//! datapath, ovn-controller), and a [`Cluster`] is N of them beside one [`OvnCentral`],
//! wired to a shared underlay.
//!
//! The underlay: one namespace holding a Linux bridge; every node has a veth whose node
//! end is a port of a second netdev bridge `br-phy`, with the node's underlay address on
//! `br-phy`'s own device and `ovn-encap-ip` = that address. OVS's userspace tunnelling
//! routes with its own table and neighbour cache and needs the route's device to be an
//! OVS bridge: with the address on the veth itself, tunnelled packets are dropped
//! (`native tunnel routing failed`). A veth in OVS still feeds the kernel, so its peer
//! would see ARP answered twice (by the veth's MAC and by `br-phy`'s);
//! `arp_ignore=1` on the veth keeps OVS's neighbour cache on `br-phy`'s MAC.
//! GENEVE adds 58 bytes, so the underlay MTU is 1600 for 1500-byte pods.
//!
//! Everything is removed on drop: the daemons by pid, the namespaces (which takes their
//! veths along), nothing else is touched.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::chassis::{Chassis, ChassisConfig};
use crate::process::{HarnessError, ProcessInfo};
use crate::server::OvnCentral;

/// MTU of the underlay links: pods keep 1500 under GENEVE's 58 bytes.
pub const UNDERLAY_MTU: u32 = 1600;
/// The underlay's first three octets: node `i` (from 1) is `192.168.77.i/24`. The
/// addresses only exist inside the namespaces the cluster creates.
pub const UNDERLAY_PREFIX: &str = "192.168.77";
/// Name of the OVS bridge carrying the underlay address on each node.
pub const UNDERLAY_BRIDGE: &str = "br-phy";
/// Name of the node end of the underlay veth, inside the node's namespace.
pub const UNDERLAY_NIC: &str = "eth-ul";
const UNDERLAY_SWITCH: &str = "br-ul";

/// A unique short tag for names (namespaces, links) made in this process.
pub fn unique_tag(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{}x{n}", std::process::id())
}

fn netns_exists(ns: &str) -> bool {
    Path::new("/var/run/netns").join(ns).exists()
}

/// A network namespace created by us and deleted on drop (taking its links along).
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates namespace `name` with `lo` up; an existing one is an error (it is not ours).
    pub fn create(name: &str) -> Result<Self, HarnessError> {
        if netns_exists(name) {
            return Err(HarnessError::Unexpected(format!(
                "network namespace {name} already exists"
            )));
        }
        crate::run("ip", &["netns", "add", name])?;
        let ns = Self {
            name: name.to_string(),
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NS ARGS...`.
    pub fn ip(&self, args: &[&str]) -> Result<String, HarnessError> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        crate::run("ip", &all)
    }

    /// Runs `cmd args...` inside the namespace (`ip netns exec`).
    pub fn exec(&self, cmd: &str, args: &[&str]) -> Result<String, HarnessError> {
        let mut all = vec!["netns", "exec", self.name.as_str(), cmd];
        all.extend_from_slice(args);
        crate::run("ip", &all)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(error) = crate::run("ip", &["netns", "del", &self.name]) {
            tracing::warn!(netns = %self.name, %error, "could not delete namespace");
        }
    }
}

/// One simulated node: its namespace, chassis and underlay attachment.
#[derive(Debug)]
pub struct Node {
    // Drop order: the chassis (daemons by pid) before the namespace.
    chassis: Chassis,
    netns: Netns,
    underlay_ip: String,
}

impl Node {
    /// Starts node `name` attached to `underlay` with address `underlay_ip` (no prefix),
    /// its ovn-controller on `sb_remote`; returns once its Chassis is in SB.
    pub fn start(
        name: &str,
        sb_remote: &str,
        underlay: &Underlay,
        underlay_ip: &str,
    ) -> Result<Self, HarnessError> {
        let netns = Netns::create(name)?;
        underlay.attach(&netns)?;
        let chassis = Chassis::start(ChassisConfig::new(name, sb_remote, underlay_ip))?;
        let node = Self {
            chassis,
            netns,
            underlay_ip: underlay_ip.to_string(),
        };
        node.bring_up_br_phy()?;
        Ok(node)
    }

    /// Starts the node's `ovs-vswitchd` again if it has exited
    /// ([`Chassis::revive_vswitchd`]) and puts the underlay address back on the new
    /// `br-phy` device. Returns whether it was restarted.
    pub fn revive(&self) -> Result<bool, HarnessError> {
        if !self.chassis.revive_vswitchd()? {
            return Ok(false);
        }
        self.bring_up_br_phy()?;
        Ok(true)
    }

    /// `br-phy` with the underlay veth as its port and the node's address on its device.
    fn bring_up_br_phy(&self) -> Result<(), HarnessError> {
        let mtu = format!("mtu_request={UNDERLAY_MTU}");
        self.chassis.vsctl(&[
            "--timeout=30",
            "--may-exist",
            "add-br",
            UNDERLAY_BRIDGE,
            "--",
            "set",
            "Bridge",
            UNDERLAY_BRIDGE,
            "datapath_type=netdev",
            "--",
            "set",
            "Interface",
            UNDERLAY_BRIDGE,
            &mtu,
            "--",
            "--may-exist",
            "add-port",
            UNDERLAY_BRIDGE,
            UNDERLAY_NIC,
        ])?;
        let sysctl = format!("net.ipv4.conf.{UNDERLAY_NIC}.arp_ignore=1");
        self.netns.exec("sysctl", &["-qw", &sysctl])?;
        let addr = format!("{}/24", self.underlay_ip);
        self.netns
            .ip(&["addr", "replace", &addr, "dev", UNDERLAY_BRIDGE])?;
        self.netns.ip(&["link", "set", UNDERLAY_BRIDGE, "up"])?;
        Ok(())
    }

    /// The chassis (its `vsctl`, `ovs_remote`, `wait_ovn_installed`).
    pub fn chassis(&self) -> &Chassis {
        &self.chassis
    }

    /// The node's namespace.
    pub fn netns(&self) -> &Netns {
        &self.netns
    }

    /// The node's name (= chassis name = namespace name).
    pub fn name(&self) -> &str {
        self.netns.name()
    }

    /// Its underlay address (`ovn-encap-ip`).
    pub fn underlay_ip(&self) -> &str {
        &self.underlay_ip
    }

    /// The MAC of `br-phy`'s device, which carries the underlay address.
    pub fn underlay_mac(&self) -> Result<String, HarnessError> {
        let path = format!("/sys/class/net/{UNDERLAY_BRIDGE}/address");
        Ok(self.netns.exec("cat", &[&path])?.trim().to_string())
    }

    /// Plugs a fake pod as the CNI would: a namespace `pod.netns` with `eth0` (MAC,
    /// address, MTU 1500, TX checksum offload off, which TCP through the userspace
    /// datapath needs), its host end `pod.host_iface` in this node's namespace, added to
    /// `br-int` with `external_ids:iface-id=pod.iface_id`. Waits for `ovn-installed`.
    pub fn plug_pod(&self, pod: &PodSpec) -> Result<Pod<'_>, HarnessError> {
        let netns = Netns::create(&pod.netns)?;
        let host = pod.host_iface.as_str();
        self.netns.ip(&[
            "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", &pod.netns,
        ])?;
        let plugged = Pod {
            node: self,
            host_iface: host.to_string(),
            netns,
        };
        let ns = &plugged.netns;
        ns.ip(&["link", "set", "eth0", "address", &pod.mac, "mtu", "1500"])?;
        ns.ip(&["addr", "add", &pod.cidr, "dev", "eth0"])?;
        ns.ip(&["link", "set", "eth0", "up"])?;
        if let Some(gw) = &pod.gateway {
            ns.ip(&["route", "add", "default", "via", gw])?;
        }
        ns.exec("ethtool", &["-K", "eth0", "tx", "off"])?;
        self.netns.ip(&["link", "set", host, "up"])?;
        let iface_id = format!("external_ids:iface-id={}", pod.iface_id);
        self.chassis.vsctl(&[
            "add-port",
            "br-int",
            host,
            "--",
            "set",
            "Interface",
            host,
            &iface_id,
        ])?;
        if !self
            .chassis
            .wait_ovn_installed(host, Duration::from_secs(30))
        {
            return Err(HarnessError::Unexpected(format!(
                "{host} on {} never got external_ids:ovn-installed=true",
                self.name()
            )));
        }
        Ok(plugged)
    }
}

/// What [`Node::plug_pod`] creates.
#[derive(Debug, Clone)]
pub struct PodSpec {
    /// The pod's namespace (created, deleted with the [`Pod`]).
    pub netns: String,
    /// The host end's name (at most 15 bytes), in the node's namespace.
    pub host_iface: String,
    /// The logical switch port (`iface-id`).
    pub iface_id: String,
    /// `eth0`'s MAC.
    pub mac: String,
    /// `eth0`'s address with prefix, `10.0.0.11/24`.
    pub cidr: String,
    /// Default route via this address, if any.
    pub gateway: Option<String>,
}

/// A plugged fake pod; dropping it removes its port from `br-int` and its namespace.
#[derive(Debug)]
pub struct Pod<'n> {
    node: &'n Node,
    host_iface: String,
    netns: Netns,
}

impl Pod<'_> {
    /// The pod's namespace.
    pub fn netns(&self) -> &Netns {
        &self.netns
    }

    /// The host end's name (the OVS port and interface).
    pub fn host_iface(&self) -> &str {
        &self.host_iface
    }

    /// One `ping -c 1 -W 1` from the pod; true on a reply.
    pub fn ping(&self, addr: &str) -> bool {
        self.netns
            .exec("ping", &["-c", "1", "-W", "1", addr])
            .is_ok()
    }
}

impl Drop for Pod<'_> {
    fn drop(&mut self) {
        let _ = self
            .node
            .chassis
            .vsctl(&["--if-exists", "del-port", "br-int", &self.host_iface]);
        // the namespace (dropped next) takes eth0 and so the host end with it
    }
}

/// The shared underlay: a namespace holding a Linux bridge every node's veth joins.
#[derive(Debug)]
pub struct Underlay {
    netns: Netns,
    attached: AtomicU32,
}

impl Underlay {
    /// Creates the namespace `name` and its bridge.
    pub fn create(name: &str) -> Result<Self, HarnessError> {
        let netns = Netns::create(name)?;
        netns.ip(&["link", "add", UNDERLAY_SWITCH, "type", "bridge"])?;
        netns.ip(&["link", "set", UNDERLAY_SWITCH, "up"])?;
        Ok(Self {
            netns,
            attached: AtomicU32::new(0),
        })
    }

    /// The underlay's namespace.
    pub fn netns(&self) -> &Netns {
        &self.netns
    }

    /// A veth from the underlay bridge into `node` (named [`UNDERLAY_NIC`] there).
    fn attach(&self, node: &Netns) -> Result<(), HarnessError> {
        let n = self.attached.fetch_add(1, Ordering::Relaxed);
        let port = format!("ul{n}");
        let mtu = UNDERLAY_MTU.to_string();
        self.netns.ip(&[
            "link",
            "add",
            &port,
            "mtu",
            &mtu,
            "type",
            "veth",
            "peer",
            "name",
            UNDERLAY_NIC,
            "mtu",
            &mtu,
            "netns",
            node.name(),
        ])?;
        self.netns
            .ip(&["link", "set", &port, "master", UNDERLAY_SWITCH, "up"])?;
        node.ip(&["link", "set", UNDERLAY_NIC, "up"])?;
        Ok(())
    }
}

/// N nodes beside one OVN central (NB, SB, northd on unix sockets, which every node
/// namespace reaches through the filesystem).
#[derive(Debug)]
pub struct Cluster {
    // Drop order: nodes (their controllers leave SB), the underlay, then the central.
    nodes: Vec<Node>,
    underlay: Underlay,
    central: OvnCentral,
}

impl Cluster {
    /// Starts the central and `n` nodes named `<tag>n1`, `<tag>n2`, ... (`tag` short: a
    /// namespace name is also a chassis name); node `i` has underlay address
    /// `192.168.77.i`. Returns once every chassis is registered in SB.
    pub fn start(tag: &str, n: usize) -> Result<Self, HarnessError> {
        if n == 0 || n > 250 {
            return Err(HarnessError::Unexpected(format!(
                "a cluster has 1 to 250 nodes, not {n}"
            )));
        }
        let central = OvnCentral::start()?;
        let underlay = Underlay::create(&format!("{tag}ul"))?;
        let mut cluster = Self {
            nodes: Vec::with_capacity(n),
            underlay,
            central,
        };
        for i in 1..=n {
            let node = Node::start(
                &format!("{tag}n{i}"),
                &cluster.central.sb_remote(),
                &cluster.underlay,
                &format!("{UNDERLAY_PREFIX}.{i}"),
            )?;
            cluster.nodes.push(node);
        }
        cluster.share_underlay_neighbours()?;
        Ok(cluster)
    }

    /// Tells every node's tunnel neighbour cache the underlay MAC of every other node
    /// (`ovs-appctl tnl/neigh/set br-phy IP MAC`). OVS's userspace tunnelling drops a
    /// packet to a tunnel endpoint it has not resolved yet while it sends the ARP
    /// request (the kernel datapath queues it instead), so without this the first
    /// packet from a node to another it has not talked to is lost. An entry lasts 15
    /// minutes from its last use; setting it again renews it.
    pub fn share_underlay_neighbours(&self) -> Result<(), HarnessError> {
        let mut peers = Vec::with_capacity(self.nodes.len());
        for node in &self.nodes {
            peers.push((node.underlay_ip().to_string(), node.underlay_mac()?));
        }
        for node in &self.nodes {
            for (ip, mac) in peers.iter().filter(|(ip, _)| ip != node.underlay_ip()) {
                node.chassis
                    .vswitchd_appctl(&["tnl/neigh/set", UNDERLAY_BRIDGE, ip, mac])?;
            }
        }
        Ok(())
    }

    /// The central (NB, SB, northd).
    pub fn central(&self) -> &OvnCentral {
        &self.central
    }

    /// The nodes, in start order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Restarts the datapath of every node whose `ovs-vswitchd` has exited
    /// ([`Node::revive`]); the names of the nodes restarted.
    pub fn revive_nodes(&self) -> Result<Vec<String>, HarnessError> {
        let mut revived = Vec::new();
        for node in &self.nodes {
            if node.revive()? {
                revived.push(node.name().to_string());
            }
        }
        if !revived.is_empty() {
            // a new ovs-vswitchd knows no neighbour, and its br-phy has a new MAC
            self.share_underlay_neighbours()?;
        }
        Ok(revived)
    }

    /// [`Chassis::purge_datapath_flows`] on every node.
    pub fn purge_datapath_flows(&self) -> Result<(), HarnessError> {
        for node in &self.nodes {
            node.chassis.purge_datapath_flows()?;
        }
        Ok(())
    }

    /// The shared underlay.
    pub fn underlay(&self) -> &Underlay {
        &self.underlay
    }

    /// Every daemon of the cluster as a record: the central's, then each node's.
    pub fn processes(&self) -> Vec<ProcessInfo> {
        let mut all = self.central.processes();
        for node in &self.nodes {
            all.extend(node.chassis.processes());
        }
        all
    }

    /// `ovn-nbctl --db=NB --timeout=20 ARGS...`.
    pub fn nbctl(&self, args: &[&str]) -> Result<String, HarnessError> {
        let db = format!("--db={}", self.central.nb_remote());
        let mut all = vec![db.as_str(), "--timeout=20"];
        all.extend_from_slice(args);
        crate::run("ovn-nbctl", &all)
    }

    /// `ovn-sbctl --db=SB --timeout=20 ARGS...`.
    pub fn sbctl(&self, args: &[&str]) -> Result<String, HarnessError> {
        let db = format!("--db={}", self.central.sb_remote());
        let mut all = vec![db.as_str(), "--timeout=20"];
        all.extend_from_slice(args);
        crate::run("ovn-sbctl", &all)
    }
}
