//! The controller's start-up against a real NB + ovn-northd: Kube-OVN's rows and
//! formats (read back with the real `ovn-nbctl`), idempotency (a second run writes
//! nothing, the NB dump is unchanged), other writers' keys kept, drift repaired, and a
//! conflicting port refused without a write.

use kube_ovn_test_support as common;

use kube_ovn_controller::config::ControllerConfig;
use kube_ovn_controller::{bootstrap, BootstrapError, BootstrapStep};
use ovn_nb::{
    LoadBalancer, LogicalRouter, LogicalRouterPort, LogicalSwitch, LogicalSwitchPort, NbClient,
    NbError, NbGlobal,
};
use ovsdb::typed::Table;

/// How long a replica may take to show a write made with `ovn-nbctl`.
const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn config(remote: &str, extra: &[&str]) -> ControllerConfig {
    let nb = format!("--ovn-nb-addr={remote}");
    let mut args = vec!["kube-ovn-controller", nb.as_str()];
    args.extend_from_slice(extra);
    ControllerConfig::parse_from(args).expect("flags")
}

fn vendor_of<T: Table>(nb: &NbClient, ids: impl Fn(&T) -> Option<String>) -> Vec<Option<String>> {
    nb.store()
        .rows::<T>()
        .unwrap()
        .iter()
        .map(|s| ids(&s.row))
        .collect()
}

#[tokio::test]
async fn start_up_writes_kube_ovns_rows_in_its_formats() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    let nb = NbClient::connect(&remote).await.unwrap();
    let report = bootstrap(&nb, &config(&remote, &[])).await.unwrap();
    assert!(report.ops_written() > 0);

    // the cluster router and its options
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router",
            "ovn-cluster",
            "external_ids:vendor"
        ),
        "kube-ovn"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router",
            "ovn-cluster",
            "options:mac_binding_age_threshold"
        ),
        "300"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router",
            "ovn-cluster",
            "options:dynamic_neigh_routers"
        ),
        "true"
    );
    // the join patch, as ovn-nbctl lists it
    let lrps = common::nbctl(&remote, &["lrp-list", "ovn-cluster"]);
    assert!(lrps.contains("(ovn-cluster-join)"), "{lrps}");
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router_Port",
            "ovn-cluster-join",
            "networks"
        ),
        "[\"100.64.0.1/16\"]"
    );
    let mac = common::nb_get(&remote, "Logical_Router_Port", "ovn-cluster-join", "mac");
    assert!(mac.starts_with("00:00:00:") && mac.len() == 17, "{mac}");
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router_Port",
            "ovn-cluster-join",
            "external_ids:lr"
        ),
        "ovn-cluster"
    );
    let lsps = common::nbctl(&remote, &["lsp-list", "join"]);
    assert!(lsps.contains("(join-ovn-cluster)"), "{lsps}");
    assert_eq!(
        common::nbctl(&remote, &["lsp-get-type", "join-ovn-cluster"]).trim(),
        "router"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Switch_Port",
            "join-ovn-cluster",
            "addresses"
        ),
        "[router]"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Switch_Port",
            "join-ovn-cluster",
            "options:router-port"
        ),
        "ovn-cluster-join"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Switch_Port",
            "join-ovn-cluster",
            "external_ids:ls"
        ),
        "join"
    );
    // the six load balancers
    let lbs = common::nbctl(
        &remote,
        &[
            "--bare",
            "--columns=name",
            "find",
            "Load_Balancer",
            "external_ids:vendor=kube-ovn",
        ],
    );
    let mut names: Vec<&str> = lbs.split_whitespace().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "cluster-sctp-loadbalancer",
            "cluster-sctp-session-loadbalancer",
            "cluster-tcp-loadbalancer",
            "cluster-tcp-session-loadbalancer",
            "cluster-udp-loadbalancer",
            "cluster-udp-session-loadbalancer",
        ]
    );
    let session = "cluster-tcp-session-loadbalancer";
    assert_eq!(
        common::nb_get(&remote, "Load_Balancer", session, "protocol"),
        "tcp"
    );
    assert_eq!(
        common::nb_get(&remote, "Load_Balancer", session, "selection_fields"),
        "[ip_src]"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Load_Balancer",
            session,
            "options:affinity_timeout"
        ),
        "10800"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Load_Balancer",
            "cluster-udp-loadbalancer",
            "options:ct_flush"
        ),
        "true"
    );
    let udp_session = common::nb_get(
        &remote,
        "Load_Balancer",
        "cluster-udp-session-loadbalancer",
        "options",
    );
    assert!(!udp_session.contains("ct_flush"), "{udp_session}");
    assert_eq!(
        common::nb_get(
            &remote,
            "Load_Balancer",
            "cluster-sctp-loadbalancer",
            "options:prefer_local_backend"
        ),
        "false"
    );
    // NB_Global as Kube-OVN sets it
    assert_eq!(
        common::nb_get(&remote, "NB_Global", ".", "options:ls_dnat_mod_dl_dst"),
        "true"
    );
    assert_eq!(
        common::nb_get(&remote, "NB_Global", ".", "options:use_ct_inv_match"),
        "false"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "NB_Global",
            ".",
            "options:ls_ct_skip_dst_lport_ips"
        ),
        "true"
    );
    assert_eq!(common::nb_get(&remote, "NB_Global", ".", "ipsec"), "false");

    // every row written carries vendor=kube-ovn
    let vendor = |m: &std::collections::BTreeMap<String, String>| m.get("vendor").cloned();
    let mut all = vendor_of::<LogicalRouter>(&nb, |r| vendor(&r.external_ids));
    all.extend(vendor_of::<LogicalRouterPort>(&nb, |r| {
        vendor(&r.external_ids)
    }));
    all.extend(vendor_of::<LogicalSwitch>(&nb, |r| vendor(&r.external_ids)));
    all.extend(vendor_of::<LogicalSwitchPort>(&nb, |r| {
        vendor(&r.external_ids)
    }));
    all.extend(vendor_of::<LoadBalancer>(&nb, |r| vendor(&r.external_ids)));
    all.extend(vendor_of::<NbGlobal>(&nb, |r| vendor(&r.external_ids)));
    assert_eq!(all.len(), 1 + 1 + 1 + 1 + 6 + 1);
    assert!(
        all.iter().all(|v| v.as_deref() == Some("kube-ovn")),
        "{all:?}"
    );

    // northd compiled the router and the join switch into SB datapaths
    common::nbctl(&remote, &["--wait=sb", "sync"]);
    let datapaths = common::sbctl(
        &central.sb_remote(),
        &[
            "--bare",
            "--columns=external_ids",
            "list",
            "Datapath_Binding",
        ],
    );
    assert!(
        datapaths.contains("name=ovn-cluster") && datapaths.contains("name=join"),
        "{datapaths}"
    );
}

#[tokio::test]
async fn a_second_start_up_writes_nothing_and_leaves_the_dump_unchanged() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    let config = config(
        &remote,
        &[
            "--node-switch-cidr=100.64.0.0/16,fd00:100:64::/112",
            "--default-cidr=10.16.0.0/16,fd00:10:16::/112",
            "--node-local-dns-ip=169.254.20.10",
        ],
    );
    let nb = NbClient::connect(&remote).await.unwrap();
    bootstrap(&nb, &config).await.unwrap();
    common::nbctl(&remote, &["--wait=sb", "sync"]);
    let before = common::nb_dump(&remote);

    let again = NbClient::connect(&remote).await.unwrap();
    let report = bootstrap(&again, &config).await.unwrap();
    assert_eq!(report.ops_written(), 0, "{report:?}");
    assert_eq!(report.steps.len(), 4);
    assert_eq!(common::nb_dump(&remote), before);
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router_Port",
            "ovn-cluster-join",
            "networks"
        ),
        "[\"100.64.0.1/16\", \"fd00:100:64::1/112\"]"
    );
    assert_eq!(
        common::nb_get(&remote, "NB_Global", ".", "options:node_local_dns_ip"),
        "169.254.20.10"
    );
}

#[tokio::test]
async fn other_writers_keys_are_kept_and_drift_is_repaired_with_only_the_difference() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    let nb = NbClient::connect(&remote).await.unwrap();
    bootstrap(&nb, &config(&remote, &[])).await.unwrap();
    let mac = common::nb_get(&remote, "Logical_Router_Port", "ovn-cluster-join", "mac");
    // an operator's key, and two drifted values
    common::nbctl(
        &remote,
        &[
            "set",
            "Logical_Router",
            "ovn-cluster",
            "options:operator=kept",
            "options:dynamic_neigh_routers=false",
        ],
    );
    common::nbctl(
        &remote,
        &[
            "set",
            "Load_Balancer",
            "cluster-udp-session-loadbalancer",
            "options:affinity_timeout=5",
        ],
    );
    // the next start-up reads its replica: let it see the outside writes first
    let seen =
        |lb: &LoadBalancer| lb.options.get("affinity_timeout").map(String::as_str) == Some("5");
    nb.wait_for::<LoadBalancer>("drifted affinity_timeout", WAIT, seen)
        .await
        .unwrap();
    let seen = |lr: &LogicalRouter| lr.options.contains_key("operator");
    nb.wait_for::<LogicalRouter>("operator's option", WAIT, seen)
        .await
        .unwrap();

    let report = bootstrap(
        &nb,
        &config(&remote, &["--enable-ovn-lb-prefer-local=true"]),
    )
    .await
    .unwrap();
    let per_step: Vec<(BootstrapStep, usize)> = report.steps.clone();
    assert_eq!(per_step[0], (BootstrapStep::NbGlobal, 0));
    assert!(per_step[1].1 > 0 && per_step[2].1 > 0, "{per_step:?}");
    assert_eq!(per_step[3], (BootstrapStep::JoinSwitch, 0));
    assert_eq!(
        common::nb_get(&remote, "Logical_Router", "ovn-cluster", "options:operator"),
        "kept"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router",
            "ovn-cluster",
            "options:dynamic_neigh_routers"
        ),
        "true"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Load_Balancer",
            "cluster-udp-session-loadbalancer",
            "options:affinity_timeout"
        ),
        "10800"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Load_Balancer",
            "cluster-tcp-loadbalancer",
            "options:prefer_local_backend"
        ),
        "true"
    );
    // the router port keeps the MAC neighbours cached
    assert_eq!(
        common::nb_get(&remote, "Logical_Router_Port", "ovn-cluster-join", "mac"),
        mac
    );
    // node_local_dns_ip removed when the flag is empty
    common::nbctl(
        &remote,
        &[
            "set",
            "NB_Global",
            ".",
            "options:node_local_dns_ip=169.254.20.10",
        ],
    );
    let seen = |g: &NbGlobal| g.options.contains_key("node_local_dns_ip");
    nb.wait_for::<NbGlobal>("node_local_dns_ip set outside", WAIT, seen)
        .await
        .unwrap();
    bootstrap(&nb, &config(&remote, &[])).await.unwrap();
    let options = common::nb_get(&remote, "NB_Global", ".", "options");
    assert!(!options.contains("node_local_dns_ip"), "{options}");
}

#[tokio::test]
async fn without_enable_lb_no_load_balancer_is_written() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    let nb = NbClient::connect(&remote).await.unwrap();
    let report = bootstrap(&nb, &config(&remote, &["--enable-lb=false"]))
        .await
        .unwrap();
    assert_eq!(report.steps[2], (BootstrapStep::LoadBalancers, 0));
    assert_eq!(common::nbctl(&remote, &["lb-list"]).trim(), "");
}

#[tokio::test]
async fn a_join_port_owned_by_another_router_is_refused_and_nothing_changes() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    common::nbctl(&remote, &["lr-add", "other-router"]);
    common::nbctl(
        &remote,
        &[
            "lrp-add",
            "other-router",
            "ovn-cluster-join",
            "00:00:00:00:00:01",
            "192.168.0.1/24",
        ],
    );
    let nb = NbClient::connect(&remote).await.unwrap();
    let err = bootstrap(&nb, &config(&remote, &[])).await.unwrap_err();
    let BootstrapError::Step { step, source } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*step, BootstrapStep::JoinSwitch);
    match source {
        NbError::WrongOwner {
            port,
            owner,
            wanted,
            ..
        } => {
            assert_eq!(
                (port.as_str(), owner.as_str(), wanted.as_str()),
                ("ovn-cluster-join", "other-router", "ovn-cluster")
            );
        }
        other => panic!("{other:?}"),
    }
    // the failed step wrote nothing: no join switch, the foreign port untouched
    assert_eq!(
        common::nbctl(
            &remote,
            &[
                "--bare",
                "--columns=name",
                "find",
                "Logical_Switch",
                "name=join"
            ]
        )
        .trim(),
        ""
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router_Port",
            "ovn-cluster-join",
            "networks"
        ),
        "[\"192.168.0.1/24\"]"
    );
}

#[tokio::test]
async fn with_a_raft_nb_the_start_up_goes_to_the_leader_whatever_the_remote_order() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl", "ovn-nbctl"]) {
        return;
    }
    let cluster = ovn_harness::RaftCluster::start(ovn_harness::Db::Northbound, 3).unwrap();
    let leader = cluster.wait_leader().unwrap();
    // followers first, as OVN_DB_IPS lists nodes in no particular order
    let mut remotes = cluster.remotes();
    let leader_remote = remotes.remove(leader);
    remotes.push(leader_remote);
    let all = remotes.join(",");
    let nb = NbClient::connect(&all).await.unwrap();
    let report = bootstrap(&nb, &config(&all, &[])).await.unwrap();
    assert!(report.ops_written() > 0);
    // every member has the router (written once, through the leader)
    // (a follower outside the commit's majority may apply it a moment later)
    for remote in cluster.remotes() {
        let args = [
            "--no-leader-only",
            "get",
            "Logical_Router",
            "ovn-cluster",
            "external_ids:vendor",
        ];
        let db = format!("--db={remote}");
        let mut vendor = String::new();
        for _ in 0..100 {
            let mut all_args = vec![db.as_str()];
            all_args.extend_from_slice(&args);
            if let Ok(out) = ovn_harness::run("ovn-nbctl", &all_args) {
                vendor = out.trim().trim_matches('"').to_string();
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(vendor, "kube-ovn", "{remote}");
    }
    let again = NbClient::connect(&all).await.unwrap();
    assert_eq!(
        bootstrap(&again, &config(&all, &[]))
            .await
            .unwrap()
            .ops_written(),
        0
    );
}
