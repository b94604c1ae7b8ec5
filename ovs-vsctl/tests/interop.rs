//! Interop with the real `ovs-vsctl` on a real ovsdb-server (no vswitchd: the
//! database contents are what is compared), and the ovn-installed wait.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ovn_harness::{Db, OvsdbServer};
use ovs_vsctl::*;

fn server() -> Option<OvsdbServer> {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-vsctl"]) {
        return None;
    }
    Some(OvsdbServer::start(Db::OpenVswitch).expect("start Open_vSwitch ovsdb-server"))
}

fn vsctl(remote: &str, args: &[&str]) -> String {
    let db = format!("--db={remote}");
    let mut all = vec![db.as_str(), "--no-wait"];
    all.extend_from_slice(args);
    ovn_harness::run("ovs-vsctl", &all).unwrap_or_else(|e| panic!("ovs-vsctl {args:?}: {e}"))
}

fn get(remote: &str, table: &str, record: &str, column: &str) -> String {
    // ovs-vsctl quotes strings only where its syntax needs it: compare unquoted
    vsctl(remote, &["get", table, record, column])
        .trim()
        .trim_matches('"')
        .to_string()
}

fn smap(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn bridges_and_ports_built_with_ovs_vsctl_crate_read_back_with_ovs_vsctl() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    let vs = VsClient::connect(&remote).await.expect("connect");
    let mut txn = vs.txn();
    txn.set_external_ids(smap(&[
        ("system-id", "node-1"),
        ("ovn-remote", "tcp:127.0.0.1:6642"),
        ("ovn-encap-type", "geneve"),
        ("ovn-encap-ip", "127.0.0.1"),
    ]))
    .unwrap();
    txn.add_br("br-int").unwrap();
    let protocols = BTreeSet::from([BridgeProtocols::OpenFlow13, BridgeProtocols::OpenFlow15]);
    txn.set_bridge(
        "br-int",
        Some("netdev"),
        Some(BridgeFailMode::Secure),
        Some(protocols),
    )
    .unwrap();
    let spec = InterfaceSpec {
        external_ids: smap(&[("iface-id", "pod1.default")]),
        mtu_request: Some(1400),
        ingress_policing_rate: 10000,
        ingress_policing_burst: 1000,
        ..Default::default()
    };
    txn.add_port("br-int", "veth-pod1", spec).unwrap();
    txn.add_port(
        "br-int",
        "mirror-out",
        InterfaceSpec {
            iface_type: "internal".into(),
            ..Default::default()
        },
    )
    .unwrap();
    txn.set_port_qos(
        "veth-pod1",
        "linux-htb",
        smap(&[("max-rate", "1000000")]),
        vec![smap(&[("max-rate", "500000")])],
    )
    .unwrap();
    txn.add_mirror("br-int", "m0", "mirror-out").unwrap();
    vs.commit(txn).await.expect("commit");

    assert_eq!(vsctl(&remote, &["list-br"]).trim(), "br-int");
    assert_eq!(
        vsctl(&remote, &["list-ports", "br-int"])
            .lines()
            .collect::<Vec<_>>(),
        ["mirror-out", "veth-pod1"]
    );
    assert_eq!(
        get(&remote, "Open_vSwitch", ".", "external_ids:ovn-encap-ip"),
        "127.0.0.1"
    );
    assert_eq!(
        get(&remote, "Open_vSwitch", ".", "external_ids:system-id"),
        "node-1"
    );
    assert_eq!(get(&remote, "Bridge", "br-int", "datapath_type"), "netdev");
    assert_eq!(get(&remote, "Bridge", "br-int", "fail_mode"), "secure");
    assert_eq!(
        get(&remote, "Bridge", "br-int", "protocols"),
        "[OpenFlow13, OpenFlow15]"
    );
    assert_eq!(get(&remote, "Interface", "br-int", "type"), "internal");
    assert_eq!(
        get(&remote, "Interface", "veth-pod1", "external_ids:iface-id"),
        "pod1.default"
    );
    assert_eq!(
        get(&remote, "Interface", "veth-pod1", "mtu_request"),
        "1400"
    );
    assert_eq!(
        get(&remote, "Interface", "veth-pod1", "ingress_policing_rate"),
        "10000"
    );
    assert_eq!(
        get(&remote, "Interface", "veth-pod1", "ingress_policing_burst"),
        "1000"
    );
    let qos = get(&remote, "Port", "veth-pod1", "qos");
    assert_eq!(get(&remote, "QoS", &qos, "type"), "linux-htb");
    assert_eq!(
        get(&remote, "QoS", &qos, "other_config:max-rate"),
        "1000000"
    );
    let queue = get(&remote, "QoS", &qos, "queues:0");
    assert_eq!(
        get(&remote, "Queue", &queue, "other_config:max-rate"),
        "500000"
    );
    assert_eq!(get(&remote, "Mirror", "m0", "select_all"), "true");

    // idempotency and deletion
    let mut txn = vs.txn();
    assert!(matches!(
        txn.add_br("br-int"),
        Err(VsError::AlreadyExists { .. })
    ));
    txn.may_exist().add_br("br-int").unwrap();
    txn.del_port("veth-pod1").unwrap();
    txn.if_exists().del_port("nope").unwrap();
    vs.commit(txn).await.expect("commit");
    assert_eq!(
        vsctl(&remote, &["list-ports", "br-int"]).trim(),
        "mirror-out"
    );
    assert_eq!(vs.list_ports("br-int").unwrap(), ["mirror-out"]);
    let mut txn = vs.txn();
    txn.del_br("br-int").unwrap();
    vs.commit(txn).await.expect("commit");
    assert_eq!(vsctl(&remote, &["list-br"]).trim(), "");
}

#[tokio::test]
async fn bridges_built_with_ovs_vsctl_read_back_through_the_crate() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    vsctl(&remote, &["init"]);
    vsctl(
        &remote,
        &[
            "add-br",
            "br0",
            "--",
            "set",
            "Bridge",
            "br0",
            "fail_mode=standalone",
        ],
    );
    vsctl(
        &remote,
        &[
            "add-port",
            "br0",
            "p1",
            "--",
            "set",
            "Interface",
            "p1",
            "type=internal",
            "external_ids:iface-id=lsp1",
        ],
    );
    let vs = VsClient::connect(&remote).await.expect("connect");
    assert_eq!(vs.list_ports("br0").unwrap(), ["p1"]);
    let br = vs.store().by_name::<Bridge>("br0").unwrap().remove(0);
    assert_eq!(br.fail_mode, Some(BridgeFailMode::Standalone));
    let p1 = vs.store().by_name::<Interface>("p1").unwrap().remove(0);
    assert_eq!(p1.r#type, "internal");
    assert_eq!(
        p1.external_ids.get("iface-id").map(String::as_str),
        Some("lsp1")
    );
}

#[tokio::test]
async fn ovn_installed_wait_resolves_when_the_key_appears_and_times_out_otherwise() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    let vs = VsClient::connect(&remote).await.expect("connect");
    let mut txn = vs.txn();
    txn.add_br("br-int").unwrap();
    txn.add_port("br-int", "pod-a", InterfaceSpec::default())
        .unwrap();
    vs.commit(txn).await.unwrap();

    let err = vs
        .wait_ovn_installed("pod-a", Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(
        matches!(err, VsError::Db(ovsdb::typed::DbError::Timeout(..))),
        "{err}"
    );

    let remote2 = remote.clone();
    let setter = tokio::task::spawn_blocking(move || {
        std::thread::sleep(Duration::from_millis(100));
        vsctl(
            &remote2,
            &[
                "set",
                "Interface",
                "pod-a",
                "external_ids:ovn-installed=true",
            ],
        );
    });
    let iface = vs
        .wait_ovn_installed("pod-a", Duration::from_secs(30))
        .await
        .expect("ovn-installed");
    assert_eq!(
        iface.external_ids.get("ovn-installed").map(String::as_str),
        Some("true")
    );
    setter.await.unwrap();
}

#[tokio::test]
async fn qos_rows_inserted_replaced_and_destroyed_leave_no_orphans() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    let vs = VsClient::connect(&remote).await.expect("connect");
    let mut txn = vs.txn();
    txn.add_br("br-int").unwrap();
    txn.add_port("br-int", "veth-q", InterfaceSpec::default())
        .unwrap();
    vs.commit(txn).await.expect("commit");

    let htb = |rate: &str| {
        let ids = smap(&[("iface-id", "q.default"), ("pod", "default/q")]);
        let qos = QoS {
            r#type: "linux-htb".into(),
            external_ids: ids.clone(),
            ..Default::default()
        };
        let queue = Queue {
            other_config: smap(&[("max-rate", rate)]),
            external_ids: ids,
            ..Default::default()
        };
        (qos, vec![queue])
    };
    let mut txn = vs.txn();
    let (qos, queues) = htb("10000000");
    let first = txn.insert_qos(qos, queues);
    txn.set_port_qos_ref("veth-q", Some(first)).unwrap();
    vs.commit(txn).await.expect("insert");
    let qos = get(&remote, "Port", "veth-q", "qos");
    assert_eq!(qos, first.uuid().to_string());
    assert_eq!(get(&remote, "QoS", &qos, "external_ids:pod"), "default/q");
    let queue = get(&remote, "QoS", &qos, "queues:0");
    assert_eq!(
        get(&remote, "Queue", &queue, "other_config:max-rate"),
        "10000000"
    );

    // replace: the old QoS and its Queue go in the same transaction
    let mut txn = vs.txn();
    let (qos, queues) = htb("20000000");
    let second = txn.insert_qos(qos, queues);
    txn.set_port_qos_ref("veth-q", Some(second)).unwrap();
    txn.destroy_qos(first).unwrap();
    vs.commit(txn).await.expect("replace");
    assert_eq!(vs.store().rows::<QoS>().unwrap().len(), 1);
    assert_eq!(vs.store().rows::<Queue>().unwrap().len(), 1);

    // clear and destroy: nothing left
    let mut txn = vs.txn();
    txn.set_port_qos_ref("veth-q", None).unwrap();
    txn.destroy_qos(second).unwrap();
    vs.commit(txn).await.expect("clear");
    assert_eq!(get(&remote, "Port", "veth-q", "qos"), "[]");
    assert!(vsctl(&remote, &["list", "QoS"]).trim().is_empty());
    assert!(vsctl(&remote, &["list", "Queue"]).trim().is_empty());

    // a QoS row still referenced cannot be destroyed alone: nothing is lost
    let mut txn = vs.txn();
    let (qos, queues) = htb("5000000");
    let third = txn.insert_qos(qos, queues);
    txn.set_port_qos_ref("veth-q", Some(third)).unwrap();
    vs.commit(txn).await.expect("insert again");
    let mut txn = vs.txn();
    txn.destroy_qos(third).unwrap();
    assert!(
        vs.commit(txn).await.is_err(),
        "destroying a referenced QoS must fail"
    );
    assert_eq!(
        get(&remote, "Port", "veth-q", "qos"),
        third.uuid().to_string()
    );
}
