//! Two simulated nodes joined by GENEVE over a veth underlay carry pod traffic both ways,
//! and leave nothing behind.

use std::time::Duration;

use ovn_harness::{require_stack, unique_tag, Cluster, PodSpec};

const EXTRA_TOOLS: &[&str] = &["ping", "ethtool", "sysctl"];

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

fn netns_list() -> String {
    ovn_harness::run("ip", &["netns", "list"]).unwrap_or_default()
}

/// Polls `cond` every 100 ms for up to `secs` seconds.
fn eventually(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}

fn pids_of(cluster: &Cluster) -> Vec<u32> {
    // every daemon of this cluster was started with a path under its temp dirs
    let dirs: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|n| {
            n.chassis()
                .ovs_remote()
                .trim_start_matches("unix:")
                .to_string()
        })
        .map(|sock| {
            std::path::Path::new(&sock)
                .parent()
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if dirs.iter().any(|d| cmdline.contains(d.as_str())) {
            pids.push(pid);
        }
    }
    pids
}

/// Switch `sw0` with ports p1 and p2 (`10.0.<net>.11` and `.12`), p1 plugged on the
/// first node and p2 on the second, host ends named `<iface>1` and `<iface>2`.
fn one_pod_per_node<'c>(
    cluster: &'c Cluster,
    tag: &str,
    net: u8,
    iface: &str,
) -> (ovn_harness::Pod<'c>, ovn_harness::Pod<'c>) {
    let mac = |n: u8| format!("50:54:00:00:{net:02x}:{n:02x}");
    let ip = |n: u8| format!("10.0.{net}.1{n}");
    cluster.nbctl(&["ls-add", "sw0"]).unwrap();
    for n in [1u8, 2] {
        let (lsp, addresses) = (format!("p{n}"), format!("{} {}", mac(n), ip(n)));
        cluster
            .nbctl(&[
                "lsp-add",
                "sw0",
                &lsp,
                "--",
                "lsp-set-addresses",
                &lsp,
                &addresses,
            ])
            .unwrap();
    }
    cluster.nbctl(&["--wait=hv", "sync"]).unwrap();
    let spec = |n: u8| PodSpec {
        netns: format!("{tag}p{n}"),
        host_iface: format!("{iface}{n}"),
        iface_id: format!("p{n}"),
        mac: mac(n),
        cidr: format!("{}/24", ip(n)),
        gateway: None,
    };
    let (n1, n2) = (&cluster.nodes()[0], &cluster.nodes()[1]);
    let p1 = n1.plug_pod(&spec(1)).expect("plug p1 on the first node");
    let p2 = n2.plug_pod(&spec(2)).expect("plug p2 on the second node");
    (p1, p2)
}

#[test]
fn two_nodes_over_geneve_carry_pod_traffic_both_ways() {
    if !require_stack(EXTRA_TOOLS) {
        return;
    }
    let tag = unique_tag("gn");
    let cluster = Cluster::start(&tag, 2).expect("cluster");
    let (n1, n2) = (&cluster.nodes()[0], &cluster.nodes()[1]);

    // both chassis registered, each with a geneve Encap at its underlay address
    let encaps = cluster
        .sbctl(&["--bare", "--columns=type,ip", "list", "Encap"])
        .unwrap();
    for node in [n1, n2] {
        let chassis = cluster
            .sbctl(&["--bare", "--columns=name", "find", "Chassis"])
            .unwrap();
        assert!(chassis.contains(node.name()), "{chassis}");
        assert!(
            encaps.contains(&format!("geneve\n{}", node.underlay_ip())),
            "no geneve Encap for {}: {encaps}",
            node.underlay_ip()
        );
    }
    // each br-int has a geneve tunnel port towards the other node
    for (node, peer) in [(n1, n2), (n2, n1)] {
        let remote = format!("options:remote_ip={}", peer.underlay_ip());
        assert!(
            eventually(20, || node
                .chassis()
                .vsctl(&[
                    "--bare",
                    "--columns=name",
                    "find",
                    "Interface",
                    "type=geneve",
                    &remote
                ])
                .is_ok_and(|out| !out.trim().is_empty())),
            "{} has no geneve port to {}",
            node.name(),
            peer.underlay_ip()
        );
    }

    // each node's tunnel neighbour cache knows the other's underlay MAC from the start
    for (node, peer) in [(n1, n2), (n2, n1)] {
        let neighbours = node.chassis().vswitchd_appctl(&["tnl/neigh/show"]).unwrap();
        let mac = peer.underlay_mac().unwrap();
        assert!(
            neighbours
                .lines()
                .any(|l| l.contains(peer.underlay_ip()) && l.contains(&mac)),
            "{} does not know {} at {mac}: {neighbours}",
            node.name(),
            peer.underlay_ip()
        );
    }

    // one switch, one pod per node
    let (p1, p2) = one_pod_per_node(&cluster, &tag, 0, "vp");
    assert!(
        eventually(10, || p1.ping("10.0.0.12")),
        "p1 (n1) -> p2 (n2)"
    );
    assert!(
        eventually(10, || p2.ping("10.0.0.11")),
        "p2 (n2) -> p1 (n1)"
    );
    // a full-size packet crosses too (the underlay MTU leaves room for GENEVE)
    p1.netns()
        .exec(
            "ping",
            &["-c", "1", "-W", "2", "-M", "do", "-s", "1472", "10.0.0.12"],
        )
        .expect("1500-byte packet p1 -> p2");

    // teardown: nothing of ours is left
    let pids = pids_of(&cluster);
    assert!(
        pids.len() >= 6,
        "expected the nodes' daemons, found {pids:?}"
    );
    drop((p1, p2));
    drop(cluster);
    for pid in pids {
        assert!(!pid_alive(pid), "process {pid} survived the cluster");
    }
    let left = netns_list();
    assert!(!left.contains(&tag), "namespaces left behind: {left}");
    let links = ovn_harness::run("ip", &["-o", "link", "show"]).unwrap();
    assert!(
        !links.contains("eth-ul") && !links.contains("vp1"),
        "{links}"
    );
}

#[test]
fn a_crashed_vswitchd_is_started_again_and_its_pods_talk_again() {
    if !require_stack(EXTRA_TOOLS) {
        return;
    }
    let tag = unique_tag("rv");
    let cluster = Cluster::start(&tag, 2).expect("cluster");
    let n1 = &cluster.nodes()[0];
    let (p1, p2) = one_pod_per_node(&cluster, &tag, 1, "vr");
    assert!(eventually(10, || p1.ping("10.0.1.12")), "p1 -> p2 before");
    assert!(
        cluster.revive_nodes().unwrap().is_empty(),
        "nothing to restart while every vswitchd runs"
    );

    // n1's datapath dies as OVS 3.1.0's conntrack assertion kills it
    let vswitchd = |node: &ovn_harness::Node| {
        node.chassis()
            .processes()
            .into_iter()
            .find(|p| p.name.starts_with("ovs-vswitchd"))
            .expect("a vswitchd record")
            .pid
    };
    let dead = vswitchd(n1);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(dead as i32),
        nix::sys::signal::Signal::SIGABRT,
    )
    .expect("kill vswitchd");
    assert!(eventually(10, || !pid_alive(dead)), "vswitchd {dead} died");
    assert!(!p1.ping("10.0.1.12"), "no datapath on n1: no traffic");

    assert_eq!(cluster.revive_nodes().unwrap(), [n1.name().to_string()]);
    let revived = vswitchd(n1);
    assert_ne!(revived, dead, "a new process");
    assert!(pid_alive(revived));
    assert!(cluster.revive_nodes().unwrap().is_empty(), "once is enough");
    // the pod's port is reopened, the tunnel's underlay address is back on br-phy and
    // ovn-controller installs its flows again
    assert!(
        eventually(30, || p1.ping("10.0.1.12")),
        "p1 (n1) -> p2 (n2) after the restart"
    );
    assert!(
        eventually(10, || p2.ping("10.0.1.11")),
        "p2 (n2) -> p1 (n1) after the restart"
    );
    let pids = pids_of(&cluster);
    drop((p1, p2));
    drop(cluster);
    for pid in pids {
        assert!(!pid_alive(pid), "process {pid} survived the cluster");
    }
}
