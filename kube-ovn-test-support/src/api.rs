//! The embedded API server as the controller's tests need it: started, with our CRDs.

use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::Client;

/// A fresh embedded API server holding every `kubeovn.io` CRD of this crate, and a
/// client for it.
pub async fn api_server_with_crds() -> (Handle, Client) {
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.kube_client().expect("a client");
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in kube_ovn_api::crd::crds() {
        crd_api.create(&PostParams::default(), &crd).await.unwrap();
    }
    (server, client)
}

/// A pod of one container and nothing else but `annotations` (none when empty): what
/// a test creates for the controller to reconcile.
pub fn plain_pod(
    namespace: &str,
    name: &str,
    annotations: std::collections::BTreeMap<String, String>,
) -> k8s_openapi::api::core::v1::Pod {
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
    Pod {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "app".into(),
                image: Some("busybox".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

/// A Node with `annotations` and, when given, its `InternalIP` in the status (which
/// a create does not store: the status subresource takes it).
pub fn node_object(
    name: &str,
    annotations: std::collections::BTreeMap<String, String>,
    internal_ip: Option<&str>,
) -> k8s_openapi::api::core::v1::Node {
    use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeStatus};
    Node {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: None,
        status: internal_ip.map(|ip| NodeStatus {
            addresses: Some(vec![NodeAddress {
                type_: "InternalIP".into(),
                address: ip.into(),
            }]),
            ..Default::default()
        }),
    }
}

/// The annotations of a node whose join port the controller allocated `join_ip`.
pub fn joined_node_annotations(
    name: &str,
    join_ip: &str,
) -> std::collections::BTreeMap<String, String> {
    let mut annotations = std::collections::BTreeMap::new();
    kube_ovn_api::annotations::NodeAnnotations {
        allocated: Some(true),
        ip_address: Some(kube_ovn_api::annotations::IpPair::v4(
            join_ip.parse().unwrap(),
        )),
        logical_switch: Some("join".into()),
        port_name: Some(format!("node-{name}")),
        ..Default::default()
    }
    .write_into(&mut annotations);
    annotations
}
