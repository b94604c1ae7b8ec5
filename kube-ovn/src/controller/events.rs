//! Kubernetes Events about the objects the controller judges, in the core/v1 form
//! Kube-OVN's `record.EventRecorder` writes (`source.component = kube-ovn-controller`).
//! Cluster-scoped objects (nodes, IPPools, IP objects) get their Events in `default`,
//! as client-go's recorder does.

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::{Client, Resource, ResourceExt};

/// The component Kube-OVN's controller names in its Events.
pub const COMPONENT: &str = "kube-ovn-controller";

/// `Normal` or `Warning`, as core/v1 spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Something went as expected.
    Normal,
    /// Something needs a look.
    Warning,
}

impl EventKind {
    fn as_str(self) -> &'static str {
        match self {
            EventKind::Normal => "Normal",
            EventKind::Warning => "Warning",
        }
    }
}

/// A reference to `object` for an Event's `involvedObject`.
pub fn reference_to<K>(object: &K) -> ObjectReference
where
    K: Resource<DynamicType = ()>,
{
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: object.meta().name.clone(),
        namespace: object.meta().namespace.clone(),
        uid: object.meta().uid.clone(),
        resource_version: object.meta().resource_version.clone(),
        field_path: None,
    }
}

/// Records one Event about `object`. A failure is logged, not returned: an Event is
/// a report, and losing one must not fail the work it reports on.
pub async fn record<K>(client: &Client, object: &K, kind: EventKind, reason: &str, message: &str)
where
    K: Resource<DynamicType = ()>,
{
    let involved = reference_to(object);
    let namespace = object
        .meta()
        .namespace
        .clone()
        .unwrap_or_else(|| "default".to_owned());
    let now = k8s_openapi::jiff::Timestamp::now();
    let event = Event {
        metadata: ObjectMeta {
            // client-go's form: `<object>.<unique suffix>`
            name: Some(format!(
                "{}.{:x}",
                object.name_any(),
                now.as_nanosecond().unsigned_abs()
            )),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        involved_object: involved,
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
        type_: Some(kind.as_str().to_owned()),
        source: Some(EventSource {
            component: Some(COMPONENT.to_owned()),
            host: None,
        }),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        ..Event::default()
    };
    let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
    if let Err(err) = api.create(&PostParams::default(), &event).await {
        tracing::warn!(object = %object.name_any(), reason, error = %err, "cannot record an event");
    }
}
