//! What `kubectl get` prints: the server's Table columns for built-in kinds
//! (`-o wide` included) and a CRD's `additionalPrinterColumns`, here
//! Kube-OVN's own Subnet CRD.

use super::common::server;
use super::kubectl::setup;

const SUBNET_CRD: &str = include_str!("kube-ovn-subnet-crd.yaml");

const SUBNET: &str = r#"
apiVersion: kubeovn.io/v1
kind: Subnet
metadata:
  name: ovn-default
spec:
  provider: ovn
  vpc: ovn-cluster
  protocol: IPv4
  cidrBlock: 10.16.0.0/16
  natOutgoing: true
  default: true
  gatewayType: distributed
  excludeIps: [10.16.0.1]
"#;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  nodeName: node-1
  containers:
  - name: app
    image: nginx:1
"#;

/// The words of each line of kubectl's table output.
fn words(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// The cells of the first row, cut at the header's column starts (cells
/// may be empty: kubectl prints a CRD column with no value as blank).
fn first_row_cells(out: &str) -> Vec<String> {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or_default();
    let row = lines.next().unwrap_or_default();
    let starts: Vec<usize> = header
        .char_indices()
        .filter(|&(i, c)| c != ' ' && (i == 0 || header.as_bytes()[i - 1] == b' '))
        .map(|(i, _)| i)
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(n, &start)| {
            let end = starts
                .get(n + 1)
                .copied()
                .unwrap_or(row.len())
                .min(row.len());
            row.get(start.min(row.len())..end)
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_prints_the_server_side_columns() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let Some(k) = setup(dir.path(), kubeconfig).await else {
        return;
    };

    k.ok(&["apply", "-f", &k.file("crd.yaml", SUBNET_CRD)])
        .await;
    k.ok(&["apply", "-f", &k.file("subnet.yaml", SUBNET)]).await;
    let status =
        r#"{"status":{"v4usingIPs":3,"v4availableIPs":65530,"v6usingIPs":0,"v6availableIPs":0}}"#;
    k.ok(&[
        "patch",
        "subnet",
        "ovn-default",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ])
    .await;
    let out = k.ok_line("get subnets").await;
    let lines = words(&out);
    assert_eq!(
        lines[0],
        [
            "NAME",
            "PROVIDER",
            "VPC",
            "VLAN",
            "PROTOCOL",
            "CIDR",
            "PRIVATE",
            "NAT",
            "DEFAULT",
            "GATEWAYTYPE",
            "V4USED",
            "V4AVAILABLE",
            "V6USED",
            "V6AVAILABLE",
            "EXCLUDEIPS",
            "U2OINTERCONNECTIONIP"
        ],
        "{out}"
    );
    // Fields the subnet does not have are null cells, which kubectl prints
    // blank (as it does for kube-apiserver's CRD tables).
    assert_eq!(
        first_row_cells(&out),
        [
            "ovn-default",
            "ovn",
            "ovn-cluster",
            "",
            "IPv4",
            "10.16.0.0/16",
            "",
            "true",
            "true",
            "distributed",
            "3",
            "65530",
            "0",
            "0",
            r#"["10.16.0.1"]"#,
            ""
        ],
        "{out}"
    );

    k.ok(&["apply", "-f", &k.file("pod.yaml", POD)]).await;
    let status = r#"{"status":{"phase":"Running","podIP":"10.16.0.5","containerStatuses":[{"name":"app","image":"nginx:1","imageID":"","ready":true,"restartCount":0,"state":{"running":{}}}]}}"#;
    k.ok(&[
        "patch",
        "pod",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        status,
    ])
    .await;
    let out = k.ok_line("get pods -o wide").await;
    let lines = words(&out);
    assert_eq!(
        lines[0],
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED",
            "NODE",
            "READINESS",
            "GATES"
        ],
        "{out}"
    );
    assert_eq!(lines[1][..4], ["web", "1/1", "Running", "0"], "{out}");
    assert_eq!(
        lines[1][5..],
        ["10.16.0.5", "node-1", "<none>", "<none>"],
        "{out}"
    );
    let narrow = words(&k.ok_line("get pods").await);
    assert_eq!(narrow[0], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);

    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"a":"1","b":"2"}}"#;
    k.ok(&["apply", "-f", &k.file("cm.json", cm)]).await;
    let out = k.ok_line("get configmap settings").await;
    let lines = words(&out);
    assert_eq!(lines[0], ["NAME", "DATA", "AGE"], "{out}");
    assert_eq!(lines[1][..2], ["settings", "2"], "{out}");
    server.shutdown().await;
}
