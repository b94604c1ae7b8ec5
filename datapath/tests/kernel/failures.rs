//! Failure paths: the right error, and nothing half-made left behind.

use std::net::IpAddr;
use std::time::Duration;

use datapath::{Error, GatewayCheck, Ipv4Dad, SpecError, Step};
use nix::errno::Errno;

use crate::common::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Neither end of the pod's pair is on the host or in `ns`.
fn assert_nothing_left(p: &datapath::PodInterface, ns: Option<&TestNetns>) {
    let host = link_names(None);
    assert!(!host.contains(&p.host.name), "host end left behind");
    assert!(!host.contains(&p.container.temp_name), "peer left on host");
    if let Some(ns) = ns {
        assert_eq!(link_names(Some(&ns.name)), vec!["lo".to_string()]);
    }
}

#[tokio::test]
async fn missing_namespace_is_reported_and_nothing_is_created() {
    if !require_root() {
        return;
    }
    let ns = TestNetns::new();
    let (mut p, _g) = pod(&ns, None, &["10.80.0.2/24"]);
    p.container.netns = format!("/var/run/netns/dptest-missing-{}", unique_id()).into();
    let err = datapath::setup(&p).await.unwrap_err();
    assert_eq!(err.failed_step(), Some(Step::OpenNamespace), "{err}");
    assert_eq!(err.errno(), Some(Errno::ENOENT));
    let text = err.to_string();
    assert!(
        text.contains("dptest-missing-") && text.contains("eth0"),
        "{text}"
    );
    assert_nothing_left(&p, None);
    // CHECK fails the same way; DEL of the vanished pod succeeds.
    let check = datapath::check(&p).await.unwrap_err();
    assert_eq!(check.failed_step(), Some(Step::OpenNamespace));
    let del = datapath::teardown(&p).await.unwrap();
    assert!(!del.host_end_removed);
}

#[tokio::test]
async fn host_name_taken_fails_without_touching_the_owner() {
    if !require_root() {
        return;
    }
    let ns = TestNetns::new();
    let (p, _g) = pod(&ns, None, &["10.80.1.2/24"]);
    let squatter = TestLink::squatter(&p.host.name);
    let err = datapath::setup(&p).await.unwrap_err();
    assert_eq!(err.failed_step(), Some(Step::CreateVeth), "{err}");
    assert_eq!(err.errno(), Some(Errno::EEXIST));
    assert!(err.to_string().contains(&p.host.name), "{err}");
    // The existing link is someone else's: it must survive.
    let kept = ip_json(None, &["-d", "link", "show", &squatter.name]);
    assert_eq!(kept[0]["linkinfo"]["info_kind"], "bridge");
    assert!(!link_names(None).contains(&p.container.temp_name));
    assert_eq!(link_names(Some(&ns.name)), vec!["lo".to_string()]);
}

#[tokio::test]
async fn name_taken_inside_namespace_rolls_back() {
    if !require_root() {
        return;
    }
    let ns = TestNetns::new();
    run(
        "ip",
        &["-n", &ns.name, "link", "add", "eth0", "type", "bridge"],
    );
    let (p, _g) = pod(&ns, None, &["10.80.2.2/24"]);
    let err = datapath::setup(&p).await.unwrap_err();
    // the pod end is created inside the namespace: the clash is found there at once
    assert_eq!(err.failed_step(), Some(Step::CreateVeth), "{err}");
    assert_eq!(err.errno(), Some(Errno::EEXIST));
    assert!(err.to_string().contains(&ns.name), "{err}");
    let host = link_names(None);
    assert!(!host.contains(&p.host.name));
    let mut inside = link_names(Some(&ns.name));
    inside.sort();
    assert_eq!(inside, vec!["eth0".to_string(), "lo".to_string()]);
    let kept = ip_json(Some(&ns.name), &["-d", "link", "show", "eth0"]);
    assert_eq!(kept[0]["linkinfo"]["info_kind"], "bridge");
}

#[tokio::test]
async fn silent_gateway_gives_up_after_bounded_retries() {
    if !require_root() {
        return;
    }
    let bridge = TestLink::bridge();
    let ns = TestNetns::new();
    let check = GatewayCheck {
        attempts: 3,
        interval: Duration::from_millis(100),
    };
    for (addr, gw) in [("10.80.3.2/24", "10.80.3.254"), ("fd80::2/64", "fd80::fe")] {
        let (mut p, _g) = pod(&ns, Some(&bridge), &[addr]);
        p.container.gateways = vec![ip(gw)];
        p.container.gateway_check = Some(check);
        let err = datapath::setup(&p).await.unwrap_err();
        match &err {
            Error::GatewayUnreachable {
                gateway,
                interface,
                namespace,
                attempts,
            } => {
                assert_eq!(*gateway, ip(gw));
                assert_eq!(interface, "eth0");
                assert!(namespace.contains(&ns.name));
                assert_eq!(*attempts, 3);
            }
            other => panic!("wrong error: {other}"),
        }
        assert_nothing_left(&p, Some(&ns));
    }
}

#[tokio::test]
async fn ipv4_probe_finds_the_address_owner() {
    if !require_root() {
        return;
    }
    let bridge = TestLink::bridge();
    let (ns_a, ns_b) = (TestNetns::new(), TestNetns::new());
    let (a, _ga) = pod(&ns_a, Some(&bridge), &["10.80.4.2/24"]);
    datapath::setup(&a).await.unwrap();
    let (mut b, _gb) = pod(&ns_b, Some(&bridge), &["10.80.4.2/24"]);
    b.container.ipv4_dad = Ipv4Dad::Probe {
        wait: Duration::from_millis(600),
    };
    let err = datapath::setup(&b).await.unwrap_err();
    let a_mac = ip_json(Some(&ns_a.name), &["link", "show", "eth0"])[0]["address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    match err {
        Error::AddressConflict { address, owner, .. } => {
            assert_eq!(address, ip("10.80.4.2"));
            assert_eq!(owner, a_mac);
        }
        other => panic!("wrong error: {other}"),
    }
    assert_nothing_left(&b, Some(&ns_b));
    // A free address passes the probe.
    b.container.addresses = vec!["10.80.4.3/24".parse().unwrap()];
    datapath::setup(&b).await.unwrap();
    assert!(ns_b.ping(ip("10.80.4.2")));
    datapath::teardown(&a).await.unwrap();
    datapath::teardown(&b).await.unwrap();
}

#[tokio::test]
async fn invalid_spec_is_rejected_before_any_system_call() {
    let mut p = datapath::PodInterface::new("abcdef012345", "/var/run/netns/x", "eth0").unwrap();
    p.mtu = Some(20);
    let err = datapath::setup(&p).await.unwrap_err();
    assert!(
        matches!(err, Error::InvalidSpec(SpecError::Mtu(20))),
        "{err}"
    );
    assert!(matches!(
        datapath::delete_host_link("bad/name").await,
        Err(Error::InvalidSpec(SpecError::InterfaceName(_)))
    ));
}
