//! One `kube-ovn-sandbox` started for the bench: its own temporary state directory and
//! name prefix, brought down when dropped (also when a measurement panics).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::{json, Value};

/// The `kube-ovn-sandbox` binary (it finds the controller, daemon and CNI binary beside
/// it): this build's, or `SANDBOX_BENCH_BIN` to measure another build.
pub fn sandbox_bin() -> PathBuf {
    std::env::var_os("SANDBOX_BENCH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_kube-ovn-sandbox")))
}

/// The annotation the controller writes with the pod's address(es).
pub const IP_ANNOTATION: &str = "ovn.kubernetes.io/ip_address";

pub struct BenchSandbox {
    dir: tempfile::TempDir,
    prefix: String,
}

impl BenchSandbox {
    pub fn new() -> anyhow::Result<BenchSandbox> {
        Ok(BenchSandbox {
            dir: tempfile::Builder::new()
                .prefix("sandbox-bench.")
                .tempdir()
                .context("temp dir")?,
            // at most 10 characters, unique per process and call
            prefix: ovn_harness::unique_tag("b"),
        })
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// The name of node `i` (from 1), as the sandbox names it.
    pub fn node(&self, i: usize) -> String {
        format!("{}n{i}", self.prefix)
    }

    /// Writes `objects` as one multi-document manifest and returns its path.
    pub fn manifest(&self, name: &str, objects: &[Value]) -> anyhow::Result<PathBuf> {
        let path = self.dir.path().join(name);
        // JSON is YAML: one document per object
        let text: Vec<String> = objects.iter().map(Value::to_string).collect();
        std::fs::write(&path, text.join("\n---\n")).context("writing the manifest")?;
        Ok(path)
    }

    pub fn up_command(&self, nodes: usize, manifest: &Path) -> Command {
        let mut cmd = Command::new(sandbox_bin());
        cmd.arg("--state-dir")
            .arg(self.state())
            .args([
                "up",
                "--nodes",
                &nodes.to_string(),
                "--prefix",
                &self.prefix,
            ])
            .args(["--timeout", "600"])
            .arg(manifest);
        cmd
    }

    /// `up` to completion; fails with its output when it fails.
    pub fn up(&self, nodes: usize, manifest: &Path) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let out = self
            .up_command(nodes, manifest)
            .output()
            .context("run up")?;
        let took = start.elapsed();
        if !out.status.success() {
            bail!("up failed: {}", text(&out));
        }
        Ok(took)
    }

    /// `down`; fails with its output when it fails.
    pub fn down(&self) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let out = Command::new(sandbox_bin())
            .arg("--state-dir")
            .arg(self.state())
            .arg("down")
            .output()
            .context("run down")?;
        if !out.status.success() {
            bail!("down failed: {}", text(&out));
        }
        Ok(start.elapsed())
    }

    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        Ok(kube_ovn_cmd::kube_client::kube_client(Some(&self.state().join("kubeconfig"))).await?)
    }

    /// The network namespace the node agent made for the pod with `uid`.
    pub fn pod_netns(&self, uid: &str) -> PathBuf {
        kube_ovn_sandbox::netns::netns_path(&format!("{}p-{uid}", self.prefix))
    }

    /// A Running pod's uid, IPv4 address, node and network namespace.
    pub async fn running_pod(
        &self,
        client: &kube::Client,
        namespace: &str,
        name: &str,
    ) -> anyhow::Result<PodPlace> {
        let pod = Api::<Pod>::namespaced(client.clone(), namespace)
            .get(name)
            .await
            .with_context(|| format!("get pod {namespace}/{name}"))?;
        let status = pod.status.clone().unwrap_or_default();
        if status.phase.as_deref() != Some("Running") {
            bail!("pod {namespace}/{name} is not Running: {status:?}");
        }
        let ip = status
            .pod_ip
            .as_deref()
            .and_then(|ip| ip.parse().ok())
            .with_context(|| format!("pod {namespace}/{name} has no podIP"))?;
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let netns = self.pod_netns(&uid);
        if !netns.exists() {
            bail!("pod {namespace}/{name}: no namespace {}", netns.display());
        }
        Ok(PodPlace {
            ip,
            node: pod.spec.and_then(|s| s.node_name).unwrap_or_default(),
            netns,
        })
    }
}

impl Drop for BenchSandbox {
    fn drop(&mut self) {
        if let Err(e) = self.down() {
            eprintln!("{e:#}");
        }
    }
}

/// Where a pod runs.
#[derive(Debug, Clone)]
pub struct PodPlace {
    pub ip: std::net::IpAddr,
    pub node: String,
    pub netns: PathBuf,
}

pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": name, "labels": {"name": name}}})
}

/// A pod whose responder answers on 80/TCP and 80/UDP; bound to `node` when given
/// (else the sandbox's scheduler places it).
pub fn pod(namespace: &str, name: &str, app: &str, node: Option<&str>) -> Value {
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": namespace, "name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "serve", "image": "agnhost", "ports": [
            {"name": "http", "containerPort": 80, "protocol": "TCP"},
            {"name": "udp", "containerPort": 80, "protocol": "UDP"},
        ]}]},
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

/// The first IPv4 address of the controller's IP annotation.
pub fn annotated_ip(pod: &Pod) -> Option<std::net::IpAddr> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(IP_ANNOTATION)?
        .split(',')
        .filter_map(|ip| ip.trim().parse::<std::net::IpAddr>().ok())
        .find(std::net::IpAddr::is_ipv4)
}

pub fn is_running(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
