//! The desired-state operations (`*_ensure`): create with every wanted column, write
//! only what differs afterwards (nothing at all when nothing does), keep other writers'
//! map keys, and refuse a port that belongs elsewhere without a write.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use ovn_nb::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn ensure_creates_then_writes_nothing_when_unchanged() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let nb = NbClient::connect(&remote).await.unwrap();
    let ids = map(&[("vendor", "kube-ovn")]);
    let lb = LbEnsure {
        protocol: Some(LoadBalancerProtocol::Udp),
        selection_fields: BTreeSet::from([LoadBalancerSelectionFields::IpSrc]),
        options: map(&[("affinity_timeout", "10800")]),
        external_ids: ids.clone(),
    };
    let networks = BTreeSet::from(["100.64.0.1/16".to_string()]);
    let build = |txn: &mut NbTxn<'_>| {
        txn.lr_ensure("lr", &ids, &map(&[("dynamic_neigh_routers", "true")]))?;
        txn.ls_ensure("ls", &ids, &BTreeMap::new())?;
        txn.lb_ensure("lb", &lb)?;
        txn.lrp_ensure("lr", "lr-ls", "00:00:00:00:00:01", &networks, &ids)?;
        txn.lsp_ensure_router_port("ls", "ls-lr", "lr-ls", &ids)?;
        txn.nb_global_ensure(
            &map(&[("use_ct_inv_match", "false")]),
            &[],
            &ids,
            Some(false),
        )
    };
    let mut txn = nb.txn();
    build(&mut txn).unwrap();
    nb.commit(txn).await.unwrap();

    let router = common::nbctl_row(&remote, "Logical_Router", "name", "lr");
    assert_eq!(
        router["options"].to_string(),
        r#"["map",[["dynamic_neigh_routers","true"]]]"#
    );
    let port = common::nbctl_row(&remote, "Logical_Switch_Port", "name", "ls-lr");
    assert_eq!(port["type"], "router");
    assert_eq!(
        port["options"].to_string(),
        r#"["map",[["router-port","lr-ls"]]]"#
    );
    assert!(common::nbctl(&remote, &["lrp-list", "lr"]).contains("(lr-ls)"));

    let mut again = nb.txn();
    build(&mut again).unwrap();
    assert!(again.ops().is_empty(), "{:?}", again.ops());
}

#[tokio::test]
async fn ensure_writes_only_the_difference_and_keeps_other_keys() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    common::nbctl(&remote, &["lr-add", "lr"]);
    common::nbctl(
        &remote,
        &[
            "set",
            "Logical_Router",
            "lr",
            "options:theirs=1",
            "options:ours=old",
        ],
    );
    common::nbctl(
        &remote,
        &["lrp-add", "lr", "lr-ls", "00:00:00:00:00:01", "10.0.0.1/24"],
    );
    let nb = NbClient::connect(&remote).await.unwrap();
    let mut txn = nb.txn();
    txn.lr_ensure("lr", &BTreeMap::new(), &map(&[("ours", "new")]))
        .unwrap();
    let networks = BTreeSet::from(["10.0.0.1/16".to_string()]);
    txn.lrp_ensure(
        "lr",
        "lr-ls",
        "00:00:00:00:00:99",
        &networks,
        &BTreeMap::new(),
    )
    .unwrap();
    nb.commit(txn).await.unwrap();
    let router = common::nbctl_row(&remote, "Logical_Router", "name", "lr");
    assert_eq!(
        router["options"].to_string(),
        r#"["map",[["ours","new"],["theirs","1"]]]"#
    );
    let lrp = common::nbctl_row(&remote, "Logical_Router_Port", "name", "lr-ls");
    // networks follow the wanted state; the MAC is only for creation
    assert_eq!(lrp["networks"], "10.0.0.1/16");
    assert_eq!(lrp["mac"], "00:00:00:00:00:01");
}

#[tokio::test]
async fn a_port_on_another_switch_is_refused_without_a_write() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    common::nbctl(&remote, &["ls-add", "other"]);
    common::nbctl(&remote, &["ls-add", "ls"]);
    common::nbctl(&remote, &["lsp-add", "other", "ls-lr"]);
    let nb = NbClient::connect(&remote).await.unwrap();
    let mut txn = nb.txn();
    let err = txn
        .lsp_ensure_router_port("ls", "ls-lr", "lr-ls", &BTreeMap::new())
        .unwrap_err();
    assert!(
        matches!(&err, NbError::WrongOwner { port, owner, .. } if port == "ls-lr" && owner == "other"),
        "{err:?}"
    );
    assert!(txn.ops().is_empty());
}

/// Waits until the replica shows `vip` in balancer `lb` with `backends` (None: absent).
async fn replica_vip(nb: &NbClient, lb: &str, vip: &str, backends: Option<&str>) {
    let what = format!("{lb} {vip} = {backends:?}");
    nb.wait_for::<LoadBalancer>(&what, std::time::Duration::from_secs(10), |row| {
        row.name == lb && row.vips.get(vip).map(String::as_str) == backends
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn lb_vips_are_written_key_by_key_and_others_kept() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    // a VIP someone else wrote, and two of ours
    common::nbctl(&remote, &["lb-add", "lb", "10.96.0.1:443", "10.0.0.1:6443"]);
    let nb = NbClient::connect(&remote).await.unwrap();
    replica_vip(&nb, "lb", "10.96.0.1:443", Some("10.0.0.1:6443")).await;
    let ours = map(&[
        ("10.96.0.10:53", "10.16.0.2:53,10.16.0.3:53"),
        ("10.96.0.10:9153", "10.16.0.2:9153"),
    ]);
    let mut txn = nb.txn();
    assert_eq!(txn.lb_ensure_vips("lb", &ours, &[]).unwrap(), 2);
    assert_eq!(
        txn.ops().len(),
        2,
        "a guard and one mutate: {:?}",
        txn.ops()
    );
    nb.commit(txn).await.unwrap();
    replica_vip(&nb, "lb", "10.96.0.10:9153", Some("10.16.0.2:9153")).await;

    // unchanged: nothing to send
    let mut txn = nb.txn();
    assert_eq!(txn.lb_ensure_vips("lb", &ours, &[]).unwrap(), 0);
    assert!(txn.ops().is_empty());

    let prefix = txn.lb_vips_with_prefix("lb", "10.96.0.10:").unwrap();
    assert_eq!(prefix.len(), 2, "{prefix:?}");
    assert!(txn.lb_vips_with_prefix("lb", "10.96.0.1:").unwrap().len() == 1);

    // one backend goes, one VIP goes: only those keys are written
    let after = map(&[("10.96.0.10:53", "10.16.0.3:53")]);
    let gone = vec!["10.96.0.10:9153".to_string(), "10.96.0.99:1".to_string()];
    let mut txn = nb.txn();
    assert_eq!(txn.lb_ensure_vips("lb", &after, &gone).unwrap(), 2);
    nb.commit(txn).await.unwrap();
    replica_vip(&nb, "lb", "10.96.0.10:9153", None).await;

    let vips = common::map_of(&common::nbctl_row(&remote, "Load_Balancer", "name", "lb")["vips"]);
    assert_eq!(
        vips,
        map(&[
            ("10.96.0.1:443", "10.0.0.1:6443"),
            ("10.96.0.10:53", "10.16.0.3:53")
        ])
    );
}

#[tokio::test]
async fn lb_vips_on_a_missing_balancer_fail_naming_it() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let nb = NbClient::connect(&server.unix_remote()).await.unwrap();
    let mut txn = nb.txn();
    let err = txn
        .lb_ensure_vips("nope", &map(&[("10.96.0.1:80", "10.0.0.1:80")]), &[])
        .unwrap_err();
    assert!(
        matches!(&err, NbError::NotFound { name, .. } if name == "nope"),
        "{err:?}"
    );
    assert!(txn.ops().is_empty());
}
