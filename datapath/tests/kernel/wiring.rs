//! Two pods on a bridge: configure through the crate, ping, CHECK, delete.

use std::net::IpAddr;
use std::time::Duration;

use datapath::{default_route, GatewayCheck, Ipv6Dad, RouteSpec};

use crate::common::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[tokio::test]
async fn ipv4_pods_on_a_bridge_ping_check_and_delete() {
    if !require_root() {
        return;
    }
    let bridge = TestLink::bridge();
    let (ns_a, ns_b) = (TestNetns::new(), TestNetns::new());
    let (mut a, _ga) = pod(&ns_a, Some(&bridge), &["10.77.0.2/24"]);
    let (mut b, _gb) = pod(&ns_b, Some(&bridge), &["10.77.0.3/24"]);
    // Each pod uses the other as its gateway, so the gateway check can succeed.
    a.container.gateways = vec![ip("10.77.0.3")];
    b.container.gateways = vec![ip("10.77.0.2")];
    // a without an IPv6 link-local address, b with the kernel's default
    a.container.ipv6_link_local = false;
    datapath::setup(&a).await.unwrap();
    b.container.gateway_check = Some(GatewayCheck {
        attempts: 20,
        interval: Duration::from_millis(200),
    });
    let report_b = datapath::setup(&b).await.unwrap();
    let a_mac = ip_json(Some(&ns_a.name), &["link", "show", "eth0"])[0]["address"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(report_b.gateways, vec![(ip("10.77.0.2"), mac(&a_mac))]);

    let inet6 = |ns: &TestNetns| -> Vec<String> {
        ip_json(Some(&ns.name), &["-6", "addr", "show", "eth0"])[0]["addr_info"]
            .as_array()
            .map(|a| a.iter().map(|a| a["local"].to_string()).collect())
            .unwrap_or_default()
    };
    assert_eq!(inet6(&ns_a), Vec::<String>::new(), "a has IPv6 addresses");
    assert!(
        inet6(&ns_b).iter().any(|a| a.starts_with("\"fe80:")),
        "b has no link-local address: {:?}",
        inet6(&ns_b)
    );
    // IPv6 itself stays on in a (as Kube-OVN leaves it): ::1 on lo
    let lo6 = ip_json(Some(&ns_a.name), &["-6", "addr", "show", "lo"]);
    assert_eq!(lo6[0]["addr_info"][0]["local"], "::1", "{lo6}");

    assert!(ns_a.ping(ip("10.77.0.3")), "a cannot reach b");
    assert!(ns_b.ping(ip("10.77.0.2")), "b cannot reach a");

    for (pod, gw) in [(&a, "10.77.0.3"), (&b, "10.77.0.2")] {
        let report = datapath::check(pod).await.unwrap();
        assert!(report.is_ok(), "{:?}", report.differences);
        let state = report.container.unwrap();
        assert_eq!(state.addresses, pod.container.addresses);
        assert_eq!(state.routes, vec![default_route(ip(gw))]);
        assert!(state.link.up);
        assert_eq!(report.host.unwrap().name, pod.host.name);
    }
    // The bridge really holds both host ends.
    let ports = ip_json(None, &["link", "show", "master", &bridge.name]);
    assert_eq!(ports.as_array().unwrap().len(), 2);

    for (pod, ns) in [(&a, &ns_a), (&b, &ns_b)] {
        let removed = datapath::teardown(pod).await.unwrap();
        assert!(removed.host_end_removed);
        assert!(!link_names(None).contains(&pod.host.name));
        assert_eq!(link_names(Some(&ns.name)), vec!["lo".to_string()]);
        // Deleting again is fine.
        let again = datapath::teardown(pod).await.unwrap();
        assert!(!again.host_end_removed && !again.stray_peer_removed);
    }
}

fn dual_stack_pod(
    ns: &TestNetns,
    bridge: &TestLink,
    n: u8,
) -> (datapath::PodInterface, HostEndGuard) {
    let (mut p, guard) = pod(
        ns,
        Some(bridge),
        &[&format!("10.78.0.{n}/24"), &format!("fd78::{n}/64")],
    );
    p.mtu = Some(1400);
    p.txqueuelen = Some(500);
    p.host.mac = Some(mac(&format!("0a:58:00:00:01:{n:02x}")));
    p.container.mac = Some(mac(&format!("0a:58:00:00:02:{n:02x}")));
    p.container.ipv6_dad = Ipv6Dad::Wait {
        timeout: Duration::from_secs(10),
    };
    p.container.disable_tx_checksum = true;
    (p, guard)
}

#[tokio::test]
async fn dual_stack_with_routes_mtu_mac_and_offload() {
    if !require_root() {
        return;
    }
    let bridge = TestLink::bridge();
    let (ns_a, ns_b) = (TestNetns::new(), TestNetns::new());
    let (mut a, _ga) = dual_stack_pod(&ns_a, &bridge, 2);
    let (mut b, _gb) = dual_stack_pod(&ns_b, &bridge, 3);
    a.container.gateways = vec![ip("10.78.0.3"), ip("fd78::3")];
    a.container.routes = vec![
        RouteSpec {
            destination: "192.168.50.0/24".parse().unwrap(),
            gateway: Some(ip("10.78.0.3")),
            metric: Some(100),
            table: None,
        },
        RouteSpec {
            destination: "172.30.0.0/16".parse().unwrap(),
            gateway: None,
            metric: Some(10),
            table: Some(100),
        },
        RouteSpec {
            destination: "fd99::/64".parse().unwrap(),
            gateway: Some(ip("fd78::3")),
            metric: Some(300),
            table: None,
        },
    ];
    a.container.gateway_check = Some(GatewayCheck {
        attempts: 20,
        interval: Duration::from_millis(250),
    });
    b.container.gateways = vec![ip("10.78.0.2"), ip("fd78::2")];
    datapath::setup(&b).await.unwrap();
    let report = datapath::setup(&a).await.unwrap();
    assert_eq!(report.container_mac, mac("0a:58:00:00:02:02"));
    assert_eq!(report.gateways.len(), 2);
    assert!(report
        .gateways
        .iter()
        .all(|(_, m)| *m == mac("0a:58:00:00:02:03")));

    verify_kernel_view(&ns_a, &a);
    assert!(ns_a.ping(ip("fd78::3")), "IPv6 ping a -> b");
    assert!(ns_b.ping(ip("10.78.0.2")), "IPv4 ping b -> a");

    let check = datapath::check(&a).await.unwrap();
    assert!(check.is_ok(), "{:?}", check.differences);
    let state = check.container.unwrap();
    let mut want_addrs = a.container.addresses.clone();
    want_addrs.sort();
    assert_eq!(state.addresses, want_addrs);
    assert!(!state.tx_checksum);
    assert_eq!(state.routes.len(), 5, "{:?}", state.routes);
    for wanted in &a.container.routes {
        assert!(
            state.routes.contains(wanted),
            "{wanted:?} not in {:?}",
            state.routes
        );
    }

    // CHECK notices drift made behind its back.
    run("ip", &["-n", &ns_a.name, "route", "del", "192.168.50.0/24"]);
    let drift = datapath::check(&a).await.unwrap();
    assert_eq!(
        drift.differences,
        vec![datapath::Difference::MissingRoute(
            a.container.routes[0].clone()
        )]
    );
    datapath::teardown(&a).await.unwrap();
    datapath::teardown(&b).await.unwrap();
    assert_eq!(link_names(Some(&ns_a.name)), vec!["lo".to_string()]);
}

/// `ip -j` and `ethtool -k` inside the namespace agree with what was asked.
fn verify_kernel_view(ns: &TestNetns, p: &datapath::PodInterface) {
    let link = &ip_json(Some(&ns.name), &["-d", "link", "show", "eth0"])[0];
    assert_eq!(link["mtu"], 1400);
    assert_eq!(link["txqlen"], 500);
    assert_eq!(link["address"], "0a:58:00:00:02:02");
    assert_eq!(link["operstate"], "UP");
    let host = &ip_json(None, &["link", "show", &p.host.name])[0];
    assert_eq!(host["address"], "0a:58:00:00:01:02");
    assert_eq!(host["mtu"], 1400);

    let addrs = ip_json(Some(&ns.name), &["addr", "show", "eth0"]);
    let have: Vec<String> = addrs[0]["addr_info"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["scope"] == "global")
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap(), a["prefixlen"]))
        .collect();
    assert!(have.contains(&"10.78.0.2/24".to_string()), "{have:?}");
    assert!(have.contains(&"fd78::2/64".to_string()), "{have:?}");

    let table100 = ip_json(Some(&ns.name), &["route", "show", "table", "100"]);
    assert_eq!(table100[0]["dst"], "172.30.0.0/16");
    assert_eq!(table100[0]["metric"], 10);
    assert_eq!(table100[0]["scope"], "link");
    let v4 = ip_json(Some(&ns.name), &["route", "show", "192.168.50.0/24"]);
    assert_eq!(v4[0]["gateway"], "10.78.0.3");
    assert_eq!(v4[0]["metric"], 100);
    let v6 = ip_json(Some(&ns.name), &["-6", "route", "show", "default"]);
    assert_eq!(v6[0]["gateway"], "fd78::3");

    let sysctl = run(
        "ip",
        &[
            "netns",
            "exec",
            &ns.name,
            "sysctl",
            "-n",
            "net.ipv6.conf.eth0.accept_ra",
        ],
    );
    assert_eq!(sysctl.trim(), "0");
    let ethtool = run("ip", &["netns", "exec", &ns.name, "ethtool", "-k", "eth0"]);
    assert!(
        ethtool.lines().any(|l| l.trim() == "tx-checksumming: off"),
        "{ethtool}"
    );
}

#[test]
fn blocking_api_outside_any_runtime() {
    if !require_root() {
        return;
    }
    let ns = TestNetns::new();
    let (mut p, _g) = pod(&ns, None, &["10.79.0.2/24"]);
    p.container.gateways = vec![ip("10.79.0.1")];
    datapath::blocking::setup(&p).unwrap();
    let report = datapath::blocking::check(&p).unwrap();
    assert!(report.is_ok(), "{:?}", report.differences);
    assert!(
        ns.ping(ip("10.79.0.2")),
        "pod reaches its own address over lo/eth0"
    );
    assert!(datapath::blocking::teardown(&p).unwrap().host_end_removed);
    assert!(!link_names(None).contains(&p.host.name));
}
