//! The node bootstrap against a real ovsdb-server + ovs-vswitchd (userspace datapath)
//! running in a network namespace made for each test: Kube-OVN's rows read back with the
//! real `ovs-vsctl`, `ovn0` and its routes read back with `ip`; a second run writes
//! nothing; drift is repaired; bad input is refused before any write.

#[path = "daemon_node/sim.rs"]
mod sim;

use kube_ovn_test_support as common;

use std::collections::BTreeMap;
use std::time::Duration;

use kube_ovn_api::annotations::{CidrPair, IpPair};
use kube_ovn_daemon::{
    ensure, DatapathType, EncapType, HostNetwork, LinkChange, NodeBootstrap, NodeError,
    NodeSpecError, OvsChange,
};
use ovs_vsctl::{Port, VsClient};
use sim::{wait_until, SimNode};

const MAC: &str = "00:00:00:5e:aa:01";

fn boot() -> NodeBootstrap {
    NodeBootstrap {
        node_name: "n1".into(),
        system_id: "n1-chassis".into(),
        hostname: "n1".into(),
        ovn_remotes: vec!["tcp:192.0.2.10:6642".into(), "tcp:192.0.2.11:6642".into()],
        encap_type: EncapType::Geneve,
        encap_ip: "192.168.77.1".parse().unwrap(),
        encap_csum: true,
        bridge_mappings: BTreeMap::new(),
        // the test's vswitchd runs with --disable-system: userspace only
        datapath_type: DatapathType::Netdev,
        join_mac: MAC.into(),
        join_ip: IpPair::dual(
            "100.64.0.2".parse().unwrap(),
            "fd00:100:64::2".parse().unwrap(),
        ),
        join_cidr: CidrPair::dual(
            "100.64.0.0/16".parse().unwrap(),
            "fd00:100:64::/112".parse().unwrap(),
        ),
        join_gateway: IpPair::dual(
            "100.64.0.1".parse().unwrap(),
            "fd00:100:64::1".parse().unwrap(),
        ),
        mtu: 1400,
        routes: vec![
            "10.16.0.0/16".parse().unwrap(),
            "10.96.0.0/12".parse().unwrap(),
            "fd00:10:16::/112".parse().unwrap(),
        ],
    }
}

/// A node, the typed client on its database and netlink in its namespace.
async fn start() -> Option<(SimNode, VsClient, HostNetwork)> {
    if !ovn_harness::require_root(sim::TOOLS) {
        return None;
    }
    let node = SimNode::start();
    // a key someone else owns, which the bootstrap must keep
    node.vsctl(&[
        "--no-wait",
        "init",
        "--",
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:other-owner=kept",
    ]);
    let vs = VsClient::connect(&node.db.unix_remote()).await.unwrap();
    let net = HostNetwork::open(&node.netns_path()).await.unwrap();
    Some((node, vs, net))
}

fn root_get(node: &SimNode, key: &str) -> String {
    node.get("Open_vSwitch", ".", &format!("external_ids:{key}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_writes_kube_ovns_state_and_a_second_run_writes_nothing() {
    let Some((node, vs, net)) = start().await else {
        return;
    };
    let first = ensure(&vs, &net, &boot()).await.unwrap();
    assert!(first.ovs.contains(&OvsChange::BridgeCreated), "{first:?}");
    assert!(first.ovs.contains(&OvsChange::PortCreated), "{first:?}");

    // Open_vSwitch external_ids, the foreign key kept
    assert_eq!(root_get(&node, "system-id"), "n1-chassis");
    assert_eq!(root_get(&node, "hostname"), "n1");
    assert_eq!(
        root_get(&node, "ovn-remote"),
        "tcp:192.0.2.10:6642,tcp:192.0.2.11:6642"
    );
    assert_eq!(root_get(&node, "ovn-encap-type"), "geneve");
    assert_eq!(root_get(&node, "ovn-encap-ip"), "192.168.77.1");
    assert_eq!(root_get(&node, "ovn-encap-csum"), "true");
    assert_eq!(root_get(&node, "ovn-monitor-all"), "true");
    assert_eq!(root_get(&node, "other-owner"), "kept");
    // br-int
    assert_eq!(node.get("Bridge", "br-int", "datapath_type"), "netdev");
    assert_eq!(node.get("Bridge", "br-int", "fail_mode"), "secure");
    assert_eq!(
        node.get("Bridge", "br-int", "other_config:disable-in-band"),
        "true"
    );
    // ovn0 on br-int, bound to node-n1
    assert_eq!(node.vsctl(&["list-ports", "br-int"]).trim(), "ovn0");
    assert_eq!(node.get("Interface", "ovn0", "type"), "internal");
    assert_eq!(
        node.get("Interface", "ovn0", "external_ids:iface-id"),
        "node-n1"
    );
    assert_eq!(
        node.get("Interface", "ovn0", "external_ids:vendor"),
        "kube-ovn"
    );
    assert_eq!(
        node.get("Interface", "ovn0", "external_ids:ip"),
        "100.64.0.2,fd00:100:64::2"
    );
    assert_eq!(node.get("Interface", "ovn0", "mac_in_use"), MAC);

    // the device in the node's namespace
    let link = node.ip(&["link", "show", "ovn0"]);
    assert!(link.contains(&format!("link/ether {MAC}")), "{link}");
    assert!(link.contains("mtu 1400"), "{link}");
    assert!(link.contains("qlen 1000"), "{link}");
    assert!(link.contains(",UP"), "{link}");
    let addrs = node.ip(&["addr", "show", "dev", "ovn0"]);
    assert!(addrs.contains("inet 100.64.0.2/16"), "{addrs}");
    assert!(addrs.contains("inet6 fd00:100:64::2/112"), "{addrs}");
    let v4 = node.ip(&["-4", "route", "show", "dev", "ovn0"]);
    assert!(v4.contains("10.16.0.0/16 via 100.64.0.1"), "{v4}");
    assert!(v4.contains("10.96.0.0/12 via 100.64.0.1"), "{v4}");
    assert!(v4.contains("100.64.0.0/16"), "{v4}");
    let v6 = node.ip(&["-6", "route", "show", "dev", "ovn0"]);
    assert!(v6.contains("fd00:10:16::/112 via fd00:100:64::1"), "{v6}");

    // second run: nothing written; vswitchd's next_cfg did not move
    let next_cfg = node.get("Open_vSwitch", ".", "next_cfg");
    let second = ensure(&vs, &net, &boot()).await.unwrap();
    assert!(second.is_noop(), "{second:?}");
    assert_eq!(node.get("Open_vSwitch", ".", "next_cfg"), next_cfg);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_repaired() {
    let Some((node, vs, net)) = start().await else {
        return;
    };
    ensure(&vs, &net, &boot()).await.unwrap();

    // someone deletes ovn0, a route, the on-link route; adds an address and a route;
    // rewrites ovn-remote
    node.vsctl(&["del-port", "br-int", "ovn0"]);
    let gone = wait_until(Duration::from_secs(10), || {
        vs.store().by_name::<Port>("ovn0").unwrap().is_empty()
    });
    assert!(gone, "the replica still shows ovn0");
    let report = ensure(&vs, &net, &boot()).await.unwrap();
    assert!(report.ovs.contains(&OvsChange::PortCreated), "{report:?}");
    assert_eq!(
        node.get("Interface", "ovn0", "external_ids:iface-id"),
        "node-n1"
    );
    let addrs = node.ip(&["addr", "show", "dev", "ovn0"]);
    assert!(addrs.contains("inet 100.64.0.2/16"), "{addrs}");
    let v4 = node.ip(&["-4", "route", "show", "dev", "ovn0"]);
    assert!(v4.contains("10.16.0.0/16 via 100.64.0.1"), "{v4}");

    node.ip(&["route", "del", "10.16.0.0/16"]);
    node.ip(&[
        "route",
        "add",
        "10.99.0.0/16",
        "via",
        "100.64.0.1",
        "dev",
        "ovn0",
    ]);
    node.ip(&["addr", "add", "192.0.2.7/24", "dev", "ovn0"]);
    node.ip(&["link", "set", "ovn0", "mtu", "1300"]);
    node.vsctl(&[
        "set",
        "Open_vSwitch",
        ".",
        "external_ids:ovn-remote=tcp:x:1",
    ]);
    let stale = wait_until(Duration::from_secs(10), || {
        vs.store().rows::<ovs_vsctl::OpenVSwitch>().unwrap()[0]
            .external_ids
            .get("ovn-remote")
            .map(String::as_str)
            == Some("tcp:x:1")
    });
    assert!(stale, "the replica does not show the rewritten ovn-remote");
    let report = ensure(&vs, &net, &boot()).await.unwrap();
    let route = |s: &str| s.parse().unwrap();
    assert!(report
        .link
        .contains(&LinkChange::RouteAdded(route("10.16.0.0/16"))));
    assert!(report
        .link
        .contains(&LinkChange::RouteRemoved(route("10.99.0.0/16"))));
    assert!(report
        .link
        .contains(&LinkChange::AddressRemoved(route("192.0.2.7/24"))));
    assert_eq!(
        report.ovs,
        vec![OvsChange::ExternalIds(vec!["ovn-remote".into()])]
    );
    let v4 = node.ip(&["-4", "route", "show", "dev", "ovn0"]);
    assert!(v4.contains("10.16.0.0/16 via 100.64.0.1"), "{v4}");
    assert!(!v4.contains("10.99.0.0"), "{v4}");
    let link = node.ip(&["addr", "show", "dev", "ovn0"]);
    assert!(!link.contains("192.0.2.7"), "{link}");
    assert!(link.contains("mtu 1400"), "{link}");
    assert_eq!(
        root_get(&node, "ovn-remote"),
        "tcp:192.0.2.10:6642,tcp:192.0.2.11:6642"
    );
    assert!(ensure(&vs, &net, &boot()).await.unwrap().is_noop());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_naming_the_value_and_nothing_is_written() {
    let Some((node, vs, net)) = start().await else {
        return;
    };
    let before = node.vsctl(&["get", "Open_vSwitch", ".", "external_ids", "next_cfg"]);

    let mut outside = boot();
    outside.join_ip.v4 = Some("10.1.2.3".parse().unwrap());
    let err = ensure(&vs, &net, &outside).await.unwrap_err();
    let NodeError::Spec(spec) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        *spec,
        NodeSpecError::OutsideCidr {
            what: "join address",
            ip: "10.1.2.3".parse().unwrap(),
            cidr: "100.64.0.0/16".parse().unwrap(),
        }
    );
    assert!(spec.to_string().contains("10.1.2.3"), "{spec}");

    let mut bad_mac = boot();
    bad_mac.join_mac = "00:00:00:5e:aa".into();
    let err = ensure(&vs, &net, &bad_mac).await.unwrap_err();
    assert!(
        matches!(&err, NodeError::Spec(NodeSpecError::JoinMacSyntax { mac }) if mac == "00:00:00:5e:aa"),
        "{err:?}"
    );

    let mut bad_route = boot();
    bad_route.join_gateway.v6 = None;
    bad_route.join_ip.v6 = None;
    let err = ensure(&vs, &net, &bad_route).await.unwrap_err();
    assert!(
        matches!(&err, NodeError::Spec(NodeSpecError::NoGatewayFor { destination }) if destination.to_string() == "fd00:10:16::/112"),
        "{err:?}"
    );

    // nothing written: no bridge, no ovn0, the root row as it was
    assert_eq!(
        node.vsctl(&["get", "Open_vSwitch", ".", "external_ids", "next_cfg"]),
        before
    );
    assert_eq!(node.vsctl(&["list-br"]).trim(), "");
    assert!(node.ip(&["link", "show"]).find("ovn0").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_keeps_the_node_converged() {
    let Some((node, vs, net)) = start().await else {
        return;
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let looping = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        kube_ovn_daemon::keep_converged(&vs, &net, &boot(), Duration::from_millis(100), shutdown)
            .await;
    });
    let route_back = |node: &SimNode| {
        node.ip(&["-4", "route", "show", "dev", "ovn0"])
            .contains("10.16.0.0/16 via 100.64.0.1")
    };
    let has_ovn0 = |node: &SimNode| node.ip(&["link", "show"]).contains("ovn0");
    assert!(
        tokio::task::block_in_place(|| wait_until(Duration::from_secs(20), || has_ovn0(&node)
            && route_back(&node))),
        "the loop did not bring the node up"
    );
    node.ip(&["route", "del", "10.16.0.0/16"]);
    node.vsctl(&["del-port", "br-int", "ovn0"]);
    let repaired = tokio::task::block_in_place(|| {
        wait_until(Duration::from_secs(20), || {
            node.vsctl(&["list-ports", "br-int"]).trim() == "ovn0" && route_back(&node)
        })
    });
    assert!(repaired, "the loop did not restore ovn0 and its route");
    stop.send(()).unwrap();
    looping.await.unwrap();
}

/// With OVN running (NB, SB, northd, ovn-controller), plugging `ovn0` binds the join
/// port `node-<node>` to this chassis, and the join gateway (the cluster router's port)
/// answers a ping from the node through `ovn0`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ovn0_binds_the_join_port_and_reaches_the_join_gateway() {
    if !ovn_harness::require_root(
        &[
            sim::TOOLS,
            &[
                "ovn-northd",
                "ovn-controller",
                "ovn-nbctl",
                "ovn-sbctl",
                "ping",
            ],
        ]
        .concat(),
    ) {
        return;
    }
    let central = ovn_harness::OvnCentral::start().unwrap();
    let name = format!("kodch{}", std::process::id());
    let chassis = ovn_harness::Chassis::start(ovn_harness::ChassisConfig::new(
        &name,
        &central.sb_remote(),
        "192.168.77.1",
    ))
    .unwrap();
    let nbctl = |args: &[&str]| {
        let db = format!("--db={}", central.nb_remote());
        let mut all = vec![db.as_str(), "--timeout=20"];
        all.extend_from_slice(args);
        ovn_harness::run("ovn-nbctl", &all).expect("ovn-nbctl")
    };
    // the rows Kube-OVN's controller writes: join switch, router patch, node-<node>
    nbctl(&["lr-add", "ovn-cluster"]);
    let router = common::RouterPort {
        router: "ovn-cluster",
        mac: "00:00:00:00:00:fe",
        network: "100.64.0.1/16",
    };
    let join = common::join_switch(Some(router), [("n1", MAC, "100.64.0.2")]);
    nbctl(&join.iter().map(String::as_str).collect::<Vec<_>>());

    let mut wanted = boot();
    wanted.system_id = name.clone();
    wanted.ovn_remotes = vec![central.sb_remote()];
    wanted.join_ip.v6 = None;
    wanted.join_cidr.v6 = None;
    wanted.join_gateway.v6 = None;
    wanted.routes.retain(|r| r.addr().is_ipv4());
    let vs = VsClient::connect(&chassis.ovs_remote()).await.unwrap();
    let netns = std::path::Path::new("/var/run/netns").join(&name);
    let net = HostNetwork::open(&netns).await.unwrap();
    ensure(&vs, &net, &wanted).await.unwrap();

    vs.wait_ovn_installed("ovn0", Duration::from_secs(30))
        .await
        .unwrap();
    let sb = format!("--db={}", central.sb_remote());
    let bound = ovn_harness::run(
        "ovn-sbctl",
        &[
            &sb,
            "--bare",
            "--columns=chassis",
            "find",
            "Port_Binding",
            "logical_port=node-n1",
        ],
    )
    .unwrap();
    let chassis_uuid = ovn_harness::run(
        "ovn-sbctl",
        &[
            &sb,
            "--bare",
            "--columns=_uuid",
            "find",
            "Chassis",
            &format!("name={name}"),
        ],
    )
    .unwrap();
    assert_eq!(bound.trim(), chassis_uuid.trim());
    let ping = || {
        ovn_harness::run(
            "ip",
            &[
                "netns",
                "exec",
                &name,
                "ping",
                "-c",
                "1",
                "-W",
                "1",
                "100.64.0.1",
            ],
        )
        .is_ok()
    };
    let answered = tokio::task::block_in_place(|| wait_until(Duration::from_secs(20), ping));
    assert!(
        answered,
        "the join gateway 100.64.0.1 did not answer through ovn0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridge_mappings_are_set_when_needed_and_removed_when_not() {
    let Some((node, vs, net)) = start().await else {
        return;
    };
    let mut underlay = boot();
    underlay.bridge_mappings = BTreeMap::from([
        ("provider1".to_string(), "br-provider1".to_string()),
        ("provider2".to_string(), "br-provider2".to_string()),
    ]);
    ensure(&vs, &net, &underlay).await.unwrap();
    assert_eq!(
        root_get(&node, "ovn-bridge-mappings"),
        "provider1:br-provider1,provider2:br-provider2"
    );

    let report = ensure(&vs, &net, &boot()).await.unwrap();
    assert_eq!(
        report.ovs,
        vec![OvsChange::ExternalIds(vec!["ovn-bridge-mappings".into()])]
    );
    let ids = node.get("Open_vSwitch", ".", "external_ids");
    assert!(!ids.contains("ovn-bridge-mappings"), "{ids}");
    assert!(ids.contains("other-owner=kept"), "{ids}");
}
