//! The truth table's cases and its check: each case's policies are synced, then every
//! ordered pod pair, port and protocol is traced and compared with the evaluator.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube_ovn_controller::network_policy::names::Family;
use kube_ovn_controller::network_policy::sync;
use ovn_nb::{Acl, AddressSet, NbClient, PortGroup};
use serde_json::{json, Value};

use super::eval::{Evaluator, Labels, PodInfo, Protocol};
use super::layout;
use super::trace::{self, Probe};
use super::NO_NODES;

/// The first-half cases: ingress (the rest: egress, adding up, relabel, delete).
pub const FIRST_HALF: usize = 17;

pub fn np(ns: &str, name: &str, spec: Value) -> NetworkPolicy {
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"namespace": ns, "name": name},
        "spec": spec,
    }))
    .expect("a NetworkPolicy")
}

pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[derive(Debug)]
pub struct Case {
    pub name: &'static str,
    pub policies: Vec<NetworkPolicy>,
    pub relabel: BTreeMap<(String, String), Labels>,
}

pub fn case(name: &'static str, policies: Vec<NetworkPolicy>) -> Case {
    Case {
        name,
        policies,
        relabel: BTreeMap::new(),
    }
}

pub fn cases() -> Vec<Case> {
    let pod = |p: &str| json!({"matchLabels": {"pod": p}});
    let ns = |n: &str| json!({"matchLabels": {"ns": n}});
    let relabelled =
        BTreeMap::from([(("x".to_string(), "c".to_string()), labels(&[("pod", "b")]))]);
    vec![
        case("no policy: all open", vec![]),
        case(
            "default deny ingress in x",
            vec![np(
                "x",
                "deny",
                json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
            )],
        ),
        case(
            "updated: default deny egress in x",
            vec![np(
                "x",
                "deny",
                json!({"podSelector": {}, "policyTypes": ["Egress"]}),
            )],
        ),
        case(
            "updated: deny both in x",
            vec![np(
                "x",
                "deny",
                json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
            )],
        ),
        case(
            "allow all ingress in x",
            vec![np(
                "x",
                "allow-all",
                json!({"podSelector": {}, "ingress": [{}]}),
            )],
        ),
        case(
            "x/a from namespace y",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"from": [{"namespaceSelector": ns("y")}]}]}),
            )],
        ),
        case(
            "x/a from pod b",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"from": [{"podSelector": pod("b")}]}]}),
            )],
        ),
        case(
            "x/a from y and pod c (one peer)",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"from": [{"namespaceSelector": ns("y"), "podSelector": pod("c")}]}]}),
            )],
        ),
        case(
            "x/a from y or pod c (two peers)",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"from": [{"namespaceSelector": ns("y")}, {"podSelector": pod("c")}]}]}),
            )],
        ),
        case(
            "x from namespaces NotIn y",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [{"key": "ns", "operator": "NotIn", "values": ["y"]}]}}]}]}),
            )],
        ),
        case(
            "x from ipBlock except z",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.16.0.0/16", "except": ["10.16.3.0/24"]}}]}]}),
            )],
        ),
        case(
            "x from ipBlock except y, or y/b",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.16.0.0/16", "except": ["10.16.2.0/24"]}}, {"namespaceSelector": ns("y"), "podSelector": pod("b")}]}]}),
            )],
        ),
        case(
            "x/a on TCP 80 from anyone",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}]}),
            )],
        ),
        case(
            "x/a on UDP 81 from z",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"from": [{"namespaceSelector": ns("z")}], "ports": [{"port": 81, "protocol": "UDP"}]}]}),
            )],
        ),
        case(
            "x on named port serve-81-tcp",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": {}, "ingress": [{"ports": [{"port": "serve-81-tcp"}]}]}),
            )],
        ),
        case(
            "x/b on named UDP port serve-80-udp from y",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("b"), "ingress": [{"from": [{"namespaceSelector": ns("y")}], "ports": [{"protocol": "UDP", "port": "serve-80-udp"}]}]}),
            )],
        ),
        case(
            "x on TCP 80-81 from any pod b",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": pod("b")}], "ports": [{"port": 80, "endPort": 81}]}]}),
            )],
        ),
        case(
            "x/a egress to namespace y",
            vec![np(
                "x",
                "eg",
                json!({"podSelector": pod("a"), "policyTypes": ["Egress"], "egress": [{"to": [{"namespaceSelector": ns("y")}]}]}),
            )],
        ),
        case(
            "x/a egress to pods b on TCP 80 (implicit types)",
            vec![np(
                "x",
                "eg",
                json!({"podSelector": pod("a"), "egress": [{"to": [{"namespaceSelector": {}, "podSelector": pod("b")}], "ports": [{"port": 80}]}]}),
            )],
        ),
        case(
            "x egress to ipBlock except y",
            vec![np(
                "x",
                "eg",
                json!({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "10.16.0.0/16", "except": ["10.16.2.0/24"]}}]}]}),
            )],
        ),
        case(
            "x egress to named port serve-80-udp",
            vec![np(
                "x",
                "eg",
                json!({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"ports": [{"protocol": "UDP", "port": "serve-80-udp"}]}]}),
            )],
        ),
        case(
            "policies add up on x/a",
            vec![
                np(
                    "x",
                    "p1",
                    json!({"podSelector": pod("a"), "ingress": [{"from": [{"namespaceSelector": ns("y")}]}]}),
                ),
                np(
                    "x",
                    "p2",
                    json!({"podSelector": pod("a"), "ingress": [{"from": [{"namespaceSelector": ns("z")}], "ports": [{"port": 81}]}]}),
                ),
            ],
        ),
        case(
            "y denies egress, x/a allows from y",
            vec![
                np(
                    "y",
                    "deny-egress",
                    json!({"podSelector": {}, "policyTypes": ["Egress"]}),
                ),
                np(
                    "x",
                    "p1",
                    json!({"podSelector": pod("a"), "ingress": [{"from": [{"namespaceSelector": ns("y")}]}]}),
                ),
            ],
        ),
        case(
            "z pods In (a, b) deny ingress",
            vec![np(
                "z",
                "np",
                json!({"podSelector": {"matchExpressions": [{"key": "pod", "operator": "In", "values": ["a", "b"]}]}, "policyTypes": ["Ingress"]}),
            )],
        ),
        case(
            "x/a from x pods b (before relabel)",
            vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"from": [{"podSelector": pod("b")}]}]}),
            )],
        ),
        Case {
            name: "x/c relabelled pod=b",
            policies: vec![np(
                "x",
                "np1",
                json!({"podSelector": pod("a"), "ingress": [{"from": [{"podSelector": pod("b")}]}]}),
            )],
            relabel: relabelled,
        },
        case("deleted: all open", vec![]),
    ]
}

fn probes(pods: &[PodInfo], protocols: &[Protocol]) -> Vec<Probe> {
    let mut probes = Vec::new();
    for src in 0..pods.len() {
        for dst in 0..pods.len() {
            if src == dst {
                continue;
            }
            for port in [80, 81] {
                for &proto in protocols {
                    probes.push(Probe {
                        src,
                        dst,
                        port,
                        proto,
                    });
                }
            }
        }
    }
    probes
}

fn acl_ids(nb: &NbClient) -> BTreeSet<String> {
    nb.store()
        .rows::<Acl>()
        .expect("ACLs")
        .into_iter()
        .map(|a| a.id.uuid().to_string())
        .collect()
}

/// Runs `cases` in order on one layout and asserts ovn-trace agrees with the
/// evaluator on every probe over TCP and UDP, and that the last case leaves no
/// policy rows when it has no policy.
pub async fn check(cases: Vec<Case>) {
    check_protocols(cases, &[Protocol::Tcp, Protocol::Udp]).await;
}

/// [`check`], probing over the given protocols.
pub async fn check_protocols(cases: Vec<Case>, protocols: &[Protocol]) {
    let Some(central) = crate::central() else {
        return;
    };
    let (nb_remote, sb_remote) = (central.nb_remote(), central.sb_remote());
    crate::nbctl(&nb_remote, &["init"]);
    let topology = layout::nbctl_topology();
    let args: Vec<&str> = topology.iter().map(String::as_str).collect();
    crate::nbctl(&nb_remote, &args);
    let nb = NbClient::connect(&nb_remote).await.expect("NB");
    let ns_labels = layout::namespace_labels();
    let namespaces = layout::namespace_objects(&ns_labels);
    let mut mismatches = Vec::new();
    let mut previous_acls = BTreeSet::new();
    let last_empty = cases.last().is_some_and(|c| c.policies.is_empty());
    for case in cases {
        let pods = layout::eval_pods(&case.relabel);
        let pod_objects: Vec<_> = pods.iter().map(layout::pod_object).collect();
        let report = sync(
            &nb,
            &case.policies,
            &pod_objects,
            &namespaces,
            NO_NODES,
            &[Family::V4],
        )
        .await
        .expect("a pass");
        assert!(
            report.invalid.is_empty() && report.unresolved.is_empty(),
            "{}: {report:?}",
            case.name
        );
        let again = sync(
            &nb,
            &case.policies,
            &pod_objects,
            &namespaces,
            NO_NODES,
            &[Family::V4],
        )
        .await
        .expect("a pass");
        assert_eq!(
            (again.policy_ops, again.member_ops),
            (0, 0),
            "{}: a second pass writes nothing",
            case.name
        );
        let acls = acl_ids(&nb);
        if !case.relabel.is_empty() {
            // a relabelled pod moves between address sets; the ACLs stay as they were
            assert_eq!(
                report.policy_ops, 0,
                "{}: the policy level wrote",
                case.name
            );
            assert!(
                report.member_ops > 0,
                "{}: the relabel changed no address set",
                case.name
            );
            assert_eq!(acls, previous_acls, "{}: ACL rows changed", case.name);
        }
        previous_acls = acls;
        crate::nbctl(&nb_remote, &["--wait=sb", "sync"]);
        let probes = probes(&pods, protocols);
        let traced = trace::run(&sb_remote, &pods, &probes, 4);
        let evaluator = Evaluator::new(ns_labels.clone(), &case.policies)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        for (p, delivered) in probes.iter().zip(traced) {
            let (src, dst) = (&pods[p.src], &pods[p.dst]);
            let expected = evaluator.allowed(src, dst, p.port, p.proto);
            if expected != delivered {
                mismatches.push(format!(
                    "{:<48} {}/{} -> {}/{} {}/{}: expected {}, ovn-trace {}",
                    case.name,
                    src.namespace,
                    src.name,
                    dst.namespace,
                    dst.name,
                    p.proto,
                    p.port,
                    if expected { "allowed" } else { "dropped" },
                    if delivered { "delivered" } else { "dropped" },
                ));
            }
        }
    }
    let last_is_empty = last_empty;
    let groups = nb.store().rows::<PortGroup>().expect("port groups");
    let sets = nb.store().rows::<AddressSet>().expect("address sets");
    assert!(
        !last_is_empty || (groups.is_empty() && sets.is_empty()),
        "deleted policies left rows: {groups:?} {sets:?}"
    );
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
