//! `kubectl-ko` against a real sandbox: ovn-harness's central + 2 nodes in network
//! namespaces with plugged fake pods, an embedded API server holding the pod objects
//! (annotations matching the plugged pods) and their IP objects, and a `sandbox.json`
//! naming it all. The built binary runs as a user would (also as `kubectl ko`).
//! Cluster mode (exec into pods) is covered at the level of pod discovery and the
//! exec command line, by the unit tests in `src/ko/target.rs`.

use kube_ovn_test_support as common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use embedded_apiserver::{Config, EmbeddedApiServer};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::Client;
use kube_ovn_api::crd::{IPSpec, Subnet, SubnetSpec, IP};
use kubectl_ko::target::{SandboxNode, SandboxState};
use ovn_harness::{Cluster, PodSpec};

const KO: &str = env!("CARGO_BIN_EXE_kubectl-ko");

/// Runs `kubectl-ko ARGS` (or `PROGRAM ARGS` with the binary's dir on PATH); returns
/// (exit code, stdout, stderr).
async fn run_with(program: &str, state: &Path, args: &[&str]) -> (i32, String, String) {
    let bin_dir = Path::new(KO).parent().expect("a directory");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = tokio::process::Command::new(program)
        .args(args)
        .env("KUBE_OVN_SANDBOX", state)
        .env("PATH", path)
        .output()
        .await
        .expect("kubectl-ko runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn ko(state: &Path, args: &[&str]) -> (i32, String, String) {
    run_with(KO, state, args).await
}

fn pod_object(name: &str, node: &str, ip: &str, mac: &str) -> Pod {
    let annotations: BTreeMap<String, String> = [
        ("allocated", "true"),
        ("ip_address", ip),
        ("mac_address", mac),
        ("cidr", "10.16.0.0/24"),
        ("gateway", "10.16.0.1"),
        ("logical_switch", "ovn-default"),
    ]
    .into_iter()
    .map(|(k, v)| (format!("ovn.kubernetes.io/{k}"), v.to_string()))
    .collect();
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]},
    }))
    .expect("a pod")
}

fn ip_object(name: &str, ip: &str, mac: &str) -> IP {
    let mut obj = IP::new(
        name,
        IPSpec {
            ip_address: Some(ip.to_string()),
            mac_address: Some(mac.to_string()),
            ..Default::default()
        },
    );
    obj.metadata.name = Some(name.to_string());
    obj
}

/// The switch, the router, the join switch and the ports of pods a, b and each ovn0.
fn build_nb(cluster: &Cluster) {
    let nodes: Vec<String> = cluster
        .nodes()
        .iter()
        .map(|n| n.name().to_string())
        .collect();
    let script = [
        "ls-add ovn-default",
        "lsp-add ovn-default a.default",
        "lsp-set-addresses a.default \"0a:00:00:00:00:0a 10.16.0.10\"",
        "lsp-add ovn-default b.default",
        "lsp-set-addresses b.default \"0a:00:00:00:00:0b 10.16.0.11\"",
        "lr-add ovn-cluster",
        "lrp-add ovn-cluster ovn-cluster-ovn-default 0a:00:00:00:00:01 10.16.0.1/24",
        "lsp-add ovn-default ovn-default-ovn-cluster",
        "lsp-set-type ovn-default-ovn-cluster router",
        "lsp-set-addresses ovn-default-ovn-cluster router",
        "lsp-set-options ovn-default-ovn-cluster router-port=ovn-cluster-ovn-default",
    ];
    let mut words = shell_words(&script.join(" -- "));
    let join = nodes.iter().enumerate().map(|(i, node)| {
        let mac = format!("0a:00:00:00:01:0{i}");
        (node, mac, format!("100.64.0.{}", i + 2))
    });
    words.push("--".into());
    words.extend(common::join_switch(None, join));
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    cluster.nbctl(&args).expect("NB set up");
}

/// Splits on spaces, keeping double-quoted parts whole (quotes removed).
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

fn state_of(cluster: &Cluster, kubeconfig: PathBuf) -> SandboxState {
    SandboxState {
        nb_remote: cluster.central().nb_remote(),
        sb_remote: cluster.central().sb_remote(),
        kubeconfig,
        nodes: cluster
            .nodes()
            .iter()
            .map(|n| {
                let remote = n.chassis().ovs_remote();
                let sock = PathBuf::from(remote.trim_start_matches("unix:"));
                SandboxNode {
                    name: n.name().to_string(),
                    netns: n.netns().name().to_string(),
                    ovs_remote: remote,
                    ctl_dir: sock.parent().expect("a directory").to_path_buf(),
                }
            })
            .collect(),
    }
}

async fn create_objects(client: &Client, nodes: &[String]) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in kube_ovn_api::crd::crds() {
        crds.create(&PostParams::default(), &crd)
            .await
            .expect("CRD");
    }
    let subnets: Api<Subnet> = Api::all(client.clone());
    let subnet = Subnet::new(
        "ovn-default",
        SubnetSpec {
            cidr_block: Some("10.16.0.0/24".into()),
            ..Default::default()
        },
    );
    subnets
        .create(&PostParams::default(), &subnet)
        .await
        .expect("subnet");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let ips: Api<IP> = Api::all(client.clone());
    for (name, node, ip, mac) in [
        ("a", &nodes[0], "10.16.0.10", "0a:00:00:00:00:0a"),
        ("b", &nodes[1], "10.16.0.11", "0a:00:00:00:00:0b"),
    ] {
        pods.create(&PostParams::default(), &pod_object(name, node, ip, mac))
            .await
            .expect("pod");
        ips.create(
            &PostParams::default(),
            &ip_object(&format!("{name}.default"), ip, mac),
        )
        .await
        .expect("IP");
    }
}

/// Stops a node's ovn-controller as a crash would leave it: `exit` through its control
/// socket (the Chassis record leaves SB).
fn stop_ovn_controller(ctl_dir: &Path) {
    let ctl = std::fs::read_dir(ctl_dir)
        .expect("ctl dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("ovn-controller.") && name.ends_with(".ctl")
        })
        .expect("ovn-controller's control socket");
    ovn_harness::run("ovn-appctl", &["-t", &ctl.to_string_lossy(), "exit"]).expect("exit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_ko_against_a_sandbox() {
    if !ovn_harness::require_root(&[
        "ovn-northd",
        "ovn-controller",
        "ovs-vswitchd",
        "ovn-trace",
        "kubectl",
    ]) {
        return;
    }
    let cluster = Cluster::start("ko", 2).expect("cluster");
    build_nb(&cluster);
    let n = cluster.nodes();
    let names: Vec<String> = n.iter().map(|n| n.name().to_string()).collect();
    let spec = |netns: &str, iface_id: &str, mac: &str, cidr: &str, gw: Option<&str>| PodSpec {
        netns: netns.to_string(),
        host_iface: if iface_id.starts_with("node-") {
            "ovn0".to_string()
        } else {
            format!("{netns}_h")
        },
        iface_id: iface_id.to_string(),
        mac: mac.to_string(),
        cidr: cidr.to_string(),
        gateway: gw.map(String::from),
    };
    let pod_a = n[0]
        .plug_pod(&spec(
            "koa",
            "a.default",
            "0a:00:00:00:00:0a",
            "10.16.0.10/24",
            Some("10.16.0.1"),
        ))
        .expect("pod a");
    let _pod_b = n[1]
        .plug_pod(&spec(
            "kob",
            "b.default",
            "0a:00:00:00:00:0b",
            "10.16.0.11/24",
            Some("10.16.0.1"),
        ))
        .expect("pod b");
    let _ovn0 = [
        n[0].plug_pod(&spec(
            "ko0n1",
            &format!("node-{}", names[0]),
            "0a:00:00:00:01:00",
            "100.64.0.2/16",
            None,
        ))
        .expect("ovn0 1"),
        n[1].plug_pod(&spec(
            "ko0n2",
            &format!("node-{}", names[1]),
            "0a:00:00:00:01:01",
            "100.64.0.3/16",
            None,
        ))
        .expect("ovn0 2"),
    ];
    // as Kube-OVN's CNI records it
    n[0].chassis()
        .vsctl(&[
            "set",
            "Interface",
            pod_a.host_iface(),
            "external_ids:pod_netns=koa",
        ])
        .expect("pod_netns");

    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("API server");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    create_objects(&server.kube_client().expect("client"), &names).await;
    let state = state_of(&cluster, kubeconfig);
    state.save(dir.path()).expect("sandbox.json");
    let st = dir.path();

    let (code, out, err) = ko(st, &["nbctl", "show"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ovn-default"), "{out}");
    let (code, out, err) = ko(st, &["vsctl", &names[0], "show"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("br-int") && out.contains("koa_h"), "{out}");

    let (code, out, err) = ko(
        st,
        &[
            "ofctl",
            &names[0],
            "-O",
            "OpenFlow15",
            "dump-flows",
            "br-int",
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("table=0"), "{out}");
    // a failing tool's status comes back
    let (code, _, err) = ko(st, &["nbctl", "ls-del", "no-such-switch"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("no-such-switch"), "{err}");

    let (code, out, err) = ko(st, &["trace", "default/a", "10.16.0.11", "tcp", "80"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("verdict: delivered to output(\"b.default\")"),
        "{out}"
    );

    cluster
        .nbctl(&[
            "--name=deny-to-b",
            "acl-add",
            "ovn-default",
            "from-lport",
            "2000",
            "ip4.dst == 10.16.0.11",
            "drop",
        ])
        .expect("ACL");
    let (code, out, _) = ko(st, &["trace", "default/a", "10.16.0.11", "tcp", "80"]).await;
    assert_ne!(code, 0, "{out}");
    assert!(
        out.starts_with("verdict: dropped by ACL deny-to-b"),
        "{out}"
    );
    cluster
        .nbctl(&["acl-del", "ovn-default"])
        .expect("ACL removed");

    let (code, out, err) = ko(st, &["get-pod-network", "default/a"]).await;
    assert_eq!(code, 0, "{err}");
    for needle in [
        "a.default",
        "koa_h",
        "ovn-installed=true",
        "10.16.0.10/24",
        "default via 10.16.0.1",
    ] {
        assert!(out.contains(needle), "{needle} missing in {out}");
    }

    let (code, out, err) = ko(st, &["diagnose", "all"]).await;
    eprintln!("diagnose all (healthy):\n{out}");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        !out.contains("FAIL") && out.contains("OK   pod default/b"),
        "{out}"
    );

    // as `kubectl ko`, the plugin found on PATH
    let (code, out, err) = run_with("kubectl", st, &["ko", "sbctl", "list", "Chassis"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&names[1]), "{out}");

    // bad input names the offender
    let (code, _, err) = ko(st, &["trace", "default/nope", "10.16.0.11"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("pod default/nope not found"), "{err}");
    let (code, _, err) = ko(st, &["vsctl", "nosuchnode", "show"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("unknown node \"nosuchnode\""), "{err}");
    let (code, _, err) = ko(st, &["get-pod-network", "no-slash"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("\"no-slash\""), "{err}");

    let (code, out, err) = ko(st, &["diagnose", "subnet", "ovn-default"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("OK   subnet ovn-default") && out.contains("OK   pod default/a"),
        "{out}"
    );
    let (code, out, _) = ko(st, &["diagnose", "subnet", "no-such-subnet"]).await;
    assert_ne!(code, 0);
    assert!(
        out.contains("FAIL subnet no-such-subnet: subnet no-such-subnet not found"),
        "{out}"
    );
    let (code, _, err) = ko(st, &["diagnose", "node", "nosuchnode"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("unknown node \"nosuchnode\""), "{err}");

    stop_ovn_controller(&state.nodes[1].ctl_dir);
    let (code, out, _) = ko(st, &["diagnose", "all"]).await;
    eprintln!("diagnose all (ovn-controller stopped on node 2):\n{out}");
    assert_ne!(code, 0, "{out}");
    let wanted = format!(
        "FAIL node {} chassis: chassis {} not registered",
        names[1], names[1]
    );
    assert!(out.contains(&wanted), "{out}");
    let (code, out, _) = ko(st, &["diagnose", "node", &names[0]]).await;
    assert_eq!(code, 0, "node 1 is still healthy: {out}");
}

#[tokio::test]
async fn missing_state_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nowhere");
    let (code, _, err) = ko(&missing, &["nbctl", "show"]).await;
    assert_ne!(code, 0);
    let file = missing.join("sandbox.json");
    assert!(
        err.contains(&format!("no sandbox state at {}", file.display())),
        "{err}"
    );
}
