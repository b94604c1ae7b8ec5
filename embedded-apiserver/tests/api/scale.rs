//! The `scale` subresource through kube-rs: read, patch, bad input refused
//! with nothing changed.

use super::common::server;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn deployment_scale_subresource() {
    let server = server().await;
    let api: Api<Deployment> = Api::namespaced(server.kube_client().unwrap(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &d).await.unwrap();
    let scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));

    let patch = json!({"spec": {"replicas": 5}});
    let scale = api
        .patch_scale("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(5));
    assert_eq!(api.get("web").await.unwrap().spec.replicas, Some(5));

    for bad in [
        json!({"spec": {"replicas": -1}}),
        json!({"spec": {"replicas": "many"}}),
    ] {
        let err = api
            .patch_scale("web", &PatchParams::default(), &Patch::Merge(&bad))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("spec.replicas") && text.contains("web"),
            "{text}"
        );
    }
    assert_eq!(api.get("web").await.unwrap().spec.replicas, Some(5));
}
