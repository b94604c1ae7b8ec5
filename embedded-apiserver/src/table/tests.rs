//! Table cells for objects with known content.

use super::*;
use crate::registry::Registry;

fn rt(kind_plural: (&str, &str, &str)) -> ResourceType {
    Registry::builtin()
        .find(kind_plural.0, kind_plural.1, kind_plural.2)
        .cloned()
        .unwrap()
}

#[test]
fn ages_read_as_kubectl_prints_them() {
    let cases = [
        (59, "59s"),
        (119, "119s"),
        (330, "5m30s"),
        (600, "10m"),
        (3 * 3600 + 20 * 60, "3h20m"),
        (20 * 3600, "20h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (2 * 86400, "2d"),
        (40 * 86400, "40d"),
        (2 * 365 * 86400 + 30 * 86400, "2y30d"),
        (9 * 365 * 86400, "9y"),
    ];
    for (seconds, want) in cases {
        assert_eq!(human_age(seconds), want, "{seconds}s");
    }
}

#[test]
fn accept_header_asks_for_a_table() {
    assert!(wants_table(
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
    ));
    assert!(!wants_table("application/json"));
    assert!(!wants_table(
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    ));
}

#[test]
fn a_running_pod_row() {
    let pods = rt(("", "v1", "pods"));
    let five_minutes_ago =
        (jiff::Timestamp::now() - jiff::SignedDuration::from_secs(330)).to_string();
    let pod = json!({
        "metadata": {"name": "web", "creationTimestamp": five_minutes_ago},
        "spec": {"nodeName": "node-1", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "podIP": "10.16.0.5", "containerStatuses": [
            {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
            {"name": "b", "ready": false, "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
        ]}
    });
    let cells = cells(&pods, &pod);
    let columns = columns(&pods);
    let names: Vec<&str> = columns
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(
        cells[..4],
        [
            json!("web"),
            json!("1/2"),
            json!("CrashLoopBackOff"),
            json!("2")
        ]
    );
    assert!(cells[4].as_str().unwrap().starts_with("5m"), "{}", cells[4]);
    assert_eq!(
        cells[5..],
        [
            json!("10.16.0.5"),
            json!("node-1"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn crd_columns_follow_json_paths() {
    let crd = json!({"spec": {"group": "kubeovn.io", "scope": "Cluster",
    "names": {"plural": "subnets", "kind": "Subnet"},
    "versions": [{"name": "v1", "served": true, "additionalPrinterColumns": [
        {"name": "CIDR", "type": "string", "jsonPath": ".spec.cidrBlock"},
        {"name": "V4Used", "type": "number", "jsonPath": ".status.v4usingIPs"},
        {"name": "ExcludeIPs", "type": "string", "jsonPath": ".spec.excludeIps"},
        {"name": "Wide", "type": "string", "jsonPath": ".spec.vpc", "priority": 1}
    ]}]}});
    let subnet = ResourceType::from_crd(&crd).remove(0);
    let object = json!({"metadata": {"name": "net1"},
        "spec": {"cidrBlock": "10.0.0.0/24", "excludeIps": ["10.0.0.1", "10.0.0.2"]},
        "status": {"v4usingIPs": 3}});
    assert_eq!(
        cells(&subnet, &object),
        [
            json!("net1"),
            json!("10.0.0.0/24"),
            json!(3),
            json!(r#"["10.0.0.1","10.0.0.2"]"#),
            Value::Null
        ]
    );
    assert_eq!(columns(&subnet)[4]["priority"], 1);
}
