//! natOutgoing in a fake node namespace: a "pod" subnet behind the node reaches an
//! "outside" namespace masqueraded as the node, another cluster subnet unmasqueraded.
//! The host's own tables are never touched.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use kube_ovn_api::crd::{Subnet, SubnetSpec};
use kube_ovn_daemon::nat::{self, NatError, NatSubnet};
use ovn_harness::{require_root, unique_tag, Netns};

const POD: &str = "10.16.0.2";
const OTHER: &str = "10.17.0.2";
const OUTSIDE: &str = "192.0.2.2";
const NODE_OUTSIDE: &str = "192.0.2.1";

/// Runs `f` on a thread that alone enters namespace `ns`; child processes it starts
/// (iptables) live there too.
fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(path).expect("namespace");
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).expect("setns");
        f()
    })
    .join()
    .expect("namespace thread")
}

/// The source address a UDP datagram from namespace `from` has when it reaches `to_ip`
/// in namespace `to`.
fn source_seen(from: &str, to: &str, to_ip: &str, port: u16) -> IpAddr {
    let addr: SocketAddr = format!("{to_ip}:{port}").parse().unwrap();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let to = to.to_string();
    let receiver = std::thread::spawn(move || {
        in_netns(&to, move || {
            let socket = UdpSocket::bind(addr).expect("bind");
            socket
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            ready_tx.send(()).unwrap();
            let mut buf = [0u8; 64];
            socket.recv_from(&mut buf).expect("a datagram").1.ip()
        })
    });
    ready_rx.recv().unwrap();
    in_netns(from, move || {
        let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
        // the first may wait on ARP; a few are sent, the receiver reads one
        for _ in 0..3 {
            socket.send_to(b"probe", addr).expect("send");
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    receiver.join().expect("receiver")
}

/// A namespace `peer` with `eth0` = `peer_ip/24` wired to `node` (node side `node_ip/24`
/// on `link`), its default route via the node when `routed`.
fn wire(node: &Netns, link: &str, node_ip: &str, peer: &Netns, peer_ip: &str, routed: bool) {
    node.ip(&[
        "link",
        "add",
        link,
        "type",
        "veth",
        "peer",
        "name",
        "eth0",
        "netns",
        peer.name(),
    ])
    .unwrap();
    node.ip(&["addr", "add", &format!("{node_ip}/24"), "dev", link])
        .unwrap();
    node.ip(&["link", "set", link, "up"]).unwrap();
    peer.ip(&["addr", "add", &format!("{peer_ip}/24"), "dev", "eth0"])
        .unwrap();
    peer.ip(&["link", "set", "eth0", "up"]).unwrap();
    if routed {
        peer.ip(&["route", "add", "default", "via", node_ip])
            .unwrap();
    }
}

fn subnet(name: &str, cidr: &str, nat: bool) -> Subnet {
    Subnet::new(
        name,
        SubnetSpec {
            cidr_block: Some(cidr.to_string()),
            nat_outgoing: Some(nat),
            ..Default::default()
        },
    )
}

fn nat_subnets(subnets: &[Subnet]) -> Vec<NatSubnet> {
    subnets
        .iter()
        .map(|s| NatSubnet::from_subnet(s).unwrap().unwrap())
        .collect()
}

fn node_nat_rules(node: &Netns) -> String {
    node.exec("iptables", &["-w", "-t", "nat", "-S"]).unwrap()
}

#[test]
fn nat_outgoing_masquerades_to_the_outside_only_and_follows_subnet_changes() {
    if !require_root(&["ip", "iptables", "iptables-restore", "ip6tables"]) {
        return;
    }
    let host_before = ovn_harness::run("iptables", &["-w", "-t", "nat", "-S"]).unwrap();
    let tag = unique_tag("nat");
    let node = Netns::create(&format!("{tag}node")).unwrap();
    let pod = Netns::create(&format!("{tag}pod")).unwrap();
    let other = Netns::create(&format!("{tag}other")).unwrap();
    let outside = Netns::create(&format!("{tag}out")).unwrap();
    wire(&node, "vpod", "10.16.0.1", &pod, POD, true);
    wire(&node, "vother", "10.17.0.1", &other, OTHER, true);
    wire(&node, "vout", NODE_OUTSIDE, &outside, OUTSIDE, false);
    node.exec("sysctl", &["-qw", "net.ipv4.ip_forward=1"])
        .unwrap();
    let (n, p, o, s) = (node.name(), pod.name(), outside.name(), other.name());
    let pod_ip: IpAddr = POD.parse().unwrap();

    // without the rules the pod's own address reaches the outside
    assert_eq!(source_seen(p, o, OUTSIDE, 7001), pod_ip);

    let subnets = vec![
        subnet("ovn-default", "10.16.0.0/16", true),
        subnet("other", "10.17.0.0/16", false),
    ];
    let wanted = nat_subnets(&subnets);
    let w = wanted.clone();
    assert!(in_netns(n, move || nat::sync(&w)).expect("sync"));
    let w = wanted.clone();
    assert!(
        !in_netns(n, move || nat::sync(&w)).unwrap(),
        "second sync writes nothing"
    );
    let rules = node_nat_rules(&node);
    assert!(rules.contains("-j OVN-POSTROUTING"), "{rules}");

    assert_eq!(
        source_seen(p, o, OUTSIDE, 7002),
        NODE_OUTSIDE.parse::<IpAddr>().unwrap(),
        "to the outside: masqueraded as the node"
    );
    assert_eq!(
        source_seen(p, s, OTHER, 7003),
        pod_ip,
        "to another subnet: not masqueraded"
    );

    // bad input: a typed error naming the subnet, and the rules in place kept
    let bad = subnet("broken", "10.18.0.0/33", true);
    match NatSubnet::from_subnet(&bad) {
        Err(NatError::InvalidSubnet { subnet, .. }) => assert_eq!(subnet, "broken"),
        other => panic!("expected InvalidSubnet, got {other:?}"),
    }
    assert_eq!(node_nat_rules(&node), rules);

    // natOutgoing turned off: the masquerade goes with it
    let off = nat_subnets(&[
        subnet("ovn-default", "10.16.0.0/16", false),
        subnet("other", "10.17.0.0/16", false),
    ]);
    assert!(in_netns(n, move || nat::sync(&off)).unwrap());
    assert!(!node_nat_rules(&node).contains("MASQUERADE"));
    assert_eq!(source_seen(p, o, OUTSIDE, 7004), pod_ip);

    // removal leaves no chain and no jump; a second removal does nothing
    assert!(in_netns(n, nat::remove).unwrap());
    assert!(!in_netns(n, nat::remove).unwrap());
    let left = node_nat_rules(&node);
    assert!(!left.contains("OVN-POSTROUTING"), "{left}");

    drop((pod, other, outside, node));
    let host_after = ovn_harness::run("iptables", &["-w", "-t", "nat", "-S"]).unwrap();
    assert_eq!(host_before, host_after, "the host's own nat table changed");
}
