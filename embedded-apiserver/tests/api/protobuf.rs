//! Protobuf over HTTP as client-go speaks it: bodies in, and answers out
//! for a client whose `Accept` names only protobuf.

use super::common::server;
use embedded_apiserver::protobuf;
use http_body_util::BodyExt;
use serde_json::{json, Value};

const PB: &str = "application/vnd.kubernetes.protobuf";

async fn call(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, String, Vec<u8>) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", PB)
        .header("Accept", PB)
        .body(body)
        .unwrap();
    let resp = client.send(req.map(Into::into)).await.unwrap();
    let code = resp.status().as_u16();
    let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (code, ct, bytes)
}

#[tokio::test]
async fn protobuf_in_and_out_for_a_client_that_speaks_only_protobuf() {
    let server = server().await;
    let client = server.kube_client().unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "settings"}, "data": {"mode": "fast"}});
    let body = protobuf::from_json(&cm).unwrap();
    let (code, ct, created) = call(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        body,
    )
    .await;
    assert_eq!((code, ct.as_str()), (201, PB));
    let created = protobuf::to_json(&created).unwrap();
    assert_eq!(created["data"], json!({"mode": "fast"}));
    assert!(
        created["metadata"]["uid"].is_string(),
        "server-set fields come back"
    );

    let (code, _, list) = call(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let list = protobuf::to_json(&list).unwrap();
    assert_eq!(list["kind"], "ConfigMapList");
    let names: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["metadata"]["name"])
        .collect();
    assert_eq!(names, [&json!("settings")]);

    // Errors are protobuf Status objects.
    let (code, ct, status) = call(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps/nope",
        vec![],
    )
    .await;
    assert_eq!((code, ct.as_str()), (404, PB));
    let status = protobuf::to_json(&status).unwrap();
    assert_eq!(status["reason"], "NotFound");
    assert_eq!(status["code"], 404);

    // A kind this server has no protobuf mapping for (CRDs, custom
    // resources) is 406 Not Acceptable, not a wrong body.
    let (code, _, _) = call(
        &client,
        "GET",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        vec![],
    )
    .await;
    assert_eq!(code, 406);
}
