//! Interop with the real tools: a topology built through `ovn-nb` reads back
//! identically with `ovn-nbctl`, and one built with `ovn-nbctl` reads back
//! identically through `ovn-nb`.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{map_of, nbctl, nbctl_row, nbctl_rows, set_of, smap};
use ovn_nb::*;

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

async fn build_topology(nb: &NbClient) -> Result<(), NbError> {
    let mut txn = nb.txn();
    txn.ls_add("ls1")?;
    txn.ls_set_other_config(
        "ls1",
        smap(&[("subnet", "10.0.0.0/24"), ("exclude_ips", "10.0.0.1")]),
    )?;
    txn.lsp_add("ls1", "pod1")?;
    txn.lsp_set_addresses("pod1", ["00:00:00:00:00:01 10.0.0.2"])?;
    txn.lsp_set_port_security("pod1", ["00:00:00:00:00:01 10.0.0.2"])?;
    txn.lsp_set_external_ids(
        "pod1",
        smap(&[("pod", "default/pod1"), ("vendor", "kube-ovn")]),
    )?;
    txn.lsp_add("ls1", "ls1-lr1")?;
    txn.lsp_set_type("ls1-lr1", "router")?;
    txn.lsp_set_addresses("ls1-lr1", ["router"])?;
    txn.lsp_set_options("ls1-lr1", smap(&[("router-port", "lr1-ls1")]))?;
    txn.lr_add("lr1")?;
    txn.lrp_add("lr1", "lr1-ls1", "00:00:00:00:01:01", ["10.0.0.1/24"], None)?;
    txn.lrp_set_gateway_chassis("lr1-ls1", "chassis-1", 10)?;
    txn.lr_route_add(
        "lr1",
        RouteSpec {
            ip_prefix: "0.0.0.0/0".into(),
            nexthop: "10.0.0.254".into(),
            ..Default::default()
        },
    )?;
    for hop in ["10.0.0.10", "10.0.0.11"] {
        let route = RouteSpec {
            ip_prefix: "192.168.0.0/16".into(),
            nexthop: hop.into(),
            ecmp: true,
            route_table: "rtb1".into(),
            ..Default::default()
        };
        txn.lr_route_add("lr1", route)?;
    }
    let policy = PolicySpec {
        priority: 100,
        r#match: "ip4.src == 10.0.0.0/24".into(),
        action: LogicalRouterPolicyAction::Reroute,
        nexthops: set(&["10.0.0.100"]),
        ..Default::default()
    };
    txn.lr_policy_add("lr1", policy)?;
    txn.lr_nat_add(
        "lr1",
        NatSpec {
            nat_type: NatType::Snat,
            external_ip: "172.16.0.1".into(),
            logical_ip: "10.0.0.0/24".into(),
            ..Default::default()
        },
    )?;
    let fip = NatSpec {
        nat_type: NatType::DnatAndSnat,
        external_ip: "172.16.0.2".into(),
        logical_ip: "10.0.0.2".into(),
        logical_port: Some("pod1".into()),
        external_mac: Some("00:00:00:00:02:02".into()),
        ..Default::default()
    };
    txn.lr_nat_add("lr1", fip)?;
    txn.pg_add("pg1", &["pod1"])?;
    txn.address_set_add("as1", ["10.0.0.2", "10.0.0.3"])?;
    let acl = AclSpec {
        direction: AclDirection::ToLport,
        priority: 1001,
        r#match: "ip4.src == $as1".into(),
        action: AclAction::AllowRelated,
        label: 7,
        name: Some("np-allow".into()),
        options: smap(&[("apply-after-lb", "true")]),
        ..Default::default()
    };
    txn.acl_add(&AclTarget::PortGroup("pg1".into()), acl)?;
    let drop = AclSpec {
        direction: AclDirection::FromLport,
        priority: 900,
        r#match: "ip4".into(),
        action: AclAction::Drop,
        ..Default::default()
    };
    txn.acl_add(&AclTarget::Switch("ls1".into()), drop)?;
    let lb = LbSpec {
        vip: "10.96.0.1:443".into(),
        backends: "10.0.0.2:6443,10.0.0.3:6443".into(),
        protocol: Some(LoadBalancerProtocol::Tcp),
        selection_fields: [
            LoadBalancerSelectionFields::IpSrc,
            LoadBalancerSelectionFields::IpDst,
        ]
        .into(),
        options: smap(&[("skip_snat", "true")]),
        ..Default::default()
    };
    txn.lb_add("lb1", lb)?;
    txn.ls_lb_add("ls1", "lb1")?;
    txn.lr_lb_add("lr1", "lb1")?;
    let dhcp = txn.dhcp_options_create("10.0.0.0/24", smap(&[("subnet", "ls1")]))?;
    txn.dhcp_options_set_options(
        dhcp,
        smap(&[("router", "10.0.0.1"), ("lease_time", "3600")]),
    );
    txn.lsp_set_dhcpv4_options("pod1", Some(dhcp))?;
    txn.nb_global_set_options([("mac_prefix".to_string(), "0a:00:00".to_string())])?;
    txn.mirror_add(
        "mirror1",
        MirrorType::Gre,
        MirrorFilter::ToLport,
        "172.16.0.100",
        42,
    )?;
    txn.lsp_attach_mirror("pod1", "mirror1")?;
    let bw = [
        (QoSBandwidthKey::Rate, 10000),
        (QoSBandwidthKey::Burst, 1000),
    ]
    .into();
    txn.qos_add(
        "ls1",
        QoSDirection::FromLport,
        100,
        "inport == \"pod1\"",
        bw,
        None,
    )?;
    nb.commit(txn).await?;
    Ok(())
}

#[tokio::test]
async fn topology_built_with_ovn_nb_reads_back_with_ovn_nbctl() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let nb = NbClient::connect(&remote).await.expect("connect");
    build_topology(&nb).await.expect("build topology");

    let ls = nbctl_row(&remote, "Logical_Switch", "name", "ls1");
    assert_eq!(
        map_of(&ls["other_config"]),
        smap(&[("exclude_ips", "10.0.0.1"), ("subnet", "10.0.0.0/24")])
    );
    assert_eq!(nbctl(&remote, &["lsp-list", "ls1"]).lines().count(), 2);
    let pod = nbctl_row(&remote, "Logical_Switch_Port", "name", "pod1");
    assert_eq!(
        set_of(&pod["addresses"]),
        set(&["00:00:00:00:00:01 10.0.0.2"])
    );
    assert_eq!(
        set_of(&pod["port_security"]),
        set(&["00:00:00:00:00:01 10.0.0.2"])
    );
    assert_eq!(map_of(&pod["external_ids"])["pod"], "default/pod1");
    assert_eq!(
        nbctl(&remote, &["lsp-get-type", "ls1-lr1"]).trim(),
        "router"
    );
    assert_eq!(
        nbctl(&remote, &["lsp-get-options", "ls1-lr1"]).trim(),
        "router-port=lr1-ls1"
    );
    let lrp = nbctl_row(&remote, "Logical_Router_Port", "name", "lr1-ls1");
    assert_eq!(lrp["mac"], "00:00:00:00:01:01");
    assert_eq!(set_of(&lrp["networks"]), set(&["10.0.0.1/24"]));
    assert_eq!(
        nbctl(&remote, &["lrp-get-gateway-chassis", "lr1-ls1"]).trim(),
        "lr1-ls1-chassis-1    10"
    );

    let routes = nbctl(&remote, &["lr-route-list", "lr1"]);
    assert!(
        routes.contains("0.0.0.0/0") && routes.contains("10.0.0.254"),
        "{routes}"
    );
    assert!(routes.contains("Route Table rtb1:"), "{routes}");
    assert!(
        routes.contains("10.0.0.10 dst-ip ecmp") && routes.contains("10.0.0.11 dst-ip ecmp"),
        "{routes}"
    );
    let policies = nbctl(&remote, &["lr-policy-list", "lr1"]);
    assert!(
        policies.contains("100") && policies.contains("reroute") && policies.contains("10.0.0.100"),
        "{policies}"
    );
    let nats = nbctl(&remote, &["lr-nat-list", "lr1"]);
    assert!(
        nats.lines().any(|l| l.starts_with("snat")
            && l.contains("172.16.0.1")
            && l.contains("10.0.0.0/24")),
        "{nats}"
    );
    assert!(
        nats.lines().any(|l| l.starts_with("dnat_and_snat")
            && l.contains("172.16.0.2")
            && l.contains("pod1")
            && l.contains("00:00:00:00:02:02")),
        "{nats}"
    );

    let acls = nbctl(&remote, &["acl-list", "pg1"]);
    assert!(
        acls.contains("to-lport  1001 (ip4.src == $as1) allow-related"),
        "{acls}"
    );
    let pg_acl = nbctl_rows(&remote, "ACL")
        .into_iter()
        .find(|r| r["priority"] == 1001)
        .expect("pg acl");
    assert_eq!(pg_acl["label"], 7);
    assert_eq!(pg_acl["name"], "np-allow");
    assert_eq!(
        map_of(&pg_acl["options"]),
        smap(&[("apply-after-lb", "true")])
    );
    assert!(nbctl(&remote, &["acl-list", "ls1"]).contains("from-lport   900 (ip4) drop"));
    let pg = nbctl_row(&remote, "Port_Group", "name", "pg1");
    assert_eq!(
        set_of(&pg["ports"]),
        BTreeSet::from([common::atom(&pod["_uuid"])])
    );
    let as1 = nbctl_row(&remote, "Address_Set", "name", "as1");
    assert_eq!(set_of(&as1["addresses"]), set(&["10.0.0.2", "10.0.0.3"]));

    let lb = nbctl_row(&remote, "Load_Balancer", "name", "lb1");
    assert_eq!(
        map_of(&lb["vips"]),
        smap(&[("10.96.0.1:443", "10.0.0.2:6443,10.0.0.3:6443")])
    );
    assert_eq!(set_of(&lb["selection_fields"]), set(&["ip_dst", "ip_src"]));
    assert_eq!(map_of(&lb["options"]), smap(&[("skip_snat", "true")]));
    assert!(nbctl(&remote, &["ls-lb-list", "ls1"]).contains("lb1"));
    assert!(nbctl(&remote, &["lr-lb-list", "lr1"]).contains("lb1"));
    let dhcp = nbctl(&remote, &["dhcp-options-list"]);
    let dhcp_uuid = dhcp.trim();
    let options: BTreeSet<String> = nbctl(&remote, &["dhcp-options-get-options", dhcp_uuid])
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(options, set(&["lease_time=3600", "router=10.0.0.1"]));
    assert_eq!(set_of(&pod["dhcpv4_options"]), set(&[dhcp_uuid]));
    assert_eq!(
        nbctl(&remote, &["get", "NB_Global", ".", "options:mac_prefix"]).trim(),
        "\"0a:00:00\""
    );
    let mirror = nbctl_row(&remote, "Mirror", "name", "mirror1");
    assert_eq!(
        (
            mirror["type"].as_str(),
            mirror["filter"].as_str(),
            mirror["index"].as_i64()
        ),
        (Some("gre"), Some("to-lport"), Some(42))
    );
    assert_eq!(
        set_of(&pod["mirror_rules"]),
        BTreeSet::from([common::atom(&mirror["_uuid"])])
    );
    let qos = nbctl(&remote, &["qos-list", "ls1"]);
    assert!(
        qos.contains("rate=10000") && qos.contains("burst=1000") && qos.contains("from-lport"),
        "{qos}"
    );
}

#[tokio::test]
async fn topology_built_with_ovn_nbctl_reads_back_with_ovn_nb() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let cmds: &[&[&str]] = &[
        &["ls-add", "sw0"],
        &["lsp-add", "sw0", "p0"],
        &["lsp-set-addresses", "p0", "0a:00:00:00:00:01 192.168.1.10"],
        &[
            "lsp-set-port-security",
            "p0",
            "0a:00:00:00:00:01 192.168.1.10",
        ],
        &["lr-add", "r0"],
        &[
            "lrp-add",
            "r0",
            "r0-sw0",
            "0a:00:00:00:00:ff",
            "192.168.1.1/24",
        ],
        &["lr-route-add", "r0", "10.10.0.0/16", "192.168.1.254"],
        &["lr-nat-add", "r0", "snat", "172.20.0.1", "192.168.1.0/24"],
        &[
            "acl-add",
            "sw0",
            "to-lport",
            "1000",
            "ip4.dst == 192.168.1.10",
            "allow-related",
        ],
        &["pg-add", "pg0", "p0"],
        &["lb-add", "lb0", "10.96.0.10:53", "192.168.1.10:53", "udp"],
        &["ls-lb-add", "sw0", "lb0"],
    ];
    for cmd in cmds {
        nbctl(&remote, cmd);
    }
    let nb = NbClient::connect(&remote).await.expect("connect");
    let sw = nb.by_name::<LogicalSwitch>("sw0").unwrap().expect("sw0");
    let ports = nb.ls_ports("sw0").unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].name, "p0");
    assert_eq!(ports[0].addresses, set(&["0a:00:00:00:00:01 192.168.1.10"]));
    assert_eq!(
        ports[0].port_security,
        set(&["0a:00:00:00:00:01 192.168.1.10"])
    );
    let acl = nb
        .store()
        .get(*sw.acls.iter().next().expect("acl"))
        .unwrap()
        .unwrap();
    assert_eq!(
        (acl.direction, acl.priority, acl.action),
        (AclDirection::ToLport, 1000, AclAction::AllowRelated)
    );
    assert_eq!(acl.r#match, "ip4.dst == 192.168.1.10");
    let r0 = nb.by_name::<LogicalRouter>("r0").unwrap().expect("r0");
    let lrp = nb
        .by_name::<LogicalRouterPort>("r0-sw0")
        .unwrap()
        .expect("lrp");
    assert!(r0.ports.contains(&lrp.id));
    assert_eq!(lrp.networks, set(&["192.168.1.1/24"]));
    let route = nb
        .store()
        .get(*r0.static_routes.iter().next().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        (route.ip_prefix.as_str(), route.nexthop.as_str()),
        ("10.10.0.0/16", "192.168.1.254")
    );
    let nat = nb
        .store()
        .get(*r0.nat.iter().next().unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        (nat.r#type, nat.external_ip.as_str()),
        (NatType::Snat, "172.20.0.1")
    );
    let pg = nb.by_name::<PortGroup>("pg0").unwrap().expect("pg0");
    assert_eq!(pg.ports, BTreeSet::from([ports[0].id]));
    let lb = nb.by_name::<LoadBalancer>("lb0").unwrap().expect("lb0");
    assert_eq!(lb.protocol, Some(LoadBalancerProtocol::Udp));
    assert_eq!(
        lb.vips,
        BTreeMap::from([("10.96.0.10:53".to_string(), "192.168.1.10:53".to_string())])
    );
    assert!(sw.load_balancer.contains(&lb.id));
}
