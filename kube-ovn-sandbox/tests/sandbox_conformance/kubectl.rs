//! kubectl as a person types it against the sandbox: `run` (a bare pod without
//! ports), `create deployment --replicas --port`, `get pods -o wide` (its IP and NODE
//! columns), `exec`, `logs`, `apply -f` of a file, `scale`, `delete` (by name and
//! with `-f`), `get nodes`.

use std::collections::BTreeSet;

use super::sandbox::{connect_many, eventually, name, node_of, pod_ip, ready_named, Sandbox};

const NS: &str = "ppl";
const IMAGE: &str = "registry.k8s.io/e2e-test-images/agnhost:2.47";

/// `kubectl get pods -o wide`, as (NAME, READY, STATUS, IP, NODE) of each row, with
/// the columns found by the header.
fn wide_rows(sb: &Sandbox) -> Vec<[String; 5]> {
    let out = sb.kubectl_ok(&["-n", NS, "get", "pods", "-o", "wide"]);
    let mut lines = out.lines();
    let header = lines.next().unwrap_or_default();
    let columns: Vec<&str> = header.split_whitespace().collect();
    // "NOMINATED NODE" and "READINESS GATES" are two words each: only the leading
    // columns are found by position
    let at = |col: &str| {
        columns
            .iter()
            .position(|c| *c == col)
            .unwrap_or_else(|| panic!("no {col} column in {header:?}"))
    };
    let wanted = [at("NAME"), at("READY"), at("STATUS"), at("IP"), at("NODE")];
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            wanted.map(|i| cells.get(i).copied().unwrap_or_default().to_string())
        })
        .collect()
}

pub fn run(sb: &Sandbox) {
    sb.kubectl_ok(&["create", "namespace", NS]);
    let out = sb.kubectl_ok(&["-n", NS, "run", "solo", &format!("--image={IMAGE}")]);
    assert_eq!(out.trim(), "pod/solo created");
    let out = sb.kubectl_ok(&[
        "-n",
        NS,
        "create",
        "deployment",
        "hello",
        &format!("--image={IMAGE}"),
        "--replicas=2",
        "--port=80",
    ]);
    assert_eq!(out.trim(), "deployment.apps/hello created");
    let pods = sb.wait_pods(NS, "solo and 2 hello pods ready", |p| {
        ready_named(p, "hello-").len() == 2 && ready_named(p, "solo").len() == 1
    });
    let solo = pods.iter().find(|p| name(p) == "solo").unwrap();
    assert_eq!(solo["metadata"]["labels"]["run"], "solo", "{solo}");

    // -o wide: every pod's IP and NODE as its object says
    let rows = wide_rows(sb);
    assert_eq!(rows.len(), 3, "{rows:?}");
    for pod in &pods {
        let row = rows
            .iter()
            .find(|r| r[0] == name(pod))
            .unwrap_or_else(|| panic!("no row for {}: {rows:?}", name(pod)));
        assert_eq!(row[1], "1/1", "{row:?}");
        assert_eq!(row[2], "Running", "{row:?}");
        assert_eq!(row[3], pod_ip(pod), "{row:?}");
        assert_eq!(row[4], node_of(pod), "{row:?}");
    }

    // exec sees the pod's address; a hello pod answers solo, and its log says so
    let solo_ip = pod_ip(solo).to_string();
    let addr = sb.kubectl_ok(&[
        "-n", NS, "exec", "solo", "--", "ip", "-4", "-o", "addr", "show", "eth0",
    ]);
    assert!(addr.contains(&format!("{solo_ip}/")), "{addr}");
    let hello: Vec<&serde_json::Value> = pods
        .iter()
        .filter(|p| name(p).starts_with("hello-"))
        .collect();
    for pod in &hello {
        let answers = connect_many(sb, NS, "solo", pod_ip(pod), 80, 1);
        assert_eq!(answers, [name(pod)], "solo -> {}", name(pod));
        let log = sb.kubectl_ok(&["-n", NS, "logs", name(pod)]);
        assert!(log.contains(&format!("tcp/80 from {solo_ip}:")), "{log}");
    }

    // a Service from a file: apply -f, reached through its ClusterIP
    let svc = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: hello, namespace: {NS}}}\n\
         spec:\n  selector: {{app: hello}}\n  ports: [{{port: 8080, targetPort: 80}}]\n"
    );
    let file = sb.write("hello-service.yaml", &svc);
    let out = sb.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    assert_eq!(out.trim(), "service/hello created");
    let vip = sb.kubectl_ok(&[
        "-n",
        NS,
        "get",
        "svc",
        "hello",
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    let names: BTreeSet<String> = hello.iter().map(|p| name(p).to_string()).collect();
    eventually("solo reaches the hello Service", || {
        let answers = connect_many(sb, NS, "solo", vip.trim(), 8080, 1);
        answers.iter().all(|a| names.contains(a)).then_some(())
    });
    let out = sb.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    assert_eq!(out.trim(), "service/hello unchanged");

    let out = sb.kubectl_ok(&["-n", NS, "scale", "deployment", "hello", "--replicas=3"]);
    assert_eq!(out.trim(), "deployment.apps/hello scaled");
    sb.wait_pods(NS, "3 hello pods", |p| ready_named(p, "hello-").len() == 3);

    let nodes = sb.kubectl_ok(&["get", "nodes"]);
    for node in [sb.node(1), sb.node(2)] {
        assert!(
            nodes
                .lines()
                .any(|l| l.starts_with(&node) && l.contains(" Ready ")),
            "{node} Ready in:\n{nodes}"
        );
    }

    let out = sb.kubectl_ok(&["delete", "-f", file.to_str().unwrap()]);
    assert_eq!(out.trim(), "service \"hello\" deleted");
    sb.kubectl_ok(&["-n", NS, "delete", "deployment", "hello"]);
    sb.kubectl_ok(&["-n", NS, "delete", "pod", "solo"]);
    sb.wait_pods(NS, "every pod gone", |p| p.is_empty());
    let out = sb.kubectl(&["-n", NS, "get", "pods"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("No resources found in ppl namespace."),
        "{}",
        super::sandbox::text(&out)
    );
}
