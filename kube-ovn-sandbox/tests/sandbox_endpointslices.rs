//! The sandbox's EndpointSlice controller against the embedded API server:
//! Services get slices of their selected pods with readiness and resolved
//! (named) target ports; slices follow pod readiness and deletion, and go
//! with their Service.

use embedded_apiserver::{Config, EmbeddedApiServer};
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_ovn_sandbox::endpointslices::{reconcile_endpoint_slices, SERVICE_NAME_LABEL};
use serde_json::json;

async fn make_pod(api: &Api<Pod>, name: &str, app: &str, ip: &str, ready: bool) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i",
            "ports": [{"name": "http", "containerPort": 8080}]}]},
    }))
    .unwrap();
    api.create(&PostParams::default(), &pod).await.unwrap();
    set_ready(api, name, ip, ready).await;
}

async fn set_ready(api: &Api<Pod>, name: &str, ip: &str, ready: bool) {
    let status = json!({"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

/// (ip, ready) of every endpoint of the Service's slices, sorted.
async fn endpoints(client: &kube::Client, svc: &str) -> Vec<(String, bool, i32)> {
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let list = slices
        .list(&ListParams::default().labels(&format!("{SERVICE_NAME_LABEL}={svc}")))
        .await
        .unwrap();
    let mut out = Vec::new();
    for s in list.items {
        let port = s.ports.iter().flatten().find_map(|p| p.port).unwrap_or(0);
        for e in s.endpoints.into_iter().flatten() {
            let ready = e.conditions.and_then(|c| c.ready).unwrap_or(false);
            out.push((e.addresses[0].clone(), ready, port));
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn services_get_slices_that_follow_their_pods() {
    let server = EmbeddedApiServer::start(Config::default()).await.unwrap();
    let client = server.kube_client().unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    make_pod(&pods, "web-1", "web", "10.16.0.11", true).await;
    make_pod(&pods, "web-2", "web", "10.16.0.12", false).await;
    make_pod(&pods, "db-1", "db", "10.16.0.21", true).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }))
    .unwrap();
    services.create(&PostParams::default(), &svc).await.unwrap();
    let headless: Service = serde_json::from_value(json!({
        "metadata": {"name": "external"}, "spec": {"ports": [{"port": 5432}]},
    }))
    .unwrap();
    services
        .create(&PostParams::default(), &headless)
        .await
        .unwrap();

    reconcile_endpoint_slices(&client).await.unwrap();
    let want = vec![
        ("10.16.0.11".to_string(), true, 8080),
        ("10.16.0.12".to_string(), false, 8080),
    ];
    assert_eq!(endpoints(&client, "web").await, want);
    assert!(
        endpoints(&client, "external").await.is_empty(),
        "no selector, no slice"
    );

    // Readiness flips, a pod goes: the slice follows.
    set_ready(&pods, "web-2", "10.16.0.12", true).await;
    pods.delete("web-1", &DeleteParams::default())
        .await
        .unwrap();
    reconcile_endpoint_slices(&client).await.unwrap();
    assert_eq!(
        endpoints(&client, "web").await,
        vec![("10.16.0.12".to_string(), true, 8080)]
    );

    // The Service goes: its slices go with it (they are owned by it).
    services
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    reconcile_endpoint_slices(&client).await.unwrap();
    assert!(endpoints(&client, "web").await.is_empty());
    server.shutdown().await;
}
