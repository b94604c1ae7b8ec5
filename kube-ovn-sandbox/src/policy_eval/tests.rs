//! The upstream NetworkPolicy e2e cases (test/e2e/network/netpol): namespaces
//! x, y, z each with pods a, b, c serving 80 and 81 on TCP, UDP and SCTP
//! (container ports named `serve-80-tcp` ...), labelled `pod=a` and
//! `ns=x`. Each case states the upstream expectation as a predicate over
//! (source, destination) and checks all 81 pairs against the evaluator.

use super::*;
use serde_json::{json, Value};

const NAMESPACES: [&str; 3] = ["x", "y", "z"];
const PODS: [&str; 3] = ["a", "b", "c"];

fn ip(ns: &str, pod: &str) -> IpAddr {
    let n = NAMESPACES.iter().position(|x| *x == ns).unwrap() as u8;
    let p = PODS.iter().position(|x| *x == pod).unwrap() as u8;
    IpAddr::from([10, 16, n, 10 + p])
}

fn pods() -> Vec<PodInfo> {
    let mut out = Vec::new();
    for ns in NAMESPACES {
        for pod in PODS {
            let mut ports = Vec::new();
            for port in [80u16, 81] {
                for (proto, p) in [
                    ("tcp", Protocol::Tcp),
                    ("udp", Protocol::Udp),
                    ("sctp", Protocol::Sctp),
                ] {
                    ports.push(NamedPort {
                        name: format!("serve-{port}-{proto}"),
                        port,
                        protocol: p,
                    });
                }
            }
            out.push(PodInfo {
                namespace: ns.into(),
                name: pod.into(),
                labels: [("pod".to_string(), pod.to_string())].into(),
                ips: vec![ip(ns, pod)],
                ports,
            });
        }
    }
    out
}

fn namespaces() -> BTreeMap<String, Labels> {
    NAMESPACES
        .iter()
        .map(|ns| {
            let labels = [
                ("ns".to_string(), ns.to_string()),
                ("kubernetes.io/metadata.name".to_string(), ns.to_string()),
            ];
            (ns.to_string(), labels.into())
        })
        .collect()
}

fn policy(ns: &str, name: &str, spec: Value) -> NetworkPolicy {
    serde_json::from_value(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"namespace": ns, "name": name},
        "spec": spec,
    }))
    .expect("a NetworkPolicy")
}

fn evaluator(policies: &[NetworkPolicy]) -> Evaluator {
    Evaluator::new(namespaces(), policies).expect("valid policies")
}

/// `ns/pod`
fn id(p: &PodInfo) -> String {
    format!("{}/{}", p.namespace, p.name)
}

/// Checks every pair against `expect(src, dst)`, listing all mismatches.
fn check(eval: &Evaluator, port: u16, proto: Protocol, expect: impl Fn(&str, &str) -> bool) {
    let pods = pods();
    let mut wrong = Vec::new();
    for src in &pods {
        for dst in &pods {
            let (s, d) = (id(src), id(dst));
            let want = s == d || expect(&s, &d);
            let got = eval.allowed(src, dst, port, proto);
            if want != got {
                wrong.push(format!(
                    "{s} -> {d} {port}/{proto}: expected {want}, got {got}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn in_ns(pod: &str, ns: &str) -> bool {
    pod.starts_with(&format!("{ns}/"))
}

#[test]
fn no_policy_allows_everything() {
    let eval = evaluator(&[]);
    for proto in [Protocol::Tcp, Protocol::Udp, Protocol::Sctp] {
        check(&eval, 80, proto, |_, _| true);
    }
}

#[test]
fn default_deny_ingress() {
    let eval = evaluator(&[policy("x", "deny-ingress", json!({"podSelector": {}}))]);
    check(&eval, 80, Protocol::Tcp, |_, d| !in_ns(d, "x"));
    check(&eval, 81, Protocol::Udp, |_, d| !in_ns(d, "x"));
}

#[test]
fn default_deny_all_ingress_and_egress() {
    let spec = json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]});
    let eval = evaluator(&[policy("x", "deny-all", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| {
        !in_ns(s, "x") && !in_ns(d, "x")
    });
}

#[test]
fn default_deny_egress_only() {
    let spec = json!({"podSelector": {}, "policyTypes": ["Egress"]});
    let eval = evaluator(&[policy("x", "deny-egress", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, _| !in_ns(s, "x"));
}

#[test]
fn allow_all_ingress_rule() {
    let deny = policy("x", "deny", json!({"podSelector": {}}));
    let allow = policy(
        "x",
        "allow-all",
        json!({"podSelector": {}, "ingress": [{}]}),
    );
    check(&evaluator(&[deny, allow]), 80, Protocol::Tcp, |_, _| true);
}

#[test]
fn pod_selector_within_the_policy_namespace() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]});
    let eval = evaluator(&[policy("x", "allow-b", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| d != "x/a" || s == "x/b");
}

#[test]
fn pod_selector_match_expressions() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [{"podSelector": {"matchExpressions": [
            {"key": "pod", "operator": "In", "values": ["b"]}]}}]}]});
    let eval = evaluator(&[policy("x", "expr", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| d != "x/a" || s == "x/b");
}

#[test]
fn namespace_selector_only_other_namespaces() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [{"namespaceSelector": {"matchExpressions": [
            {"key": "ns", "operator": "NotIn", "values": ["x"]}]}}]}]});
    let eval = evaluator(&[policy("x", "other-ns", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| {
        d != "x/a" || !in_ns(s, "x")
    });
}

#[test]
fn namespace_selector_match_labels() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}]}]});
    let eval = evaluator(&[policy("x", "from-y", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| d != "x/a" || in_ns(s, "y"));
}

#[test]
fn pod_selector_or_namespace_selector_are_two_peers() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [
            {"namespaceSelector": {"matchExpressions": [
                {"key": "ns", "operator": "NotIn", "values": ["x"]}]}},
            {"podSelector": {"matchLabels": {"pod": "b"}}}]}]});
    let eval = evaluator(&[policy("x", "or", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| {
        d != "x/a" || s == "x/b" || !in_ns(s, "x")
    });
}

#[test]
fn pod_selector_and_namespace_selector_in_one_peer() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [{
            "namespaceSelector": {"matchExpressions": [
                {"key": "ns", "operator": "NotIn", "values": ["x"]}]},
            "podSelector": {"matchExpressions": [
                {"key": "pod", "operator": "In", "values": ["b", "c"]}]}}]}]});
    let eval = evaluator(&[policy("x", "and", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| {
        d != "x/a" || (!in_ns(s, "x") && !s.ends_with("/a"))
    });
}

#[test]
fn ports_restrict_the_rule() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}],
                     "ports": [{"port": 81, "protocol": "TCP"}]}]});
    let eval = evaluator(&[policy("x", "port-81", spec)]);
    check(&eval, 80, Protocol::Tcp, |_, d| d != "x/a");
    check(&eval, 81, Protocol::Tcp, |s, d| d != "x/a" || in_ns(s, "y"));
    check(&eval, 81, Protocol::Udp, |_, d| d != "x/a");
}

#[test]
fn stacked_policies_are_additive() {
    let rule = |port: u16| {
        json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}],
                     "ports": [{"port": port}]}]})
    };
    let eval = evaluator(&[policy("x", "p80", rule(80)), policy("x", "p81", rule(81))]);
    for port in [80, 81] {
        check(&eval, port, Protocol::Tcp, |s, d| {
            d != "x/a" || in_ns(s, "y")
        });
    }
}

#[test]
fn named_ingress_port() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"ports": [{"port": "serve-81-tcp"}]}]});
    let eval = evaluator(&[policy("x", "named", spec)]);
    check(&eval, 81, Protocol::Tcp, |_, _| true);
    check(&eval, 80, Protocol::Tcp, |_, d| d != "x/a");
    // the name is bound to TCP: UDP 81 is not it
    check(&eval, 81, Protocol::Udp, |_, d| d != "x/a");
}

#[test]
fn named_egress_port_resolves_on_the_destination() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"],
        "egress": [{"ports": [{"port": "serve-80-udp", "protocol": "UDP"}]}]});
    let eval = evaluator(&[policy("x", "named-egress", spec)]);
    check(&eval, 80, Protocol::Udp, |_, _| true);
    check(&eval, 81, Protocol::Udp, |s, _| s != "x/a");
    check(&eval, 80, Protocol::Tcp, |s, _| s != "x/a");
}

#[test]
fn egress_to_pod_in_other_namespace() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"],
        "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"ns": "y"}},
                            "podSelector": {"matchLabels": {"pod": "a"}}}]}]});
    let eval = evaluator(&[policy("x", "to-ya", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| s != "x/a" || d == "y/a");
}

#[test]
fn protocol_only_rule_allows_any_port_of_that_protocol() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"ports": [{"protocol": "TCP"}]}]});
    let eval = evaluator(&[policy("x", "tcp-only", spec)]);
    check(&eval, 80, Protocol::Tcp, |_, _| true);
    check(&eval, 81, Protocol::Tcp, |_, _| true);
    check(&eval, 80, Protocol::Udp, |_, d| d != "x/a");
    check(&eval, 80, Protocol::Sctp, |_, d| d != "x/a");
}

#[test]
fn sctp_is_not_tcp() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"ports": [{"port": 80, "protocol": "SCTP"}]}]});
    let eval = evaluator(&[policy("x", "sctp", spec)]);
    check(&eval, 80, Protocol::Sctp, |_, _| true);
    check(&eval, 80, Protocol::Tcp, |_, d| d != "x/a");
}

#[test]
fn client_egress_deny_wins_over_server_ingress_allow() {
    let deny = json!({"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"]});
    let allow = json!({"podSelector": {}, "ingress": [{}]});
    let eval = evaluator(&[policy("x", "deny-a", deny), policy("y", "allow", allow)]);
    check(&eval, 80, Protocol::Tcp, |s, _| s != "x/a");
}

#[test]
fn egress_ip_block_with_except() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Egress"],
        "egress": [{"to": [{"ipBlock": {"cidr": "10.16.1.0/24", "except": ["10.16.1.11/32"]}}]}]});
    let eval = evaluator(&[policy("x", "cidr", spec)]);
    // x/a reaches namespace y (10.16.1.0/24) except y/b
    check(&eval, 80, Protocol::Tcp, |s, d| {
        s != "x/a" || (in_ns(d, "y") && d != "y/b")
    });
}

#[test]
fn end_port_makes_a_range() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "ingress": [{"ports": [{"port": 79, "endPort": 80}]}]});
    let eval = evaluator(&[policy("x", "range", spec)]);
    check(&eval, 80, Protocol::Tcp, |_, _| true);
    check(&eval, 81, Protocol::Tcp, |_, d| d != "x/a");
}

#[test]
fn ingress_and_egress_together() {
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}]}],
        "egress": [{"ports": [{"port": 80}]}]});
    let eval = evaluator(&[policy("x", "both", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| d != "x/a" || in_ns(s, "y"));
    check(&eval, 81, Protocol::Tcp, |s, d| {
        s != "x/a" && (d != "x/a" || in_ns(s, "y"))
    });
}

#[test]
fn egress_section_implies_egress_type() {
    // no policyTypes: Ingress always, Egress because `egress` is present
    let spec = json!({"podSelector": {"matchLabels": {"pod": "a"}}, "ingress": [{}],
        "egress": [{"to": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]});
    let eval = evaluator(&[policy("x", "implied", spec)]);
    check(&eval, 80, Protocol::Tcp, |s, d| s != "x/a" || d == "x/b");
}

#[test]
fn bad_policies_are_named() {
    let cases = [
        (
            json!({"podSelector": {"matchExpressions": [{"key": "k", "operator": "Maybe"}]}}),
            "Maybe",
        ),
        (
            json!({"podSelector": {"matchExpressions": [{"key": "k", "operator": "In"}]}}),
            "needs values",
        ),
        (
            json!({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}),
            "10.0.0.0/33",
        ),
        (
            json!({"podSelector": {}, "egress": [{"ports": [{"protocol": "ICMP"}]}]}),
            "ICMP",
        ),
        (
            json!({"podSelector": {}, "policyTypes": ["Sideways"]}),
            "Sideways",
        ),
    ];
    for (spec, offender) in cases {
        let good = policy("x", "good", json!({"podSelector": {}}));
        let err = Evaluator::new(namespaces(), &[good, policy("y", "bad", spec)]).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("y/bad") && text.contains(offender), "{text}");
    }
}
