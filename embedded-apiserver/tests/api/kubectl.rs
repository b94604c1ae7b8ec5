//! kubectl against the embedded server through a generated kubeconfig:
//! client-side and server-side apply, a CRD and its objects, get -o yaml,
//! get -w, label, annotate, patch (merge/json/strategic), delete, and bad
//! input answered with `Status` errors.

use super::common::{server, within};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

/// kubectl on PATH; missing is a failure under CI=true, a notice otherwise.
fn kubectl_path() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("kubectl"))
                .find(|c| c.is_file())
        })
        .unwrap_or(None);
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "kubectl is required under CI=true"
        );
        eprintln!("kubectl not found on PATH: kubectl tests not run");
    }
    found
}

struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    dir: PathBuf,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        // Keep kubectl's discovery cache inside the test's temp dir.
        cmd.env("HOME", &self.dir)
            .env("KUBECACHEDIR", self.dir.join("cache"));
        cmd
    }

    async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.command(args).output().await.expect("kubectl runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.success(), stdout, stderr)
    }

    async fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed: {stderr}");
        stdout
    }

    async fn fails(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(!ok, "kubectl {args:?} should fail, printed {stdout}");
        stderr
    }

    fn file(&self, name: &str, content: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, content).unwrap();
        path.display().to_string()
    }
}

const WORKLOAD: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: demo
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: demo
  labels: {app: web}
spec:
  containers:
  - name: app
    image: nginx:1
    ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: demo
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-all
  namespace: demo
spec:
  podSelector: {}
  policyTypes: [Ingress]
"#;

/// Shaped like Kube-OVN's `subnets.kubeovn.io` (cluster-scoped, status
/// subresource), trimmed to the fields used here.
const SUBNET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: subnets.kubeovn.io
spec:
  group: kubeovn.io
  scope: Cluster
  names: {plural: subnets, singular: subnet, kind: Subnet, shortNames: [subnet], listKind: SubnetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

const SUBNET: &str = r#"
apiVersion: kubeovn.io/v1
kind: Subnet
metadata:
  name: ovn-default
spec:
  cidrBlock: 10.16.0.0/16
  gateway: 10.16.0.1
  protocol: IPv4
  excludeIps: [10.16.0.1]
"#;

async fn setup(dir: &Path, kubeconfig: PathBuf) -> Option<Kubectl> {
    Some(Kubectl {
        bin: kubectl_path()?,
        kubeconfig,
        dir: dir.to_path_buf(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_get_patch_delete() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let Some(k) = setup(dir.path(), kubeconfig).await else {
        return;
    };

    let workload = k.file("workload.yaml", WORKLOAD);
    let out = k.ok(&["apply", "-f", &workload]).await;
    for line in [
        "namespace/demo created",
        "pod/web created",
        "service/web created",
        "networkpolicy.networking.k8s.io/deny-all created",
    ] {
        assert!(out.contains(line), "missing {line:?} in {out}");
    }
    let again = k.ok(&["apply", "-f", &workload]).await;
    assert!(again.contains("pod/web unchanged"), "{again}");
    let changed = k.file(
        "workload2.yaml",
        &WORKLOAD.replace("image: nginx:1", "image: nginx:2"),
    );
    let out = k.ok(&["apply", "-f", &changed]).await;
    assert!(out.contains("pod/web configured"), "{out}");
    let image = k
        .ok(&[
            "get",
            "pod",
            "web",
            "-n",
            "demo",
            "-o",
            "jsonpath={.spec.containers[0].image}",
        ])
        .await;
    assert_eq!(image, "nginx:2");

    let yaml = k
        .ok(&["get", "service", "web", "-n", "demo", "-o", "yaml"])
        .await;
    assert!(
        yaml.contains("kind: Service") && yaml.contains("name: web"),
        "{yaml}"
    );

    // Server-side apply, then a conflicting one from another manager.
    let cm = k.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: demo}\ndata: {k: v1}\n",
    );
    let out = k.ok(&["apply", "--server-side", "-f", &cm]).await;
    assert!(out.contains("configmap/ssa serverside-applied"), "{out}");
    let cm2 = k.file(
        "cm2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: demo}\ndata: {k: v2}\n",
    );
    let err = k
        .fails(&[
            "apply",
            "--server-side",
            "--field-manager=other",
            "-f",
            &cm2,
        ])
        .await;
    assert!(err.contains("conflict"), "{err}");
    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        &cm2,
    ])
    .await;
    let managed = k
        .ok(&[
            "get",
            "cm",
            "ssa",
            "-n",
            "demo",
            "-o",
            "yaml",
            "--show-managed-fields",
        ])
        .await;
    assert!(managed.contains("manager: other"), "{managed}");

    // The CRD, then its objects (a new kind kubectl discovers).
    let crd = k.file("crd.yaml", SUBNET_CRD);
    assert!(k.ok(&["apply", "-f", &crd]).await.contains("created"));
    let subnet = k.file("subnet.yaml", SUBNET);
    let out = k.ok(&["apply", "-f", &subnet]).await;
    assert!(
        out.contains("subnet.kubeovn.io/ovn-default created"),
        "{out}"
    );
    let cidr = k
        .ok(&[
            "get",
            "subnet",
            "ovn-default",
            "-o",
            "jsonpath={.spec.cidrBlock}",
        ])
        .await;
    assert_eq!(cidr, "10.16.0.0/16");
    k.ok(&[
        "patch",
        "subnet",
        "ovn-default",
        "--type=merge",
        "-p",
        r#"{"spec":{"gateway":"10.16.0.254"}}"#,
    ])
    .await;
    let err = k
        .fails(&[
            "patch",
            "subnet",
            "ovn-default",
            "--type=strategic",
            "-p",
            r#"{"spec":{"gateway":"x"}}"#,
        ])
        .await;
    assert!(
        err.contains("UnsupportedMediaType")
            || err.contains("unknown format")
            || err.contains("strategic"),
        "{err}"
    );

    label_annotate_patch(&k).await;
    bad_input(&k).await;

    for (kind, name) in [
        ("pod", "web"),
        ("service", "web"),
        ("networkpolicy", "deny-all"),
    ] {
        k.ok(&["delete", kind, name, "-n", "demo"]).await;
        let err = k.fails(&["get", kind, name, "-n", "demo"]).await;
        assert!(err.contains("NotFound"), "{err}");
    }
    k.ok(&["delete", "subnet", "ovn-default"]).await;
    server.shutdown().await;
}

async fn label_annotate_patch(k: &Kubectl) {
    k.ok(&["label", "pod", "web", "-n", "demo", "tier=front"])
        .await;
    k.ok(&["annotate", "pod", "web", "-n", "demo", "note=hello"])
        .await;
    k.ok(&[
        "patch",
        "pod",
        "web",
        "-n",
        "demo",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"m":"1"}}}"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "pod",
        "web",
        "-n",
        "demo",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/metadata/labels/j","value":"2"}]"#,
    ])
    .await;
    k.ok(&[
        "patch",
        "pod",
        "web",
        "-n",
        "demo",
        "--type=strategic",
        "-p",
        r#"{"spec":{"containers":[{"name":"app","env":[{"name":"E","value":"3"}]}]}}"#,
    ])
    .await;
    let labels = k
        .ok(&[
            "get",
            "pod",
            "web",
            "-n",
            "demo",
            "-o",
            "jsonpath={.metadata.labels}",
        ])
        .await;
    for l in [
        "\"tier\":\"front\"",
        "\"m\":\"1\"",
        "\"j\":\"2\"",
        "\"app\":\"web\"",
    ] {
        assert!(labels.contains(l), "{l} missing from {labels}");
    }
    let note = k
        .ok(&[
            "get",
            "pod",
            "web",
            "-n",
            "demo",
            "-o",
            "jsonpath={.metadata.annotations.note}",
        ])
        .await;
    assert_eq!(note, "hello");
    let containers = k
        .ok(&[
            "get",
            "pod",
            "web",
            "-n",
            "demo",
            "-o",
            "jsonpath={.spec.containers[*].name}/{.spec.containers[0].env[0].name}",
        ])
        .await;
    assert_eq!(containers, "app/E");
    let listed = k
        .ok(&[
            "get",
            "pods",
            "-n",
            "demo",
            "-l",
            "tier in (front,back),m",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(listed.trim(), "pod/web");
}

async fn bad_input(k: &Kubectl) {
    let before = k
        .ok(&[
            "get",
            "pod",
            "web",
            "-n",
            "demo",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .await;
    let bad_name = k.file(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: demo}\n",
    );
    let err = k.fails(&["apply", "-f", &bad_name]).await;
    assert!(
        err.contains("Invalid value") && err.contains("RFC 1123"),
        "{err}"
    );
    let err = k
        .fails(&[
            "patch",
            "pod",
            "web",
            "-n",
            "demo",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/metadata/name","value":"other"}]"#,
        ])
        .await;
    assert!(
        err.contains("is invalid") && err.contains("did not match"),
        "{err}"
    );
    let err = k
        .fails(&[
            "patch",
            "pod",
            "web",
            "-n",
            "demo",
            "--type=merge",
            "-p",
            "{not json",
        ])
        .await;
    assert!(!err.is_empty());
    let after = k
        .ok(&[
            "get",
            "pod",
            "web",
            "-n",
            "demo",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .await;
    assert_eq!(before, after, "failed requests must not change the object");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_watch_sees_a_change() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let Some(k) = setup(dir.path(), kubeconfig).await else {
        return;
    };
    // (`kubectl create configmap` would send protobuf, which this server
    // does not speak; apply sends JSON.)
    let cm = k.file(
        "watched.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched}\ndata: {k: before}\n",
    );
    k.ok(&["apply", "-f", &cm]).await;

    let mut child = k
        .command(&[
            "get",
            "configmap",
            "watched",
            "-w",
            "-o",
            "jsonpath={.data.k}{\"\\n\"}",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = within("initial line", lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first, "before");
    k.ok(&[
        "patch",
        "configmap",
        "watched",
        "--type=merge",
        "-p",
        r#"{"data":{"k":"after"}}"#,
    ])
    .await;
    let changed = within("watch event", lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed, "after");
    child.kill().await.unwrap();
    server.shutdown().await;
}
