//! Warning Events on pods (core `v1` Events, as Kube-OVN's recorder writes them), for
//! requests the controller refuses. Publishing is best effort: a failure is logged,
//! never fails the reconcile.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::Client;

/// The component named in Events.
pub const COMPONENT: &str = "kube-ovn-controller";
/// A static or claimed address cannot be had (Kube-OVN's reason).
pub const ACQUIRE_ADDRESS_FAILED: &str = "AcquireAddressFailed";
/// A malformed annotation or an impossible subnet/pool choice.
pub const VALIDATE_FAILED: &str = "ValidatePodNetworkFailed";
/// Two live pods claimed one address; this one lost it.
pub const ADDRESS_CONFLICT: &str = "AddressConflict";

/// Publishes a Warning Event about `pod`.
pub async fn warn(client: &Client, pod: &Pod, reason: &str, message: &str) {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let now = k8s_openapi::jiff::Timestamp::now();
    let event = Event {
        metadata: ObjectMeta {
            name: Some(format!("{name}.{:x}", now.as_nanosecond())),
            namespace: Some(namespace.clone()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            uid: pod.metadata.uid.clone(),
            resource_version: pod.metadata.resource_version.clone(),
            ..Default::default()
        },
        reason: Some(reason.into()),
        message: Some(message.into()),
        type_: Some("Warning".into()),
        source: Some(EventSource {
            component: Some(COMPONENT.into()),
            ..Default::default()
        }),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        ..Default::default()
    };
    let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
    if let Err(err) = api.create(&PostParams::default(), &event).await {
        tracing::warn!(pod = %name, %namespace, reason, error = %err, "publishing an event failed");
    }
}
