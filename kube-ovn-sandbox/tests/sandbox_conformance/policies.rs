//! NetworkPolicy conformance on real traffic: the sig-network e2e layout
//! (namespaces x, y, z labelled `ns=<name>`; pods a, b, c labelled `pod=<name>`, each
//! serving 80 and 81 over TCP and UDP) in a 2-node sandbox, and the truth table's
//! cases (`netpol/table.rs`, shared with the `ovn-trace` tests) run in order as a
//! person would: `kubectl apply -f` of each case's policies (a policy of the same
//! name is an update), `kubectl delete` of the previous case's others, `kubectl
//! label` for a relabel, then `kube-ovn-sandbox matrix --json` over x, y and z. The
//! matrix compares every probe with the sandbox's evaluator on the pods it reads from
//! the cluster; here its expectations are also checked against the same evaluator on
//! the table's layout, which catches a matrix that read the pods wrong.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use kube_ovn_sandbox::matrix::MatrixReport;
use serde_json::{json, Value};

use super::sandbox::{text, Sandbox};
use crate::netpol::eval::{Evaluator, Labels, Protocol};
use crate::netpol::layout;
use crate::netpol::table::Case;

/// The layout as YAML documents (JSON is YAML): namespaces, then pods at the
/// layout's addresses (`ovn.kubernetes.io/ip_address`), so the ipBlock cases'
/// CIDRs mean what they mean in the table.
pub fn layout_manifest() -> String {
    let mut docs = Vec::new();
    for (ns, labels) in layout::namespace_labels() {
        docs.push(json!({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": ns, "labels": labels}}));
    }
    let ports: Vec<Value> = layout::container_ports()
        .into_iter()
        .map(|p| json!({"name": p.name, "protocol": p.protocol.to_string(), "containerPort": p.port}))
        .collect();
    for pod in layout::eval_pods(&BTreeMap::new()) {
        docs.push(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": pod.namespace, "name": pod.name, "labels": pod.labels,
                         "annotations": {"ovn.kubernetes.io/ip_address": layout::ip4(&pod).to_string()}},
            "spec": {"containers": [{"name": "serve",
                     "image": "registry.k8s.io/e2e-test-images/agnhost:2.47",
                     "args": ["serve-hostname", "--tcp", "--udp", "--port", "80"],
                     "ports": ports}]},
        }));
    }
    docs.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Every layout pod runs at its address, and the pods are on both nodes.
pub fn check_layout(sb: &Sandbox) {
    let mut nodes = BTreeSet::new();
    for ns in layout::NAMESPACES {
        let pods = sb.pods(ns);
        assert_eq!(pods.len(), layout::PODS.len(), "{ns}: {pods:?}");
        for pod in &pods {
            let name = super::sandbox::name(pod);
            assert_eq!(pod["status"]["phase"], "Running", "{pod}");
            assert_eq!(
                super::sandbox::pod_ip(pod),
                layout::pod_ip(ns, name).to_string(),
                "{ns}/{name}"
            );
            nodes.insert(super::sandbox::node_of(pod).to_string());
        }
    }
    assert_eq!(
        nodes.len(),
        2,
        "the pods are spread over both nodes: {nodes:?}"
    );
}

/// What the cluster has now, to move it to the next case with the fewest commands.
#[derive(Default)]
struct Applied {
    /// `(namespace, name)` of the policies in the cluster.
    policies: BTreeSet<(String, String)>,
    /// Pods whose labels differ from the layout's, with their labels.
    relabelled: BTreeMap<(String, String), Labels>,
}

fn policy_key(np: &k8s_openapi::api::networking::v1::NetworkPolicy) -> (String, String) {
    (
        np.metadata.namespace.clone().unwrap_or_default(),
        np.metadata.name.clone().unwrap_or_default(),
    )
}

/// Moves the cluster to `case`: relabels, `kubectl apply -f` of its policies (one
/// file), `kubectl delete` of the policies it no longer has.
fn move_to(sb: &Sandbox, index: usize, case: &Case, applied: &mut Applied) {
    for pod in layout::eval_pods(&case.relabel) {
        let key = (pod.namespace.clone(), pod.name.clone());
        let now = applied.relabelled.get(&key).cloned().unwrap_or_else(|| {
            // the layout's own labels
            Labels::from([("pod".to_string(), pod.name.clone())])
        });
        if now == pod.labels {
            continue;
        }
        let mut args = vec!["-n".to_string(), pod.namespace.clone(), "label".into()];
        args.extend(["pod".into(), pod.name.clone(), "--overwrite".into()]);
        args.extend(pod.labels.iter().map(|(k, v)| format!("{k}={v}")));
        args.extend(
            now.keys()
                .filter(|k| !pod.labels.contains_key(*k))
                .map(|k| format!("{k}-")),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        sb.kubectl_ok(&args);
        if case.relabel.contains_key(&key) {
            applied.relabelled.insert(key, pod.labels.clone());
        } else {
            applied.relabelled.remove(&key);
        }
    }
    if !case.policies.is_empty() {
        // one YAML document per policy (kubectl validates a `List` against
        // /openapi/v2, which the embedded API server does not serve)
        let yaml = serde_saphyr::to_string_multiple(&case.policies).expect("policies as YAML");
        let file = sb.write(&format!("case-{index:02}.yaml"), &yaml);
        sb.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    }
    let wanted: BTreeSet<_> = case.policies.iter().map(policy_key).collect();
    for (ns, name) in applied.policies.difference(&wanted) {
        sb.kubectl_ok(&["-n", ns, "delete", "networkpolicy", name]);
    }
    applied.policies = wanted;
}

/// `matrix --json --namespaces x,y,z`, read back (it exits 1 on a mismatch: the
/// report says which).
fn matrix(sb: &Sandbox) -> (MatrixReport, Value) {
    let out = sb.sandbox(&["matrix", "--json", "--namespaces", "x,y,z"]);
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("matrix --json printed no report ({e}): {}", text(&out)));
    let report: MatrixReport = serde_json::from_value(json.clone()).expect("a matrix report");
    (report, json)
}

/// What is wrong with one case's report, if anything.
fn judge(case: &Case, report: &MatrixReport, json: &Value) -> Vec<String> {
    let mut wrong = Vec::new();
    let per_pair = 2 * 2;
    let pods = layout::NAMESPACES.len() * layout::PODS.len();
    if report.probes.len() != pods * pods * per_pair {
        wrong.push(format!(
            "{} probes, not {} (left out: {})",
            report.probes.len(),
            pods * pods * per_pair,
            json["left_out"]
        ));
    }
    if !report.mismatches().is_empty() {
        wrong.push(format!(
            "datapath and evaluator disagree:\n{}",
            report.render()
        ));
    }
    // the matrix read the pods as the layout has them: the evaluator on the layout's
    // pods expects what the matrix expected
    let pods = layout::eval_pods(&case.relabel);
    let evaluator = Evaluator::new(layout::namespace_labels(), &case.policies)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let find = |id: &str| {
        pods.iter()
            .find(|p| format!("{}/{}", p.namespace, p.name) == id)
    };
    for p in &report.probes {
        let (Some(src), Some(dst)) = (find(&p.source), find(&p.destination)) else {
            wrong.push(format!(
                "{} -> {}: not a layout pod",
                p.source, p.destination
            ));
            continue;
        };
        let protocol = Protocol::parse(&p.protocol).expect("a protocol");
        let layout = evaluator.allowed(src, dst, p.port, protocol);
        if layout != p.expected {
            wrong.push(format!(
                "{} -> {} {}/{}: the matrix expected {}, the evaluator on the layout says {}",
                p.source, p.destination, p.port, p.protocol, p.expected, layout
            ));
        }
    }
    wrong
}

/// Runs every case in order; all failures are collected and reported together.
pub fn run_cases(sb: &Sandbox, cases: &[Case]) {
    let mut applied = Applied::default();
    let mut failures = Vec::new();
    let all = Instant::now();
    for (i, case) in cases.iter().enumerate() {
        let start = Instant::now();
        move_to(sb, i, case, &mut applied);
        let applied_in = start.elapsed();
        let (report, json) = matrix(sb);
        let denied = report.probes.iter().filter(|p| !p.expected).count();
        let again = report.probes.iter().filter(|p| p.attempts > 1).count();
        eprintln!(
            "case {i:2} {:<48} {} probes, {denied:3} denied, {again:2} probed again, applied in {:.1} s, matrix {:.1} s",
            case.name,
            report.probes.len(),
            applied_in.as_secs_f64(),
            (start.elapsed() - applied_in).as_secs_f64()
        );
        let wrong = judge(case, &report, &json);
        if !wrong.is_empty() && failures.is_empty() {
            // what the sandbox looked like at the first failure
            let status = sb.sandbox(&["status"]);
            failures.push(format!("status at case {i}:\n{}", text(&status)));
            failures.extend(sb.datapath_emergencies());
        }
        for why in wrong {
            failures.push(format!("case {i} ({}): {why}", case.name));
        }
    }
    eprintln!(
        "{} cases in {:.1} s",
        cases.len(),
        all.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
