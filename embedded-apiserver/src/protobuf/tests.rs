//! Protobuf bodies built with k8s-pb, as client-go would send them.

use super::*;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;

fn envelope<M: Message>(api_version: &str, kind: &str, object: &M) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(object.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

fn meta(name: &str) -> Option<meta::v1::ObjectMeta> {
    Some(meta::v1::ObjectMeta {
        name: Some(name.into()),
        labels: [("app".to_string(), name.to_string())].into(),
        ..Default::default()
    })
}

#[test]
fn a_secret_with_bytes() {
    let secret = core::v1::Secret {
        metadata: meta("creds"),
        data: [("password".to_string(), b"hunter2".to_vec())].into(),
        r#type: Some("Opaque".into()),
        ..Default::default()
    };
    let json = to_json(&envelope("v1", "Secret", &secret)).unwrap();
    assert_eq!(
        json,
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "creds", "labels": {"app": "creds"}},
               "data": {"password": "aHVudGVyMg=="}})
    );
}

#[test]
fn a_deployment_with_json_names_and_int_or_string() {
    let container = core::v1::Container {
        name: Some("web".into()),
        image: Some("nginx".into()),
        ports: vec![core::v1::ContainerPort {
            container_port: Some(80),
            host_ip: Some("127.0.0.1".into()),
            ..Default::default()
        }],
        resources: Some(Default::default()),
        ..Default::default()
    };
    let deployment = apps::v1::Deployment {
        metadata: meta("web"),
        spec: Some(apps::v1::DeploymentSpec {
            replicas: Some(2),
            selector: Some(meta::v1::LabelSelector {
                match_labels: [("app".to_string(), "web".to_string())].into(),
                ..Default::default()
            }),
            template: Some(core::v1::PodTemplateSpec {
                metadata: meta("web"),
                spec: Some(core::v1::PodSpec {
                    containers: vec![container],
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::v1::DeploymentStrategy {
                r#type: Some("RollingUpdate".into()),
                rolling_update: Some(apps::v1::RollingUpdateDeployment {
                    max_unavailable: Some(IntOrString {
                        r#type: Some(1),
                        int_val: None,
                        str_val: Some("25%".into()),
                    }),
                    max_surge: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(1),
                        str_val: None,
                    }),
                }),
            }),
            ..Default::default()
        }),
        status: Some(Default::default()),
    };
    let json = to_json(&envelope("apps/v1", "Deployment", &deployment)).unwrap();
    let spec = &json["spec"];
    assert_eq!(spec["replicas"], 2);
    assert_eq!(spec["selector"], json!({"matchLabels": {"app": "web"}}));
    assert_eq!(
        spec["template"]["spec"]["containers"][0],
        json!({"name": "web", "image": "nginx", "resources": {},
               "ports": [{"containerPort": 80, "hostIP": "127.0.0.1"}]})
    );
    assert_eq!(
        spec["strategy"]["rollingUpdate"],
        json!({"maxUnavailable": "25%", "maxSurge": 1})
    );
    assert_eq!(json["kind"], "Deployment");
}

/// client-go sends a pod template's zero `creationTimestamp` as an empty message (as
/// `kubectl create deployment` does): it stays unset, not 1970-01-01; a real time
/// (the epoch included) is kept.
#[test]
fn an_empty_time_is_unset_and_a_real_one_is_kept() {
    let zero = meta::v1::Time {
        seconds: None,
        nanos: None,
    };
    let mut template_meta = meta("web").unwrap();
    template_meta.creation_timestamp = Some(zero);
    let mut outer = meta("web").unwrap();
    outer.creation_timestamp = Some(meta::v1::Time {
        seconds: Some(0),
        nanos: Some(0),
    });
    let deployment = apps::v1::Deployment {
        metadata: Some(outer),
        spec: Some(apps::v1::DeploymentSpec {
            template: Some(core::v1::PodTemplateSpec {
                metadata: Some(template_meta),
                spec: None,
            }),
            ..Default::default()
        }),
        status: None,
    };
    let json = to_json(&envelope("apps/v1", "Deployment", &deployment)).unwrap();
    assert_eq!(
        json["spec"]["template"]["metadata"],
        json!({"name": "web", "labels": {"app": "web"}})
    );
    assert_eq!(
        json["metadata"]["creationTimestamp"],
        json!("1970-01-01T00:00:00Z")
    );
}

#[test]
fn bad_bodies_are_typed_errors_naming_the_problem() {
    let err = to_json(b"{\"kind\": \"ConfigMap\"}").unwrap_err();
    assert_eq!(err.reason, Reason::BadRequest);
    assert!(err.message.contains("magic"), "{err}");

    let mut truncated = envelope(
        "v1",
        "ConfigMap",
        &core::v1::ConfigMap {
            metadata: meta("a"),
            ..Default::default()
        },
    );
    truncated.truncate(truncated.len() - 3);
    let err = to_json(&truncated).unwrap_err();
    assert_eq!(err.reason, Reason::BadRequest, "{err}");

    let role = envelope(
        "rbac.authorization.k8s.io/v1",
        "Role",
        &core::v1::ConfigMap::default(),
    );
    let err = to_json(&role).unwrap_err();
    assert_eq!(err.reason, Reason::UnsupportedMediaType);
    assert!(err.message.contains("Role"), "{err}");
}

#[test]
fn stored_json_round_trips_through_protobuf() {
    let stored = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", "uid": "1234",
                     "resourceVersion": "42", "generation": 3,
                     "creationTimestamp": "2026-01-02T03:04:05Z",
                     "labels": {"app": "web"},
                     "managedFields": [{"manager": "kubectl", "operation": "Apply",
                                        "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:spec": {"f:replicas": {}}},
                                        "time": "2026-01-02T03:04:05Z"}]},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "strategy": {"type": "RollingUpdate",
                              "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx",
                                  "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                                  "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]}],
                                  "volumes": [{"name": "cfg", "configMap": {"name": "settings"}}],
                                  "podIP": null}}},
        "status": {"readyReplicas": 2}
    });
    let body = from_json(&stored).unwrap();
    assert!(body.starts_with(MAGIC));
    let mut expected = stored.clone();
    // Nulls are absence in both encodings.
    expected["spec"]["template"]["spec"]
        .as_object_mut()
        .unwrap()
        .remove("podIP");
    assert_eq!(to_json(&body).unwrap(), expected);
}

#[test]
fn only_protobuf_accept_headers_want_protobuf() {
    assert!(wants_only_protobuf("application/vnd.kubernetes.protobuf"));
    assert!(!wants_only_protobuf(
        "application/vnd.kubernetes.protobuf, application/json"
    ));
    assert!(!wants_only_protobuf("*/*"));
    assert!(!wants_only_protobuf(""));
}
