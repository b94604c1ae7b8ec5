//! The sandbox's node agent driving Debian's `bridge` + `host-local` CNI
//! plugins (on a bridge inside a node namespace this test creates), the
//! scheduler, `kubectl exec` / `kubectl logs` through the agent's runtime,
//! and the matrix prober over the real traffic between the pods.

use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_ovn_sandbox::agent::{AgentConfig, NodeAgent, FINALIZER};
use kube_ovn_sandbox::controllers::control_once;
use kube_ovn_sandbox::matrix::{load_cluster, run_matrix, MatrixSpec};
use kube_ovn_sandbox::netns;
use kube_ovn_sandbox::policy_eval::Protocol;
use kube_ovn_sandbox::runtime::PodDirectory;
use kube_ovn_sandbox::scheduler::Scheduler;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const PLUGIN_DIR: &str = "/usr/lib/cni";

/// The plugins and kubectl, or a failure under CI=true.
fn tools() -> Option<PathBuf> {
    let plugins = ["bridge", "host-local"]
        .iter()
        .all(|p| Path::new(PLUGIN_DIR).join(p).is_file());
    let kubectl = ["/usr/bin/kubectl", "/usr/local/bin/kubectl"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    let running_as_root = nix::unistd::Uid::effective().is_root();
    if plugins && kubectl.is_some() && running_as_root {
        return kubectl;
    }
    assert!(
        !ovn_harness::in_ci(),
        "CNI plugins in {PLUGIN_DIR}, kubectl and root are required under CI=true"
    );
    eprintln!("CNI plugins, kubectl or root missing: sandbox agent test not run");
    None
}

/// Removes every namespace this test made, even when it fails.
struct NetnsGuard(String);

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir("/run/netns") else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&self.0) {
                let _ = std::process::Command::new("ip")
                    .args(["netns", "del", &name])
                    .status();
            }
        }
    }
}

fn conflist(dir: &Path, tag: &str) -> PathBuf {
    let list = json!({
        "cniVersion": "1.0.0",
        "name": format!("sbx-{tag}"),
        "plugins": [{
            "type": "bridge",
            "bridge": format!("sbx{tag}"),
            "isGateway": true,
            "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.0.0/24"}]],
                     "dataDir": dir.join("ipam")},
        }],
    });
    let path = dir.join("10-sbx.conflist");
    std::fs::write(&path, serde_json::to_vec_pretty(&list).unwrap()).unwrap();
    path
}

fn pod(ns: &str, name: &str, app: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "serve", "image": "agnhost", "ports": [
            {"name": "serve-80-tcp", "containerPort": 80},
            {"name": "serve-81-udp", "containerPort": 81, "protocol": "UDP"}]}]},
    }))
    .unwrap()
}

async fn within<F: std::future::Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(Duration::from_secs(60), fut).await {
        Ok(v) => v,
        Err(_) => panic!("gave up waiting for {what}"),
    }
}

struct Sandbox {
    server: Handle,
    client: kube::Client,
    agent: NodeAgent,
    scheduler: Scheduler,
    directory: PodDirectory,
    kubectl: PathBuf,
    dir: tempfile::TempDir,
}

impl Sandbox {
    async fn start(kubectl: PathBuf, tag: &str) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let node_netns = netns::create(&format!("sbx{tag}node"))
            .await
            .expect("node netns");
        let server = EmbeddedApiServer::start(Config::default()).await.unwrap();
        let client = server.kube_client().unwrap();
        let directory = PodDirectory::default();
        server.set_pod_runtime(Arc::new(directory.clone()));
        let config = AgentConfig {
            node: "node-1".into(),
            host_ip: "172.18.0.2".into(),
            conflist: conflist(dir.path(), tag),
            plugin_dirs: vec![PLUGIN_DIR.into()],
            cache_dir: dir.path().join("cni-cache"),
            node_netns: Some(node_netns),
            netns_prefix: format!("sbx{tag}-"),
            resync: Duration::from_millis(100),
        };
        let agent = NodeAgent::new(client.clone(), config, directory.clone()).unwrap();
        agent.register_node().await.unwrap();
        server
            .write_kubeconfig(&dir.path().join("kubeconfig"))
            .unwrap();
        Sandbox {
            server,
            client,
            agent,
            scheduler: Scheduler::default(),
            directory,
            kubectl,
            dir,
        }
    }

    /// Scheduler and agent passes until `done` holds for the pods.
    async fn settle(&mut self, what: &str, done: impl Fn(&[Pod]) -> bool) -> Vec<Pod> {
        let pods: Api<Pod> = Api::all(self.client.clone());
        within(what, async {
            loop {
                control_once(&self.client, &mut self.scheduler)
                    .await
                    .unwrap();
                self.agent.reconcile_once().await.unwrap();
                let now = pods.list(&Default::default()).await.unwrap().items;
                if done(&now) {
                    return now;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    }

    async fn kubectl(&self, args: &[&str]) -> std::process::Output {
        let out = tokio::process::Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .args(args)
            .env("HOME", self.dir.path())
            .output();
        within("kubectl", out).await.unwrap()
    }
}

fn running_ready(p: &Pod, ready: bool) -> bool {
    let status = p.status.clone().unwrap_or_default();
    status.phase.as_deref() == Some("Running")
        && status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == if ready { "True" } else { "False" })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_runs_pods_on_bridge_and_host_local() {
    let Some(kubectl) = tools() else { return };
    let tag = format!("{:x}a", std::process::id() % 0xffff);
    let _guard = NetnsGuard(format!("sbx{tag}"));
    let mut sb = Sandbox::start(kubectl, &tag).await;
    let prefix = format!("sbx{tag}-");
    let pods: Api<Pod> = Api::namespaced(sb.client.clone(), "default");
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        pods.create(&PostParams::default(), &pod("default", name, app))
            .await
            .unwrap();
    }
    let all = sb
        .settle("pods running", |p| {
            p.len() == 3 && p.iter().all(|p| running_ready(p, true))
        })
        .await;
    for p in &all {
        let spec = p.spec.clone().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("node-1"));
        let status = p.status.clone().unwrap();
        let ip: std::net::Ipv4Addr = status.pod_ip.clone().unwrap().parse().unwrap();
        assert_eq!(ip.octets()[..3], [10, 99, 0], "{status:?}");
        assert_eq!(status.host_ip.as_deref(), Some("172.18.0.2"));
        let containers = status.container_statuses.clone().unwrap();
        assert!(containers[0].ready, "{containers:?}");
        assert!(p
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER));
    }
    exec_and_logs(&sb, &all).await;
    matrix_all_allowed_then_one_stopped(&mut sb).await;
    deletion_keeps_foreign_finalizers(&mut sb, &prefix).await;
    sb.server.shutdown().await;
}

async fn exec_and_logs(sb: &Sandbox, pods: &[Pod]) {
    let a = pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("a"))
        .unwrap();
    let b_ip = pods
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("b"))
        .and_then(|p| p.status.clone()?.pod_ip)
        .unwrap();
    // The command runs in the pod's namespace: it sees the pod's address.
    let out = sb
        .kubectl(&["exec", "a", "--", "ip", "-4", "-o", "addr", "show", "eth0"])
        .await;
    assert!(out.status.success(), "{out:?}");
    let a_ip = a.status.clone().unwrap().pod_ip.unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&a_ip),
        "{out:?}"
    );
    let out = sb
        .kubectl(&["exec", "a", "--", "ping", "-c1", "-W5", &b_ip])
        .await;
    assert!(out.status.success(), "ping from a to b: {out:?}");
    let out = sb
        .kubectl(&[
            "exec",
            "a",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ])
        .await;
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    // The responder's log records the connection from a.
    let out = sb.kubectl(&["logs", "b"]).await;
    let log = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(log.contains("serving b"), "{log}");
}

async fn matrix_all_allowed_then_one_stopped(sb: &mut Sandbox) {
    let spec = MatrixSpec {
        ports: vec![80, 81],
        protocols: vec![Protocol::Tcp, Protocol::Udp],
        timeout: Duration::from_secs(2),
        concurrency: 8,
        retries: 1,
        retry_delay: Duration::from_millis(200),
    };
    let (targets, eval) = load_cluster(&sb.client, &sb.directory, &["default".to_string()])
        .await
        .unwrap();
    assert_eq!(targets.len(), 3);
    // 80/TCP and 81/UDP are served: those probes are all answered.
    let report = run_matrix(&targets, &eval, &spec).await;
    let served: Vec<_> = report
        .probes
        .iter()
        .filter(|p| (p.port == 80) == (p.protocol == "TCP"))
        .collect();
    assert_eq!(served.len(), 18);
    assert!(
        served.iter().all(|p| p.observed && p.expected),
        "{}",
        report.render()
    );

    // Each answered probe is a line of the destination's log.
    let out = sb.kubectl(&["logs", "c", "--tail=1"]).await;
    let last = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        last.starts_with("tcp/80 from 10.99.0.") || last.starts_with("udp/81 from 10.99.0."),
        "{last:?}"
    );
    assert_eq!(last.lines().count(), 1, "{last:?}");

    // b's responder stops: b goes unready and every probe to b is a mismatch.
    assert!(sb.agent.stop_responder("default", "b"));
    sb.settle("b unready", |p| {
        p.iter()
            .any(|p| p.metadata.name.as_deref() == Some("b") && running_ready(p, false))
    })
    .await;
    let spec = MatrixSpec {
        ports: vec![80],
        protocols: vec![Protocol::Tcp],
        ..spec
    };
    let report = run_matrix(&targets, &eval, &spec).await;
    let wrong = report.mismatches();
    assert_eq!(wrong.len(), 3, "{}", report.render());
    assert!(wrong
        .iter()
        .all(|p| p.destination == "default/b" && p.expected && !p.observed));
    // a disagreement is probed once more (retries: 1) before it counts; agreeing probes once
    assert!(wrong.iter().all(|p| p.attempts == 2), "{wrong:?}");
    assert!(report
        .probes
        .iter()
        .all(|p| p.attempts == if p.destination == "default/b" { 2 } else { 1 }));
    let text = report.render();
    assert!(
        text.contains("(3 probed again after a first disagreement)"),
        "{text}"
    );
    assert!(
        text.contains("X!") && text.contains("MISMATCH default/a -> default/b"),
        "{text}"
    );
    let json = report.to_json();
    assert_eq!(json["mismatches"], 3);
    assert_eq!(json["probes"].as_array().unwrap().len(), 9);

    // A policy the bridge plugin does not enforce: the evaluator expects
    // c isolated, the datapath still lets a and b through.
    let policy: NetworkPolicy = serde_json::from_value(json!({
        "metadata": {"name": "deny-db", "namespace": "default"},
        "spec": {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress"]},
    }))
    .unwrap();
    let policies: Api<NetworkPolicy> = Api::namespaced(sb.client.clone(), "default");
    policies
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    let (targets, eval) = load_cluster(&sb.client, &sb.directory, &[]).await.unwrap();
    let report = run_matrix(&targets, &eval, &spec).await;
    let to_c: Vec<_> = report
        .mismatches()
        .into_iter()
        .filter(|p| p.destination == "default/c")
        .collect();
    assert_eq!(to_c.len(), 2, "{}", report.render());
    assert!(to_c
        .iter()
        .all(|p| !p.expected && p.observed && p.answer.as_deref() == Some("c")));
    policies
        .delete("deny-db", &Default::default())
        .await
        .unwrap();
}

async fn deletion_keeps_foreign_finalizers(sb: &mut Sandbox, prefix: &str) {
    let pods: Api<Pod> = Api::namespaced(sb.client.clone(), "default");
    let a = pods.get("a").await.unwrap();
    let path = netns::netns_path(&format!("{prefix}{}", a.metadata.uid.clone().unwrap()));
    assert!(path.exists());
    // Another party's finalizer (the controller's, say) is on the pod too.
    let mut finalizers = a.metadata.finalizers.clone().unwrap();
    finalizers.push("example.com/keep".into());
    let patch = json!({"metadata": {"finalizers": finalizers}});
    pods.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    pods.delete("a", &DeleteParams::default()).await.unwrap();
    let left = sb
        .settle("a torn down", |p| {
            p.iter().any(|p| {
                p.metadata.name.as_deref() == Some("a")
                    && p.metadata.finalizers.clone().unwrap_or_default() == ["example.com/keep"]
            })
        })
        .await;
    assert!(!path.exists(), "a's namespace is removed");
    assert!(left.iter().any(|p| p.metadata.deletion_timestamp.is_some()));
    let out = sb.kubectl(&["exec", "a", "--", "true"]).await;
    assert!(!out.status.success(), "exec in a torn-down pod: {out:?}");
    // The other party lets go: the pod is gone.
    let patch = json!({"metadata": {"finalizers": null}});
    pods.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    sb.settle("a gone", |p| {
        p.iter().all(|p| p.metadata.name.as_deref() != Some("a"))
    })
    .await;
    // Everything else goes with its object.
    for name in ["b", "c"] {
        pods.delete(name, &DeleteParams::default()).await.unwrap();
    }
    sb.settle("all gone", |p| p.is_empty()).await;
    let left: Vec<_> = std::fs::read_dir("/run/netns")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .collect();
    assert!(left.is_empty(), "pod namespaces left: {left:?}");
}

fn count_ready(pods: &[Pod], prefix: &str) -> usize {
    pods.iter()
        .filter(|p| {
            p.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .filter(|p| p.metadata.deletion_timestamp.is_none() && running_ready(p, true))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_scales_up_and_down_with_kubectl() {
    let Some(kubectl) = tools() else { return };
    let tag = format!("{:x}d", std::process::id() % 0xffff);
    let _guard = NetnsGuard(format!("sbx{tag}"));
    let mut sb = Sandbox::start(kubectl, &tag).await;
    let out = sb
        .kubectl(&[
            "create",
            "deployment",
            "web",
            "--image=agnhost",
            "--replicas=3",
            "--port=80",
        ])
        .await;
    assert!(out.status.success(), "{out:?}");
    let pods = sb
        .settle("3 web pods", |p| {
            p.len() == 3 && count_ready(p, "web-") == 3
        })
        .await;
    let rs_names: std::collections::BTreeSet<_> = pods
        .iter()
        .flat_map(|p| p.metadata.owner_references.iter().flatten())
        .map(|o| (o.kind.clone(), o.name.clone()))
        .collect();
    assert_eq!(rs_names.len(), 1, "one ReplicaSet owns them: {rs_names:?}");
    assert!(rs_names
        .iter()
        .all(|(kind, name)| kind == "ReplicaSet" && name.starts_with("web-")));

    let out = sb
        .kubectl(&["scale", "deployment", "web", "--replicas=1"])
        .await;
    assert!(out.status.success(), "{out:?}");
    sb.settle("1 web pod", |p| p.len() == 1 && count_ready(p, "web-") == 1)
        .await;
    let out = sb
        .kubectl(&["scale", "deployment/web", "--replicas=2"])
        .await;
    assert!(out.status.success(), "{out:?}");
    sb.settle("2 web pods", |p| {
        p.len() == 2 && count_ready(p, "web-") == 2
    })
    .await;
    // One more pass writes the Deployment's status from its ReplicaSet's.
    sb.settle("status", |_| true).await;
    sb.settle("status", |_| true).await;
    let out = sb
        .kubectl(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.status.readyReplicas}/{.spec.replicas}",
        ])
        .await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2/2", "{out:?}");
    // A Service over the Deployment: its slice lists only ready pods as
    // ready, and readiness follows the responder.
    let out = sb
        .kubectl(&["create", "service", "clusterip", "web", "--tcp=80:80"])
        .await;
    assert!(out.status.success(), "{out:?}");
    let ready_in_slice = |sb: &Sandbox| {
        let client = sb.client.clone();
        async move {
            let slices: Api<EndpointSlice> = Api::namespaced(client, "default");
            let list = slices
                .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
                .await
                .unwrap();
            list.items
                .iter()
                .flat_map(|s| s.endpoints.iter().flatten())
                .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
                .count()
        }
    };
    sb.settle("slice", |_| true).await;
    assert_eq!(ready_in_slice(&sb).await, 2);
    let victim = sb.settle("pods", |_| true).await[0]
        .metadata
        .name
        .clone()
        .unwrap();
    assert!(sb.agent.stop_responder("default", &victim));
    sb.settle("victim unready", |p| {
        p.iter().any(|p| running_ready(p, false))
    })
    .await;
    sb.settle("slice follows", |_| true).await;
    assert_eq!(ready_in_slice(&sb).await, 1);
    // Bad input: a negative scale is refused, nothing changes.
    let out = sb
        .kubectl(&["scale", "deployment", "web", "--replicas=-1"])
        .await;
    assert!(!out.status.success(), "{out:?}");
    let out = sb
        .kubectl(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ])
        .await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2");

    let out = sb.kubectl(&["delete", "deployment", "web"]).await;
    assert!(out.status.success(), "{out:?}");
    sb.settle("web gone", |p| p.is_empty()).await;
    sb.server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_cni_add_leaves_nothing_behind_and_says_why() {
    let Some(kubectl) = tools() else { return };
    let tag = format!("{:x}f", std::process::id() % 0xffff);
    let _guard = NetnsGuard(format!("sbx{tag}"));
    let mut sb = Sandbox::start(kubectl, &tag).await;
    // A conflist naming a plugin that does not exist.
    let dir = sb.dir.path().to_path_buf();
    let bad = dir.join("bad.conflist");
    let list =
        json!({"cniVersion": "1.0.0", "name": "bad", "plugins": [{"type": "no-such-plugin"}]});
    std::fs::write(&bad, serde_json::to_vec(&list).unwrap()).unwrap();
    let config = AgentConfig {
        node: "node-1".into(),
        host_ip: "172.18.0.2".into(),
        conflist: bad,
        plugin_dirs: vec![PLUGIN_DIR.into()],
        cache_dir: dir.join("bad-cache"),
        node_netns: None,
        netns_prefix: format!("sbx{tag}-"),
        resync: Duration::from_millis(100),
    };
    sb.agent = NodeAgent::new(sb.client.clone(), config, sb.directory.clone()).unwrap();
    let pods: Api<Pod> = Api::namespaced(sb.client.clone(), "default");
    pods.create(&PostParams::default(), &pod("default", "a", "web"))
        .await
        .unwrap();
    let all = sb
        .settle("start failure reported", |p| {
            p.iter().any(|p| {
                p.status
                    .iter()
                    .flat_map(|s| s.conditions.iter().flatten())
                    .any(|c| {
                        c.reason.as_deref() == Some("SandboxCreationFailed")
                            && c.message
                                .as_deref()
                                .is_some_and(|m| m.contains("no-such-plugin"))
                    })
            })
        })
        .await;
    assert_eq!(
        all[0].status.clone().unwrap().phase.as_deref(),
        Some("Pending")
    );
    let left: Vec<_> = std::fs::read_dir("/run/netns")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("sbx{tag}-"))
        })
        .collect();
    assert!(
        left.is_empty(),
        "no namespace left after a failed ADD: {left:?}"
    );

    // An unreadable conflist is refused up front, naming the file.
    let mut config = AgentConfig {
        node: "node-2".into(),
        host_ip: "172.18.0.3".into(),
        conflist: dir.join("missing.conflist"),
        plugin_dirs: vec![PLUGIN_DIR.into()],
        cache_dir: dir.join("cache2"),
        node_netns: None,
        netns_prefix: format!("sbx{tag}-"),
        resync: Duration::from_millis(100),
    };
    let err = NodeAgent::new(sb.client.clone(), config.clone(), sb.directory.clone()).unwrap_err();
    assert!(err.to_string().contains("missing.conflist"), "{err}");
    config.conflist = dir.join("10-sbx.conflist");
    assert!(NodeAgent::new(sb.client.clone(), config, sb.directory.clone()).is_ok());
    pods.delete("a", &DeleteParams::default()).await.unwrap();
    sb.settle("a gone", |p| p.is_empty()).await;
    sb.server.shutdown().await;
}
