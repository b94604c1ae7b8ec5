//! Round trips in Kube-OVN's exact formats, every malformed value class, and keys that
//! are not ours left alone.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::*;

fn map(pairs: &[(&str, &str)]) -> AnnotationMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// What Kube-OVN writes on a dual-stack pod (docs: guide/dual-stack).
const DUAL_STACK_POD: &[(&str, &str)] = &[
    ("ovn.kubernetes.io/allocated", "true"),
    ("ovn.kubernetes.io/cidr", "10.16.0.0/16,fd00:10:16::/64"),
    ("ovn.kubernetes.io/gateway", "10.16.0.1,fd00:10:16::1"),
    ("ovn.kubernetes.io/ip_address", "10.16.0.9,fd00:10:16::9"),
    ("ovn.kubernetes.io/logical_switch", "ovn-default"),
    ("ovn.kubernetes.io/mac_address", "00:00:00:14:88:09"),
    ("ovn.kubernetes.io/routed", "true"),
];

#[test]
fn dual_stack_pod_parses_into_typed_fields_and_writes_back_identically() {
    let original = map(DUAL_STACK_POD);
    let net = PodNetwork::parse(&Provider::ovn(), &original).unwrap();
    assert!(net.is_allocated() && net.is_routed());
    let ips = net.ip_address.unwrap();
    assert_eq!(ips.v4, Some(Ipv4Addr::new(10, 16, 0, 9)));
    assert_eq!(ips.v6, Some("fd00:10:16::9".parse::<Ipv6Addr>().unwrap()));
    assert_eq!(net.cidr.unwrap().nets().len(), 2);
    assert_eq!(net.logical_switch.as_deref(), Some("ovn-default"));
    assert_eq!(net.mac_address.unwrap().to_string(), "00:00:00:14:88:09");

    let mut written = AnnotationMap::new();
    net.write_into(&Provider::ovn(), &mut written);
    assert_eq!(written, original);
}

#[test]
fn single_stack_values_keep_their_one_family() {
    let m = map(&[
        ("ovn.kubernetes.io/ip_address", "fd00::5"),
        ("ovn.kubernetes.io/cidr", "10.16.0.0/16"),
    ]);
    let net = PodNetwork::parse(&Provider::ovn(), &m).unwrap();
    assert_eq!(net.ip_address, Some(IpPair::v6("fd00::5".parse().unwrap())));
    assert_eq!(
        net.cidr,
        Some(CidrPair::v4("10.16.0.0/16".parse().unwrap()))
    );
}

#[test]
fn ipv6_first_is_accepted_and_written_ipv4_first_as_kube_ovn_does() {
    let m = map(&[("ovn.kubernetes.io/ip_address", "fd00::5,10.16.0.5")]);
    let net = PodNetwork::parse(&Provider::ovn(), &m).unwrap();
    let mut out = AnnotationMap::new();
    net.write_into(&Provider::ovn(), &mut out);
    assert_eq!(out["ovn.kubernetes.io/ip_address"], "10.16.0.5,fd00::5");
}

#[test]
fn attachment_provider_reads_only_its_own_keys() {
    let provider = Provider::attachment("net1", "default").unwrap();
    assert_eq!(provider.as_str(), "net1.default.ovn");
    let m = map(&[
        ("ovn.kubernetes.io/ip_address", "10.16.0.9"),
        ("net1.default.ovn.kubernetes.io/ip_address", "172.17.0.200"),
        (
            "net1.default.ovn.kubernetes.io/logical_switch",
            "attach-subnet",
        ),
    ]);
    let attach = PodNetwork::parse(&provider, &m).unwrap();
    assert_eq!(
        attach.ip_address,
        Some(IpPair::v4(Ipv4Addr::new(172, 17, 0, 200)))
    );
    let default = PodNetwork::parse(&Provider::ovn(), &m).unwrap();
    assert_eq!(
        default.ip_address,
        Some(IpPair::v4(Ipv4Addr::new(10, 16, 0, 9)))
    );
    assert_eq!(default.logical_switch, None);
}

#[test]
fn writing_touches_only_owned_keys_and_removes_unset_ones() {
    let mut m = map(&[
        ("ovn.kubernetes.io/ip_address", "10.16.0.9"),
        ("ovn.kubernetes.io/some_future_key", "kept"),
        ("net1.default.ovn.kubernetes.io/ip_address", "172.17.0.200"),
        ("k8s.v1.cni.cncf.io/networks", "default/net1"),
    ]);
    let mut net = PodNetwork::parse(&Provider::ovn(), &m).unwrap();
    net.ip_address = None;
    net.allocated = Some(true);
    net.write_into(&Provider::ovn(), &mut m);
    assert_eq!(
        m,
        map(&[
            ("ovn.kubernetes.io/allocated", "true"),
            ("ovn.kubernetes.io/some_future_key", "kept"),
            ("net1.default.ovn.kubernetes.io/ip_address", "172.17.0.200"),
            ("k8s.v1.cni.cncf.io/networks", "default/net1"),
        ])
    );
}

#[test]
fn routes_qos_and_flags_round_trip_in_kube_ovn_format() {
    let original = map(&[
        (
            "ovn.kubernetes.io/routes",
            r#"[{"dst":"192.168.0.0/24","gw":"10.16.0.254"},{"gw":"10.16.0.1"}]"#,
        ),
        ("ovn.kubernetes.io/ingress_rate", "3"),
        ("ovn.kubernetes.io/egress_rate", "1"),
        ("ovn.kubernetes.io/latency", "50"),
        ("ovn.kubernetes.io/loss", "12.5"),
        ("ovn.kubernetes.io/limit", "1000"),
        ("ovn.kubernetes.io/port_security", "false"),
        ("ovn.kubernetes.io/port_vips", "10.16.0.100,fd00::100"),
        ("ovn.kubernetes.io/security_groups", "sg1,sg2"),
        ("ovn.kubernetes.io/pod_nic_type", "internal-port"),
        ("ovn.kubernetes.io/ip_family", "ipv6"),
        ("ovn.kubernetes.io/vlan_id", "100"),
    ]);
    let net = PodNetwork::parse(&Provider::ovn(), &original).unwrap();
    let routes = &net.routes.as_ref().unwrap().0;
    assert_eq!(
        routes[0].destination,
        Some("192.168.0.0/24".parse().unwrap())
    );
    assert_eq!(routes[1].destination, None);
    assert_eq!(net.ingress_rate, Some(3));
    assert_eq!(net.loss, Some(LossPercent(12.5)));
    assert_eq!(net.port_security, Some(false));
    assert_eq!(net.pod_nic_type, Some(NicType::InternalPort));
    let mut written = AnnotationMap::new();
    net.write_into(&Provider::ovn(), &mut written);
    assert_eq!(written, original);
}

#[test]
fn ip_pool_forms_round_trip() {
    for text in [
        "10.16.0.15,10.16.0.16,10.16.0.17",
        "10.16.0.15,fd00:10:16::e;10.16.0.16,fd00:10:16::f",
        "10.16.0.15,fd00:10:16::e",
        "my-pool",
    ] {
        let m = map(&[("ovn.kubernetes.io/ip_pool", text)]);
        let net = PodNetwork::parse(&Provider::ovn(), &m).unwrap();
        let mut out = AnnotationMap::new();
        net.write_into(&Provider::ovn(), &mut out);
        assert_eq!(out, m, "{text}");
    }
    let m = map(&[("ovn.kubernetes.io/ip_pool", "my-pool")]);
    let pool = PodNetwork::parse(&Provider::ovn(), &m).unwrap().ip_pool;
    assert_eq!(pool, Some(IpPool::Named("my-pool".into())));
}

/// Every class of malformed value, each reported with its key and value.
#[test]
fn every_malformed_value_class_is_a_typed_error_naming_key_and_value() {
    let cases = [
        ("allocated", "yes"),
        ("ip_address", "10.16.0.300"),
        ("ip_address", "10.16.0.5,10.16.0.6"),
        ("ip_address", "10.16.0.5,fd00::5,fd00::6"),
        ("ip_address", "10.16.0.5,"),
        ("ip_address", ""),
        ("cidr", "10.16.0.0/33"),
        ("cidr", "10.16.0.0"),
        ("gateway", "fd00::1,fd00::2"),
        ("mac_address", "00:00:00:14:88"),
        ("mac_address", "01:00:00:00:00:01"),
        ("vlan_id", "-1"),
        ("vlan_id", "70000"),
        ("ingress_rate", "1.5"),
        ("ingress_rate", " 3"),
        ("loss", "101"),
        ("loss", "lots"),
        ("routes", r#"{"dst":"1.1.1.0/24"}"#),
        ("routes", r#"[{"dst":"1.1.1.1","gw":"10.16.0.1"}]"#),
        ("routes", r#"[{"dst":"1.1.1.0/24","via":"10.16.0.1"}]"#),
        ("routes", r#"[{"gw":"gateway"}]"#),
        ("ip_family", "dual"),
        ("pod_nic_type", "macvlan"),
        ("logical_switch", ""),
        ("port_vips", "10.16.0.100,,10.16.0.101"),
        ("ip_pool", "10.16.0.15,pool"),
        ("ip_pool", "10.16.0.15,fd00::e,10.16.0.16"),
    ];
    for (name, value) in cases {
        let key = format!("ovn.kubernetes.io/{name}");
        let m = map(&[(&key, value)]);
        match PodNetwork::parse(&Provider::ovn(), &m) {
            Err(AnnotationError::Malformed {
                key: k, value: v, ..
            }) => {
                assert_eq!(
                    (k.as_str(), v.as_str()),
                    (key.as_str(), value),
                    "{name}={value}"
                );
            }
            other => panic!("{name}={value:?} gave {other:?}"),
        }
    }
}

#[test]
fn a_malformed_value_leaves_the_map_unchanged() {
    let m = map(&[
        ("ovn.kubernetes.io/ip_address", "10.16.0.9"),
        ("ovn.kubernetes.io/allocated", "maybe"),
    ]);
    let before = m.clone();
    let err = PodNetwork::parse(&Provider::ovn(), &m).unwrap_err();
    assert!(
        err.to_string().contains("ovn.kubernetes.io/allocated"),
        "{err}"
    );
    assert_eq!(m, before);
}

#[test]
fn bad_provider_names_are_rejected() {
    for bad in ["", "Net1", "net1/x", "-net", "net.", &"a".repeat(240)] {
        assert!(
            matches!(
                Provider::new(bad),
                Err(AnnotationError::InvalidProvider { .. })
            ),
            "{bad:?}"
        );
    }
    assert!(Provider::new("net1.default.ovn.eth1").is_ok());
}

#[test]
fn pod_wide_keys_round_trip() {
    let original = map(&[
        ("ovn.kubernetes.io/bgp", "local"),
        ("ovn.kubernetes.io/eip", "172.56.0.10"),
        ("ovn.kubernetes.io/snat", "172.56.0.11"),
        ("ovn.kubernetes.io/vip", "vip1,vip2"),
        ("ovn.kubernetes.io/north_gateway", "10.16.0.254"),
        ("ovn.kubernetes.io/ip_address", "10.16.0.9"),
    ]);
    let pod = PodAnnotations::parse(&original).unwrap();
    assert_eq!(pod.bgp, Some(BgpAnnouncement::Local));
    assert_eq!(pod.eip, Some(IpAddr::from([172, 56, 0, 10])));
    let mut written = original.clone();
    pod.write_into(&mut written);
    assert_eq!(written, original);
    let bad = map(&[("ovn.kubernetes.io/bgp", "yes")]);
    assert!(PodAnnotations::parse(&bad).is_err());
}

#[test]
fn node_annotations_round_trip_and_reject_bad_mac() {
    let original = map(&[
        ("ovn.kubernetes.io/allocated", "true"),
        ("ovn.kubernetes.io/cidr", "100.64.0.0/16,fd00:100:64::/112"),
        ("ovn.kubernetes.io/gateway", "100.64.0.1,fd00:100:64::1"),
        ("ovn.kubernetes.io/ip_address", "100.64.0.2,fd00:100:64::2"),
        ("ovn.kubernetes.io/logical_switch", "join"),
        ("ovn.kubernetes.io/mac_address", "00:00:00:6e:9a:3c"),
        ("ovn.kubernetes.io/port_name", "node-kube-ovn-worker"),
        (
            "ovn.kubernetes.io/chassis",
            "2f0e8d5c-1d4b-4a5f-9a4e-0c3f6d2b1a7e",
        ),
        (
            "node.kubernetes.io/exclude-from-external-load-balancers",
            "",
        ),
    ]);
    let node = NodeAnnotations::parse(&original).unwrap();
    assert!(node.is_allocated());
    let mut written = original.clone();
    node.write_into(&mut written);
    assert_eq!(written, original);
    let bad = map(&[("ovn.kubernetes.io/mac_address", "zz:00:00:6e:9a:3c")]);
    assert!(matches!(
        NodeAnnotations::parse(&bad),
        Err(AnnotationError::Malformed { .. })
    ));
}

#[test]
fn provider_network_labels_use_their_own_domain() {
    let pn = Provider::new("physnet1").unwrap();
    let labels = map(&[
        ("physnet1.provider-network.kubernetes.io/ready", "true"),
        ("physnet1.provider-network.kubernetes.io/interface", "eth1"),
        ("physnet1.provider-network.kubernetes.io/mtu", "1500"),
        ("kubernetes.io/hostname", "node1"),
    ]);
    let parsed = ProviderNetworkNodeLabels::parse(&pn, &labels).unwrap();
    assert_eq!(parsed.mtu, Some(1500));
    let mut written = labels.clone();
    parsed.write_into(&pn, &mut written);
    assert_eq!(written, labels);
}

#[test]
fn namespace_annotations_use_semicolons_between_subnets() {
    let original = map(&[
        ("ovn.kubernetes.io/logical_switch", "ovn-default,subnet2"),
        (
            "ovn.kubernetes.io/cidr",
            "10.16.0.0/16;10.17.0.0/16,fd00:17::/112",
        ),
        (
            "ovn.kubernetes.io/exclude_ips",
            "10.16.0.1;10.17.0.1,10.17.0.10..10.17.0.20,fd00:17::1",
        ),
        ("ovn.kubernetes.io/ip_pool", "pool1"),
    ]);
    let ns = NamespaceAnnotations::parse(&original).unwrap();
    assert_eq!(ns.cidr.as_ref().unwrap().0.len(), 2);
    let excludes = &ns.exclude_ips.as_ref().unwrap().0;
    assert_eq!(excludes[1].len(), 3);
    assert!(matches!(excludes[1][1], ExcludeIp::Range(..)));
    let mut written = AnnotationMap::new();
    ns.write_into(&mut written);
    assert_eq!(written, original);

    let empty_group = map(&[("ovn.kubernetes.io/exclude_ips", "10.16.0.1;")]);
    let ns = NamespaceAnnotations::parse(&empty_group).unwrap();
    assert_eq!(ns.exclude_ips.unwrap().0[1], vec![]);

    for (name, value) in [
        ("exclude_ips", "10.17.0.20..10.17.0.10"),
        ("exclude_ips", "10.17.0.1..fd00::1"),
        ("cidr", "10.16.0.0/16;;10.17.0.0/16"),
        ("logical_switch", "a,,b"),
    ] {
        let key = format!("ovn.kubernetes.io/{name}");
        let err = NamespaceAnnotations::parse(&map(&[(&key, value)])).unwrap_err();
        assert!(err.to_string().contains(&key), "{err}");
    }
}

#[test]
fn lenient_parsing_reads_the_good_keys_and_names_every_bad_one() {
    let m = map(&[
        ("ovn.kubernetes.io/ip_address", "10.16.0.9"),
        ("ovn.kubernetes.io/allocated", "maybe"),
        ("ovn.kubernetes.io/ingress_rate", "fast"),
        ("ovn.kubernetes.io/logical_switch", "ovn-default"),
    ]);
    let (net, errors) = PodNetwork::parse_lenient(&Provider::ovn(), &m);
    assert_eq!(
        net.ip_address,
        Some(IpPair::v4(Ipv4Addr::new(10, 16, 0, 9)))
    );
    assert_eq!(net.logical_switch.as_deref(), Some("ovn-default"));
    assert_eq!((net.allocated, net.ingress_rate), (None, None));
    let keys: Vec<String> = errors
        .iter()
        .map(|e| match e {
            AnnotationError::Malformed { key, .. } => key.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        keys,
        [
            "ovn.kubernetes.io/allocated",
            "ovn.kubernetes.io/ingress_rate"
        ]
    );
    // the strict parse stops at the first
    let first = PodNetwork::parse(&Provider::ovn(), &m).unwrap_err();
    assert_eq!(first, errors[0]);
    let (_, none) =
        NodeAnnotations::parse_lenient(&map(&[("ovn.kubernetes.io/port_name", "node-a")]));
    assert!(none.is_empty());
}

#[test]
fn allocated_providers_are_read_from_the_keys() {
    let m = map(&[
        ("ovn.kubernetes.io/allocated", "true"),
        ("net1.default.ovn.kubernetes.io/allocated", "true"),
        ("ovn.kubernetes.io/ip_address", "10.16.0.9"),
        ("example.com/allocated", "true"),
        ("Bad_Provider.kubernetes.io/allocated", "true"),
    ]);
    let providers: Vec<String> = PodNetwork::allocated_providers(&m)
        .iter()
        .map(|p| p.as_str().to_owned())
        .collect();
    assert_eq!(providers, ["net1.default.ovn", "ovn"]);
    let mut written = AnnotationMap::new();
    NamespaceAnnotations {
        ip_pool: Some(Names(vec!["a".into(), "b".into()])),
        ..NamespaceAnnotations::default()
    }
    .write_into(&mut written);
    assert_eq!(
        written
            .get(&NamespaceAnnotations::ip_pool_key())
            .map(String::as_str),
        Some("a,b")
    );
}
