//! kube-rs `Api` verbs: list/get/create/replace/patch (all four)/delete,
//! status subresource, errors as kube-rs sees them.

use super::common::server;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::Status;
use serde_json::json;

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "app:1",
                 "env": [{"name": "A", "value": "1"}]}]}
    }))
    .unwrap()
}

fn status_of(err: kube::Error) -> Status {
    match err {
        kube::Error::Api(status) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn create_get_list_replace_delete() {
    let server = server().await;
    let client = server.kube_client().unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("a"))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    pods.create(&PostParams::default(), &pod("b"))
        .await
        .unwrap();

    let got = pods.get("a").await.unwrap();
    assert_eq!(
        got.metadata.resource_version,
        created.metadata.resource_version
    );
    let listed = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 2);
    let by_name = pods
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);

    let mut changed = got.clone();
    changed
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("tier".into(), "front".into());
    let replaced = pods
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_eq!(replaced.metadata.labels.unwrap()["tier"], "front");
    // The old copy is stale now: optimistic concurrency says 409.
    let conflict = status_of(
        pods.replace("a", &PostParams::default(), &changed)
            .await
            .unwrap_err(),
    );
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));

    pods.delete("a", &DeleteParams::default()).await.unwrap();
    let gone = status_of(pods.get("a").await.unwrap_err());
    assert_eq!((gone.code, gone.reason.as_str()), (404, "NotFound"));
    let dup = status_of(
        pods.create(&PostParams::default(), &pod("b"))
            .await
            .unwrap_err(),
    );
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    server.shutdown().await;
}

#[tokio::test]
async fn all_patch_kinds() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.kube_client().unwrap(), "default");
    pods.create(&PostParams::default(), &pod("p"))
        .await
        .unwrap();
    let pp = PatchParams::default();

    let merged = pods
        .patch(
            "p",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"m": "1"}}})),
        )
        .await
        .unwrap();
    assert_eq!(merged.metadata.labels.as_ref().unwrap()["m"], "1");

    let ops: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/labels/m", "value": "1"},
        {"op": "replace", "path": "/metadata/labels/m", "value": "2"}
    ]))
    .unwrap();
    let jsoned = pods.patch("p", &pp, &Patch::Json::<()>(ops)).await.unwrap();
    assert_eq!(jsoned.metadata.labels.as_ref().unwrap()["m"], "2");

    let strategic =
        json!({"spec": {"containers": [{"name": "app", "env": [{"name": "B", "value": "2"}]}]}});
    let s = pods
        .patch("p", &pp, &Patch::Strategic(strategic))
        .await
        .unwrap();
    let env = s.spec.unwrap().containers[0].env.clone().unwrap();
    assert_eq!(env.len(), 2, "env merged by name: {env:?}");

    server.shutdown().await;
}

#[tokio::test]
async fn server_side_apply_and_status() {
    let server = server().await;
    let pods: Api<Pod> = Api::namespaced(server.kube_client().unwrap(), "default");
    pods.create(&PostParams::default(), &pod("p"))
        .await
        .unwrap();
    let pp = PatchParams::default();
    let apply = PatchParams::apply("test-manager");
    let applied = pods
        .patch(
            "p",
            &apply,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"owner": "test"}}})),
        )
        .await
        .unwrap();
    let managers: Vec<String> = applied
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(
        managers.contains(&"test-manager".to_string()),
        "{managers:?}"
    );
    let other = PatchParams::apply("someone-else");
    let conflict = pods
        .patch(
            "p",
            &other,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"owner": "else"}}})),
        )
        .await
        .unwrap_err();
    assert_eq!(status_of(conflict).reason, "Conflict");
    let forced = pods
        .patch(
            "p",
            &other.force(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "annotations": {"owner": "else"}}})),
        )
        .await
        .unwrap();
    assert_eq!(forced.metadata.annotations.unwrap()["owner"], "else");

    let status = pods
        .patch_status(
            "p",
            &pp,
            &Patch::Merge(json!({"status": {"phase": "Running", "podIP": "10.0.0.5"}})),
        )
        .await
        .unwrap();
    assert_eq!(status.status.unwrap().pod_ip.as_deref(), Some("10.0.0.5"));
    server.shutdown().await;
}

#[tokio::test]
async fn namespaces_and_generate_name() {
    let server = server().await;
    let client = server.kube_client().unwrap();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let cm: ConfigMap =
        serde_json::from_value(json!({"metadata": {"generateName": "cfg-"}})).unwrap();
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let name = created.metadata.name.unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");

    let missing: Api<ConfigMap> = Api::namespaced(client.clone(), "no-such-ns");
    let err = status_of(
        missing
            .create(&PostParams::default(), &cm)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 404);

    // Deleting the namespace takes its contents with it.
    namespaces
        .delete("team-a", &DeleteParams::default())
        .await
        .unwrap();
    assert!(Api::<ConfigMap>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
    server.shutdown().await;
}
