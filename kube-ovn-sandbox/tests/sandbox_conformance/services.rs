//! Services on real traffic: a ClusterIP reached from a pod on each node and
//! balanced over a Deployment's three pods; `sessionAffinity: ClientIP` holding one
//! client to one backend; the backends following pod churn (a pod deleted and
//! replaced, the Deployment scaled down and up) and readiness (pods with a readiness
//! gate, made ready and unready with `kubectl patch --subresource=status`); and a
//! StatefulSet's pod deleted and recreated, on the other node, at its address.

use std::collections::BTreeSet;

use super::sandbox::{
    condition, connect_many, eventually, name, node_of, pod_ip, ready_named, running, Sandbox,
};

pub const NS: &str = "svc";
const GATE: &str = "sandbox.kube-ovn.io/serving";
const IMAGE: &str = "registry.k8s.io/e2e-test-images/agnhost:2.47";

/// The namespace and one client pod on each node (what `up` starts with).
pub fn clients_manifest(node1: &str, node2: &str) -> String {
    let client = |name: &str, node: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{namespace: {NS}, name: {name}, labels: {{app: client}}}}\n\
             spec:\n  nodeName: {node}\n  containers: [{{name: shell, image: {IMAGE}}}]\n"
        )
    };
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n---\n{}---\n{}",
        client("client-1", node1),
        client("client-2", node2)
    )
}

/// A Deployment of three behind two Services (one with ClientIP affinity), two pods
/// with a readiness gate behind a third, and a StatefulSet object (the sandbox has no
/// StatefulSet controller: its pods are made by hand, as that controller names them).
fn workloads_manifest(node1: &str, node2: &str) -> String {
    let gated = |name: &str, node: &str| {
        format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{namespace: {NS}, name: {name}, labels: {{app: gated}}}}\n\
             spec:\n  nodeName: {node}\n  readinessGates: [{{conditionType: {GATE}}}]\n\
             \x20 containers: [{{name: serve, image: {IMAGE}, ports: [{{containerPort: 80}}]}}]\n"
        )
    };
    let service = |name: &str, app: &str, extra: &str| {
        format!(
            "---\napiVersion: v1\nkind: Service\nmetadata: {{namespace: {NS}, name: {name}}}\n\
             spec:\n  selector: {{app: {app}}}\n  ports: [{{port: 80, targetPort: 80}}]\n{extra}"
        )
    };
    let mut out = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{namespace: {NS}, name: web}}\nspec:\n\
         \x20 replicas: 3\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n\
         \x20   metadata: {{labels: {{app: web}}}}\n    spec:\n\
         \x20     containers: [{{name: serve, image: {IMAGE}, ports: [{{containerPort: 80}}]}}]\n"
    );
    out += &service("web", "web", "");
    out += &service("web-sticky", "web", "  sessionAffinity: ClientIP\n");
    out += &service("gated", "gated", "");
    out += &gated("gated-1", node1);
    out += &gated("gated-2", node2);
    out += &format!(
        "---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{namespace: {NS}, name: db}}\nspec:\n\
         \x20 replicas: 2\n  serviceName: db\n  selector: {{matchLabels: {{app: db}}}}\n  template:\n\
         \x20   metadata: {{labels: {{app: db}}}}\n    spec:\n\
         \x20     containers: [{{name: serve, image: {IMAGE}, ports: [{{containerPort: 80}}]}}]\n"
    );
    out
}

fn cluster_ip(sb: &Sandbox, service: &str) -> String {
    let ip = sb.kubectl_ok(&[
        "-n",
        NS,
        "get",
        "service",
        service,
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    assert!(!ip.trim().is_empty(), "{service} has no ClusterIP");
    ip.trim().to_string()
}

/// `count` connections from `client` to `vip:80` until every one is answered and the
/// set of answers is `want` (bounded); the answers of the last try.
fn answered_by(
    sb: &Sandbox,
    client: &str,
    vip: &str,
    count: usize,
    want: &BTreeSet<String>,
) -> Vec<String> {
    let mut last = Vec::new();
    let what = format!("{client} -> {vip}: answers from exactly {want:?}");
    eventually(&what, || {
        last = connect_many(sb, NS, client, vip, 80, count);
        let seen: BTreeSet<String> = last.iter().cloned().collect();
        (seen == *want).then(|| last.clone())
    })
}

pub fn run(sb: &Sandbox) {
    let (n1, n2) = (sb.node(1), sb.node(2));
    let file = sb.write("workloads.yaml", &workloads_manifest(&n1, &n2));
    let out = sb.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let pods = sb.wait_pods(NS, "3 web pods ready", |p| {
        ready_named(p, "web-").len() == 3
    });
    let clients: Vec<(String, String)> = ["client-1", "client-2"]
        .iter()
        .map(|c| {
            let pod = pods.iter().find(|p| name(p) == *c).expect("a client pod");
            (c.to_string(), node_of(pod).to_string())
        })
        .collect();
    assert_eq!(clients[0].1, n1);
    assert_eq!(clients[1].1, n2);
    balanced_and_sticky(sb, &pods);
    churn(sb);
    readiness(sb);
    statefulset_pod_keeps_its_address(sb);
}

/// From each node, 30 connections to the ClusterIP reach more than one backend, each a
/// pod of the Deployment; with ClientIP affinity, 20 reach one.
fn balanced_and_sticky(sb: &Sandbox, pods: &[serde_json::Value]) {
    let backends: BTreeSet<String> = ready_named(pods, "web-").into_iter().collect();
    let (vip, sticky) = (cluster_ip(sb, "web"), cluster_ip(sb, "web-sticky"));
    for client in ["client-1", "client-2"] {
        eventually(&format!("{client} reaches {vip}"), || {
            let got = connect_many(sb, NS, client, &vip, 80, 1);
            got.iter().any(|a| backends.contains(a)).then_some(())
        });
        let answers = connect_many(sb, NS, client, &vip, 80, 30);
        let seen: BTreeSet<&String> = answers.iter().collect();
        assert!(
            answers.iter().all(|a| backends.contains(a)),
            "{client} -> {vip}: {answers:?} (backends {backends:?})"
        );
        assert!(
            seen.len() > 1,
            "{client} -> {vip}: 30 connections, one backend: {answers:?}"
        );
        eprintln!(
            "{client} -> web {vip}: {} backends over 30 connections",
            seen.len()
        );

        eventually(&format!("{client} reaches {sticky}"), || {
            let got = connect_many(sb, NS, client, &sticky, 80, 1);
            got.iter().any(|a| backends.contains(a)).then_some(())
        });
        let answers = connect_many(sb, NS, client, &sticky, 80, 20);
        let seen: BTreeSet<&String> = answers.iter().collect();
        assert!(
            seen.len() == 1 && answers.iter().all(|a| backends.contains(a)),
            "{client} -> {sticky} (ClientIP affinity): {answers:?}"
        );
    }
}

/// A backend deleted: its replacement answers, it does not. Scaled to 1, then 2: the
/// answers follow.
fn churn(sb: &Sandbox) {
    let vip = cluster_ip(sb, "web");
    let before = ready_named(&sb.pods(NS), "web-");
    let victim = before[0].clone();
    sb.kubectl_ok(&["-n", NS, "delete", "pod", &victim]);
    let pods = sb.wait_pods(NS, "a replacement ready", |p| {
        let now = ready_named(p, "web-");
        now.len() == 3 && !now.contains(&victim)
    });
    let now: BTreeSet<String> = ready_named(&pods, "web-").into_iter().collect();
    answered_by(sb, "client-1", &vip, 30, &now);

    sb.kubectl_ok(&["-n", NS, "scale", "deployment", "web", "--replicas=1"]);
    let pods = sb.wait_pods(NS, "one web pod", |p| {
        ready_named(p, "web-").len() == 1
            && p.iter().filter(|p| name(p).starts_with("web-")).count() == 1
    });
    let one: BTreeSet<String> = ready_named(&pods, "web-").into_iter().collect();
    answered_by(sb, "client-2", &vip, 10, &one);

    sb.kubectl_ok(&["-n", NS, "scale", "deployment/web", "--replicas=2"]);
    let pods = sb.wait_pods(NS, "two web pods", |p| ready_named(p, "web-").len() == 2);
    let two: BTreeSet<String> = ready_named(&pods, "web-").into_iter().collect();
    assert!(two.is_superset(&one), "scaling up keeps the pod there was");
    answered_by(sb, "client-1", &vip, 30, &two);
}

fn set_gate(sb: &Sandbox, pod: &str, ready: bool) {
    let patch = format!(
        r#"{{"status":{{"conditions":[{{"type":"{GATE}","status":"{}"}}]}}}}"#,
        if ready { "True" } else { "False" }
    );
    sb.kubectl_ok(&[
        "-n",
        NS,
        "patch",
        "pod",
        pod,
        "--subresource=status",
        "-p",
        &patch,
    ]);
}

/// Pods with a readiness gate run unready until it is True; the Service sends only to
/// the ready ones.
fn readiness(sb: &Sandbox) {
    let pods = sb.pods(NS);
    for gated in ["gated-1", "gated-2"] {
        let pod = pods.iter().find(|p| name(p) == gated).expect("a gated pod");
        assert!(
            running(pod, false),
            "{gated} is unready before its gate: {pod}"
        );
        assert_eq!(condition(pod, "ContainersReady"), Some("True"), "{pod}");
    }
    let vip = cluster_ip(sb, "gated");
    let answers = connect_many(sb, NS, "client-1", &vip, 80, 2);
    assert!(
        answers.iter().all(String::is_empty),
        "no ready backend, yet: {answers:?}"
    );

    set_gate(sb, "gated-1", true);
    set_gate(sb, "gated-2", true);
    sb.wait_pods(NS, "gated pods ready", |p| {
        ready_named(p, "gated-").len() == 2
    });
    let both: BTreeSet<String> = ["gated-1".into(), "gated-2".into()].into();
    answered_by(sb, "client-2", &vip, 30, &both);

    set_gate(sb, "gated-2", false);
    let pods = sb.wait_pods(NS, "gated-2 unready", |p| {
        ready_named(p, "gated-").len() == 1
    });
    let gate_kept = pods
        .iter()
        .find(|p| name(p) == "gated-2")
        .and_then(|p| condition(p, GATE));
    assert_eq!(
        gate_kept,
        Some("False"),
        "the gate's condition stays in the status"
    );
    answered_by(sb, "client-2", &vip, 10, &["gated-1".to_string()].into());

    set_gate(sb, "gated-2", true);
    sb.wait_pods(NS, "gated-2 ready again", |p| {
        ready_named(p, "gated-").len() == 2
    });
    answered_by(sb, "client-1", &vip, 30, &both);
}

fn statefulset_pod(sb: &Sandbox, uid: &str, node: &str) {
    let pod = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  namespace: {NS}\n  name: db-0\n  labels: {{app: db}}\n\
         \x20 ownerReferences: [{{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: {uid}, controller: true}}]\n\
         spec:\n  nodeName: {node}\n  hostname: db-0\n  subdomain: db\n\
         \x20 containers: [{{name: serve, image: {IMAGE}, ports: [{{containerPort: 80}}]}}]\n"
    );
    let file = sb.write("db-0.yaml", &pod);
    sb.kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
}

/// `db-0` of StatefulSet `db`, deleted and made again under its name on the other
/// node, keeps its address and MAC, and answers there.
fn statefulset_pod_keeps_its_address(sb: &Sandbox) {
    let uid = sb.kubectl_ok(&[
        "-n",
        NS,
        "get",
        "statefulset",
        "db",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    statefulset_pod(sb, uid.trim(), &sb.node(1));
    let find = |pods: &[serde_json::Value]| pods.iter().find(|p| name(p) == "db-0").cloned();
    let first = sb.wait_pods(NS, "db-0 running", |p| {
        find(p).is_some_and(|p| running(&p, true))
    });
    let first = find(&first).unwrap();
    let (ip, first_mac) = (pod_ip(&first).to_string(), mac(&first));
    answered_by(sb, "client-2", &ip, 2, &["db-0".to_string()].into());

    sb.kubectl_ok(&["-n", NS, "delete", "pod", "db-0"]);
    assert!(
        find(&sb.pods(NS)).is_none(),
        "db-0 is gone after kubectl delete"
    );
    statefulset_pod(sb, uid.trim(), &sb.node(2));
    let second = sb.wait_pods(NS, "db-0 running again", |p| {
        find(p).is_some_and(|p| running(&p, true))
    });
    let second = find(&second).unwrap();
    assert_ne!(second["metadata"]["uid"], first["metadata"]["uid"]);
    assert_eq!(node_of(&second), sb.node(2));
    assert_eq!(pod_ip(&second), ip, "a StatefulSet pod keeps its address");
    assert_eq!(mac(&second), first_mac, "and its MAC");
    answered_by(sb, "client-1", &ip, 2, &["db-0".to_string()].into());
    eprintln!(
        "db-0 kept {ip} moving from {} to {}",
        sb.node(1),
        sb.node(2)
    );
}

fn mac(pod: &serde_json::Value) -> String {
    pod["metadata"]["annotations"]["ovn.kubernetes.io/mac_address"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}
