//! With a real ovn-northd: a switch with two ports and a router, written
//! through `ovn-nb`, produce Port_Binding, Datapath_Binding and Logical_Flow
//! rows in SB, read through `ovn-sb`; chassis, encaps, a port bound to a
//! chassis and a MAC binding created with `ovn-sbctl` read back too.

use std::time::Duration;

use ovn_harness::OvnCentral;
use ovn_nb::{NbClient, RouteSpec};
use ovn_sb::{EncapType, LogicalFlowPipeline, SbClient};

fn sbctl(remote: &str, args: &[&str]) -> String {
    let db = format!("--db={remote}");
    let mut all = vec![db.as_str()];
    all.extend_from_slice(args);
    ovn_harness::run("ovn-sbctl", &all).unwrap_or_else(|e| panic!("ovn-sbctl {args:?}: {e}"))
}

#[tokio::test]
async fn northd_turns_nb_topology_into_sb_rows_read_through_ovn_sb() {
    if !ovn_harness::require(&[
        "ovsdb-server",
        "ovsdb-tool",
        "ovn-northd",
        "ovn-nbctl",
        "ovn-sbctl",
    ]) {
        return;
    }
    let central = OvnCentral::start().expect("start OVN central");
    let nb = NbClient::connect(&central.nb_remote()).await.expect("nb");
    let mut txn = nb.txn();
    txn.ls_add("ls1").unwrap();
    txn.lsp_add("ls1", "p1").unwrap();
    txn.lsp_set_addresses("p1", ["00:00:00:00:00:01 10.0.0.2"])
        .unwrap();
    txn.lsp_add("ls1", "p2").unwrap();
    txn.lsp_set_addresses("p2", ["00:00:00:00:00:02 10.0.0.3"])
        .unwrap();
    txn.lr_add("lr1").unwrap();
    txn.lrp_add("lr1", "lr1-ls1", "00:00:00:00:01:01", ["10.0.0.1/24"], None)
        .unwrap();
    txn.lsp_add("ls1", "ls1-lr1").unwrap();
    txn.lsp_set_type("ls1-lr1", "router").unwrap();
    txn.lsp_set_addresses("ls1-lr1", ["router"]).unwrap();
    txn.lsp_set_options(
        "ls1-lr1",
        [("router-port".to_string(), "lr1-ls1".to_string())].into(),
    )
    .unwrap();
    txn.lr_route_add(
        "lr1",
        RouteSpec {
            ip_prefix: "0.0.0.0/0".into(),
            nexthop: "10.0.0.254".into(),
            ..Default::default()
        },
    )
    .unwrap();
    nb.commit(txn).await.expect("commit NB");

    let sb = SbClient::connect(&central.sb_remote()).await.expect("sb");
    let timeout = Duration::from_secs(30);
    for port in ["p1", "p2", "ls1-lr1", "lr1-ls1"] {
        sb.wait_port_binding(port, timeout)
            .await
            .expect("port binding");
    }
    let ls_dp = sb.datapath("ls1").unwrap().expect("ls1 datapath");
    let lr_dp = sb.datapath("lr1").unwrap().expect("lr1 datapath");
    let p1 = sb.port_binding("p1").unwrap().unwrap();
    assert_eq!(p1.datapath, ls_dp.id);
    assert_eq!(p1.mac, ["00:00:00:00:00:01 10.0.0.2".to_string()].into());
    assert_eq!(
        sb.port_binding("lr1-ls1").unwrap().unwrap().datapath,
        lr_dp.id
    );
    // northd writes the flows in the same transaction as the bindings
    let ls_flows = sb.logical_flows(ls_dp.id).unwrap();
    assert!(ls_flows
        .iter()
        .any(|f| f.pipeline == LogicalFlowPipeline::Ingress
            && f.r#match.contains("00:00:00:00:00:01")));
    let lr_flows = sb.logical_flows(lr_dp.id).unwrap();
    assert!(
        lr_flows.iter().any(|f| f.r#match.contains("10.0.0.1")),
        "router flows mention its address"
    );
    let sbctl_count = sbctl(
        &central.sb_remote(),
        &["--bare", "--columns=_uuid", "find", "Logical_Flow"],
    )
    .split_whitespace()
    .count();
    assert!(ls_flows.len() + lr_flows.len() <= sbctl_count);

    // chassis, encap, binding and MAC binding written with the real ovn-sbctl
    sbctl(
        &central.sb_remote(),
        &["chassis-add", "ch1", "geneve", "127.0.0.1"],
    );
    sbctl(&central.sb_remote(), &["lsp-bind", "p1", "ch1"]);
    let dp = ls_dp.id.to_string();
    let datapath_arg = format!("datapath={dp}");
    sbctl(
        &central.sb_remote(),
        &[
            "create",
            "MAC_Binding",
            "logical_port=lr1-ls1",
            "ip=10.0.0.9",
            "mac=\"00:00:00:00:00:09\"",
            &datapath_arg,
        ],
    );
    // the replica catches up asynchronously: wait for the last write to show
    sb.db()
        .wait_for::<ovn_sb::MacBinding>("MAC_Binding 10.0.0.9", timeout, |m| m.ip == "10.0.0.9")
        .await
        .unwrap();
    let ch1 = sb.chassis("ch1").unwrap().expect("chassis");
    let encaps = sb.encaps("ch1").unwrap();
    assert_eq!(encaps.len(), 1);
    assert_eq!(
        (encaps[0].r#type.clone(), encaps[0].ip.as_str()),
        (EncapType::Geneve, "127.0.0.1")
    );
    assert!(ch1.encaps.contains(&encaps[0].id));
    assert_eq!(sb.bound_chassis("p1").unwrap().as_deref(), Some("ch1"));
    assert_eq!(sb.bound_chassis("p2").unwrap(), None);
    let macs = sb.mac_bindings("lr1-ls1").unwrap();
    assert_eq!(macs.len(), 1);
    assert_eq!(
        (macs[0].ip.as_str(), macs[0].mac.as_str()),
        ("10.0.0.9", "00:00:00:00:00:09")
    );
}
