//! The first commands a person types: `kubectl create namespace|configmap|
//! secret|deployment` and `kubectl run`, which send protobuf bodies, then
//! `kubectl get all`.

use super::common::server;
use super::kubectl::setup;
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_create_sends_protobuf_and_it_is_stored_as_json() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let Some(k) = setup(dir.path(), kubeconfig).await else {
        return;
    };
    let get = |what: &'static str| {
        let k = &k;
        async move {
            let out = k
                .ok(&["get", "-o", "json"]
                    .into_iter()
                    .chain(what.split(' '))
                    .collect::<Vec<_>>())
                .await;
            serde_json::from_str::<Value>(&out).unwrap()
        }
    };

    let out = k.ok_line("create namespace sandbox").await;
    assert!(out.contains("namespace/sandbox created"), "{out}");
    assert_eq!(get("namespace sandbox").await["status"]["phase"], "Active");

    k.ok_line(
        "create configmap settings -n sandbox --from-literal=mode=fast --from-literal=level=3",
    )
    .await;
    let cm = get("configmap settings -n sandbox").await;
    assert_eq!(
        cm["data"],
        serde_json::json!({"mode": "fast", "level": "3"})
    );

    k.ok_line("create secret generic creds -n sandbox --from-literal=password=hunter2")
        .await;
    let secret = get("secret creds -n sandbox").await;
    assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
    assert_eq!(secret["type"], "Opaque");

    k.ok_line("create deployment web -n sandbox --image=nginx:1 --replicas=2 --port=80")
        .await;
    let deploy = get("deployment web -n sandbox").await;
    assert_eq!(deploy["spec"]["replicas"], 2);
    assert_eq!(deploy["spec"]["selector"]["matchLabels"]["app"], "web");
    let container = &deploy["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx:1");
    assert_eq!(container["ports"][0]["containerPort"], 80);
    // The template's zero creationTimestamp (an empty protobuf Time) stays unset, and
    // metadata.generation is where Kubernetes keeps one: not on a ConfigMap.
    let template_meta = &deploy["spec"]["template"]["metadata"];
    assert!(
        template_meta.get("creationTimestamp").is_none(),
        "{template_meta}"
    );
    assert_eq!(deploy["metadata"]["generation"], 1);
    assert!(cm["metadata"].get("generation").is_none(), "{cm}");

    k.ok_line(
        "run shell -n sandbox --image=busybox --restart=Never --labels=role=debug -- sleep 3600",
    )
    .await;
    let pod = get("pod shell -n sandbox").await;
    assert_eq!(pod["metadata"]["labels"]["role"], "debug");
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    assert_eq!(
        pod["spec"]["containers"][0]["args"],
        serde_json::json!(["sleep", "3600"])
    );

    // What was created is there for JSON clients and for `kubectl get`.
    let out = k.ok_line("get deployments -n sandbox").await;
    assert!(
        out.lines().nth(1).unwrap_or_default().starts_with("web "),
        "{out}"
    );
    // `kubectl get all` finds its resources through the `all` discovery category.
    let out = k.ok_line("get all -n sandbox").await;
    for name in ["pod/shell", "deployment.apps/web"] {
        assert!(out.contains(name), "{name} missing from get all: {out}");
    }
    assert!(!out.contains("configmap"), "{out}");
    let err = k.fails_line("create namespace sandbox").await;
    assert!(err.contains("AlreadyExists"), "{err}");
    server.shutdown().await;
}
