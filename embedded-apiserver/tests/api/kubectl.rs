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
pub(super) fn kubectl_path() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("kubectl"))
                .find(|c| c.is_file())
        })
        .unwrap_or(None);
    if found.is_none() {
        assert!(!ovn_harness::in_ci(), "kubectl is required under CI=true");
        eprintln!("kubectl not found on PATH: kubectl tests not run");
    }
    found
}

pub(super) struct Kubectl {
    bin: PathBuf,
    kubeconfig: PathBuf,
    dir: PathBuf,
}

impl Kubectl {
    pub(super) fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig).args(args);
        // Keep kubectl's discovery cache inside the test's temp dir.
        cmd.env("HOME", &self.dir)
            .env("KUBECACHEDIR", self.dir.join("cache"));
        cmd
    }

    pub(super) async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.command(args).output().await.expect("kubectl runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.success(), stdout, stderr)
    }

    pub(super) async fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed: {stderr}");
        stdout
    }

    pub(super) async fn fails(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(!ok, "kubectl {args:?} should fail, printed {stdout}");
        stderr
    }

    /// `ok` with the arguments split on spaces (none of them contains one).
    pub(super) async fn ok_line(&self, line: &str) -> String {
        self.ok(&line.split(' ').collect::<Vec<_>>()).await
    }

    pub(super) async fn fails_line(&self, line: &str) -> String {
        self.fails(&line.split(' ').collect::<Vec<_>>()).await
    }

    pub(super) fn file(&self, name: &str, content: &str) -> String {
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

pub(super) async fn setup(dir: &Path, kubeconfig: PathBuf) -> Option<Kubectl> {
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
    client_side_apply(&k).await;
    server_side_apply(&k).await;
    crd_and_objects(&k).await;
    label_annotate_patch(&k).await;
    bad_input(&k).await;
    for what in ["pod web", "service web", "networkpolicy deny-all"] {
        k.ok_line(&format!("delete {what} -n demo")).await;
        let err = k.fails_line(&format!("get {what} -n demo")).await;
        assert!(err.contains("NotFound"), "{err}");
    }
    k.ok_line("delete subnet ovn-default").await;
    server.shutdown().await;
}

async fn client_side_apply(k: &Kubectl) {
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
    let changed = WORKLOAD.replace("image: nginx:1", "image: nginx:2");
    let changed = k.file("workload2.yaml", &changed);
    let out = k.ok(&["apply", "-f", &changed]).await;
    assert!(out.contains("pod/web configured"), "{out}");
    let image = k
        .ok_line("get pod web -n demo -o jsonpath={.spec.containers[0].image}")
        .await;
    assert_eq!(image, "nginx:2");
    let yaml = k.ok_line("get service web -n demo -o yaml").await;
    assert!(
        yaml.contains("kind: Service") && yaml.contains("name: web"),
        "{yaml}"
    );
}

async fn server_side_apply(k: &Kubectl) {
    let cm = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ssa, namespace: demo}}\ndata: {{k: {v}}}\n")
    };
    let first = k.file("cm.yaml", &cm("v1"));
    let out = k.ok(&["apply", "--server-side", "-f", &first]).await;
    assert!(out.contains("configmap/ssa serverside-applied"), "{out}");
    let second = k.file("cm2.yaml", &cm("v2"));
    let other = [
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        &second,
    ];
    let err = k.fails(&other).await;
    assert!(err.contains("conflict"), "{err}");
    k.ok(&[&other[..], &["--force-conflicts"]].concat()).await;
    let managed = k
        .ok_line("get cm ssa -n demo -o yaml --show-managed-fields")
        .await;
    assert!(
        managed.contains("manager: other") && managed.contains("k: v2"),
        "{managed}"
    );
}

async fn crd_and_objects(k: &Kubectl) {
    let crd = k.file("crd.yaml", SUBNET_CRD);
    assert!(k.ok(&["apply", "-f", &crd]).await.contains("created"));
    let subnet = k.file("subnet.yaml", SUBNET);
    let out = k.ok(&["apply", "-f", &subnet]).await;
    assert!(
        out.contains("subnet.kubeovn.io/ovn-default created"),
        "{out}"
    );
    let cidr = k
        .ok_line("get subnet ovn-default -o jsonpath={.spec.cidrBlock}")
        .await;
    assert_eq!(cidr, "10.16.0.0/16");
    k.ok_line(r#"patch subnet ovn-default --type=merge -p {"spec":{"gateway":"10.16.0.254"}}"#)
        .await;
    let gw = k
        .ok_line("get subnet ovn-default -o jsonpath={.spec.gateway}")
        .await;
    assert_eq!(gw, "10.16.0.254");
    // Custom resources have no strategic merge patch, as in kube-apiserver.
    let err = k
        .fails_line(r#"patch subnet ovn-default --type=strategic -p {"spec":{"gateway":"x"}}"#)
        .await;
    assert!(
        err.contains("unknown format") || err.contains("UnsupportedMediaType"),
        "{err}"
    );
}

async fn label_annotate_patch(k: &Kubectl) {
    k.ok_line("label pod web -n demo tier=front").await;
    k.ok_line("annotate pod web -n demo note=hello").await;
    k.ok_line(r#"patch pod web -n demo --type=merge -p {"metadata":{"labels":{"m":"1"}}}"#)
        .await;
    k.ok_line(r#"patch pod web -n demo --type=json -p [{"op":"add","path":"/metadata/labels/j","value":"2"}]"#)
        .await;
    k.ok_line(r#"patch pod web -n demo --type=strategic -p {"spec":{"containers":[{"name":"app","env":[{"name":"E","value":"3"}]}]}}"#)
        .await;
    let labels = k
        .ok_line("get pod web -n demo -o jsonpath={.metadata.labels}")
        .await;
    for l in [
        r#""tier":"front""#,
        r#""m":"1""#,
        r#""j":"2""#,
        r#""app":"web""#,
    ] {
        assert!(labels.contains(l), "{l} missing from {labels}");
    }
    let note = k
        .ok_line("get pod web -n demo -o jsonpath={.metadata.annotations.note}")
        .await;
    assert_eq!(note, "hello");
    // The strategic patch merged the env into the existing container.
    let containers = k
        .ok_line("get pod web -n demo -o jsonpath={.spec.containers[*].name}/{.spec.containers[0].env[0].name}/{.spec.containers[0].image}")
        .await;
    assert_eq!(containers, "app/E/nginx:2");
    let selector = [
        "get",
        "pods",
        "-n",
        "demo",
        "-l",
        "tier in (front,back),m",
        "-o",
        "name",
    ];
    assert_eq!(k.ok(&selector).await.trim(), "pod/web");
}

async fn bad_input(k: &Kubectl) {
    let rv = "get pod web -n demo -o jsonpath={.metadata.resourceVersion}";
    let before = k.ok_line(rv).await;
    let bad_name = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name, namespace: demo}\n";
    let err = k
        .fails(&["apply", "-f", &k.file("bad.yaml", bad_name)])
        .await;
    assert!(
        err.contains("Invalid value") && err.contains("RFC 1123"),
        "{err}"
    );
    let err = k
        .fails_line(r#"patch pod web -n demo --type=json -p [{"op":"test","path":"/metadata/name","value":"other"}]"#)
        .await;
    assert!(
        err.contains("is invalid") && err.contains("did not match"),
        "{err}"
    );
    let err = k
        .fails_line("patch pod web -n demo --type=merge -p {not")
        .await;
    assert!(!err.is_empty());
    // Raw requests: a body of the wrong kind, and one that is not JSON.
    let raw = [
        "create",
        "--raw",
        "/api/v1/namespaces/demo/configmaps",
        "-f",
    ];
    let wrong_kind = k.file(
        "wrong.json",
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#,
    );
    let err = k.fails(&[&raw[..], &[wrong_kind.as_str()]].concat()).await;
    assert!(err.contains("does not match the expected kind"), "{err}");
    let wrong_version = k.file(
        "wrongv.json",
        r#"{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
    );
    let err = k
        .fails(&[&raw[..], &[wrong_version.as_str()]].concat())
        .await;
    assert!(
        err.contains("does not match the expected API version"),
        "{err}"
    );
    let garbage = k.file("garbage.json", "{\"metadata\": ");
    let err = k.fails(&[&raw[..], &[garbage.as_str()]].concat()).await;
    assert!(
        err.contains("BadRequest") || err.contains("not valid JSON"),
        "{err}"
    );
    assert!(k.fails_line("get cm x -n demo").await.contains("NotFound"));
    assert_eq!(
        before,
        k.ok_line(rv).await,
        "failed requests must not change the object"
    );
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
