//! NetworkPolicy ports over SCTP, the third protocol of networking.k8s.io/v1: the
//! ACLs match `sctp.dst` (by number, range and named port), and the truth table
//! layout (`netpol/`) probed over TCP, UDP and SCTP agrees with the evaluator, so an
//! SCTP rule opens SCTP only and a TCP rule never opens SCTP.

use kube_ovn_test_support as common;
use kube_ovn_test_support::netpol;

use std::collections::BTreeSet;

use kube_ovn_controller::network_policy::names::Family;
use kube_ovn_controller::network_policy::sync;
use netpol::table::{case, check_protocols, np};
use netpol::NO_NODES;
use ovn_nb::{Acl, NbClient};
use serde_json::json;

fn pod(p: &str) -> serde_json::Value {
    json!({"matchLabels": {"pod": p}})
}

fn ns(n: &str) -> serde_json::Value {
    json!({"matchLabels": {"ns": n}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sctp_ports_render_as_sctp_matches() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    let nb = NbClient::connect(&remote).await.expect("NB");
    let pods = netpol::layout::eval_pods(&Default::default());
    let pod_objects: Vec<_> = pods.iter().map(netpol::layout::pod_object).collect();
    let namespaces = netpol::layout::namespace_objects(&netpol::layout::namespace_labels());
    let policy = np(
        "x",
        "sctp",
        json!({"podSelector": {}, "ingress": [{"ports": [
            {"protocol": "SCTP", "port": 80},
            {"protocol": "SCTP", "port": 81, "endPort": 90},
            {"protocol": "SCTP", "port": "serve-81-sctp"}]}]}),
    );
    let report = sync(
        &nb,
        &[policy],
        &pod_objects,
        &namespaces,
        NO_NODES,
        &[Family::V4],
    )
    .await
    .expect("a pass");
    assert!(
        report.invalid.is_empty() && report.unresolved.is_empty(),
        "{report:?}"
    );
    let matches: BTreeSet<String> = nb
        .store()
        .rows::<Acl>()
        .expect("ACLs")
        .into_iter()
        .map(|a| a.row.r#match)
        .collect();
    for wanted in [
        "sctp.dst == 80",
        "sctp.dst >= 81 && sctp.dst <= 90",
        "sctp.dst == 81",
    ] {
        assert!(
            matches.iter().any(|m| m.ends_with(&format!("&& {wanted}"))),
            "no ACL ends with {wanted:?}: {matches:#?}"
        );
    }
    assert!(
        !matches
            .iter()
            .any(|m| m.contains("tcp") || m.contains("udp")),
        "an SCTP-only policy matched another protocol: {matches:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sctp_truth_table_matches_ovn_trace() {
    let cases = vec![
        case("no policy: SCTP open", vec![]),
        case(
            "x/a on SCTP 80 from anyone",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"ports": [{"port": 80, "protocol": "SCTP"}]}]}),
            )],
        ),
        case(
            "updated: x/a on TCP 80 only (SCTP closed)",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"ports": [{"port": 80}]}]}),
            )],
        ),
        case(
            "x/b on named SCTP port serve-81-sctp from y",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("b"), "ingress": [{"from": [{"namespaceSelector": ns("y")}], "ports": [{"protocol": "SCTP", "port": "serve-81-sctp"}]}]}),
            )],
        ),
        case(
            "x on SCTP 80-81 (endPort) from any pod c",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": pod("c")}], "ports": [{"protocol": "SCTP", "port": 80, "endPort": 81}]}]}),
            )],
        ),
        case(
            "x/a egress to y on SCTP 81",
            vec![np(
                "x",
                "eg",
                json!({"podSelector": pod("a"), "policyTypes": ["Egress"], "egress": [{"to": [{"namespaceSelector": ns("y")}], "ports": [{"protocol": "SCTP", "port": 81}]}]}),
            )],
        ),
        case("deleted: all open", vec![]),
    ];
    check_protocols(cases, &netpol::layout::PROTOCOLS).await;
}
