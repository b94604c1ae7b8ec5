//! The `embedded-apiserver` binary: port 0, `listening on ADDR`, a
//! kubeconfig kube-rs can load, and state surviving a restart.

use super::common::within;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use std::path::Path;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

async fn start(kubeconfig: &Path, state: &Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_embedded-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--kubeconfig"])
        .arg(kubeconfig)
        .arg("--state")
        .arg(state)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = within("listening line", lines.next_line())
        .await
        .unwrap()
        .unwrap();
    let addr = line
        .strip_prefix("listening on ")
        .expect("listening on ADDR")
        .to_string();
    (child, addr)
}

async fn client(kubeconfig: &Path) -> kube::Client {
    let kc = Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn terminate(mut child: Child) {
    let pid = child.id().expect("child is running").to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let exit = within("server exit", child.wait()).await.unwrap();
    assert!(exit.success(), "server exited with {exit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_serves_and_persists_state() {
    let dir = tempfile::tempdir().unwrap();
    let (kubeconfig, state) = (dir.path().join("kubeconfig"), dir.path().join("state.json"));
    let (child, addr) = start(&kubeconfig, &state).await;
    assert!(!addr.ends_with(":0"), "a real port is reported: {addr}");
    let written = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(
        written.contains(&format!("server: http://{addr}")),
        "{written}"
    );

    let cms: Api<ConfigMap> = Api::namespaced(client(&kubeconfig).await, "default");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "kept"}, "data": {"k": "v"}})).unwrap();
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    terminate(child).await;

    let (child, _) = start(&kubeconfig, &state).await;
    let cms: Api<ConfigMap> = Api::namespaced(client(&kubeconfig).await, "default");
    let restored = cms.get("kept").await.unwrap();
    assert_eq!(restored.metadata.uid, created.metadata.uid);
    assert_eq!(
        restored.metadata.resource_version,
        created.metadata.resource_version
    );
    let next = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "next"}})).unwrap(),
        )
        .await
        .unwrap();
    let rv = |c: &ConfigMap| {
        c.metadata
            .resource_version
            .clone()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert!(
        rv(&next) > rv(&restored),
        "resourceVersion keeps increasing after a restart"
    );
    terminate(child).await;
}
