//! Kubernetes Events about the objects the controller judges, in the core/v1 form
//! Kube-OVN's `record.EventRecorder` writes (`source.component = kube-ovn-controller`).
//! Cluster-scoped objects (nodes, IPPools, IP objects) get their Events in `default`,
//! as client-go's recorder does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};

/// The component Kube-OVN's controller names in its Events.
pub const COMPONENT: &str = "kube-ovn-controller";

/// `Normal` or `Warning`, as core/v1 spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

/// How long a repeat of an Event counts on the first one (client-go's
/// `EventCorrelator`: 10 minutes). Kubernetes shows such an Event once, with its
/// `count` and `lastTimestamp`, as `kubectl describe` prints "(x4 over 3s)".
pub const AGGREGATION_WINDOW: Duration = Duration::from_secs(600);

/// Distinct Events remembered for aggregation; past it, those out of the window go,
/// and if none is, all do (a repeat then starts a new Event: nothing is lost).
const REMEMBERED: usize = 4096;

/// What makes two Events one: the object, the type, the reason and the message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EventKey {
    namespace: String,
    object: String,
    kind: EventKind,
    reason: String,
    message: String,
}

/// The Event a key was recorded as.
#[derive(Debug, Clone)]
struct Recorded {
    name: String,
    count: i32,
    at: Instant,
}

/// Records Events about the objects the controller judges, as Kube-OVN's
/// `record.EventRecorder` does, repeats within [`AGGREGATION_WINDOW`] counted on the
/// first Event instead of added beside it (a refused pod is looked at on every change
/// it goes through, and each look reports the same refusal). Recording is best
/// effort: a failure is logged, never returned, as losing a report must not fail the
/// work it reports on.
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    recorded: Arc<Mutex<HashMap<EventKey, Recorded>>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self
            .recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        write!(f, "Recorder({n} events remembered)")
    }
}

impl Recorder {
    /// A recorder writing through `client`.
    pub fn new(client: Client) -> Recorder {
        Recorder {
            client,
            recorded: Arc::default(),
        }
    }

    /// Records one Event about `object`; a repeat of a recent one raises its count.
    pub async fn record<K>(&self, object: &K, kind: EventKind, reason: &str, message: &str)
    where
        K: Resource<DynamicType = ()>,
    {
        let involved = reference_to(object);
        let namespace = object
            .meta()
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let key = EventKey {
            namespace: namespace.clone(),
            object: format!(
                "{}/{}/{}",
                involved.kind.as_deref().unwrap_or_default(),
                object.name_any(),
                involved.uid.as_deref().unwrap_or_default()
            ),
            kind,
            reason: reason.to_owned(),
            message: message.to_owned(),
        };
        let api: Api<Event> = Api::namespaced(self.client.clone(), &namespace);
        let now = k8s_openapi::jiff::Timestamp::now();
        if let Some(seen) = self.repeat_of(&key) {
            let patch = serde_json::json!({
                "count": seen.count,
                "lastTimestamp": Time(now),
            });
            match api
                .patch(&seen.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return,
                // gone (Events expire): a new one is recorded below
                Err(kube::Error::Api(resp)) if resp.code == 404 => {}
                Err(err) => {
                    tracing::warn!(object = %object.name_any(), reason, error = %err, "cannot count an event again");
                    return;
                }
            }
        }
        let name = format!(
            "{}.{:x}",
            object.name_any(),
            now.as_nanosecond().unsigned_abs()
        );
        let event = Event {
            metadata: ObjectMeta {
                // client-go's form: `<object>.<unique suffix>`
                name: Some(name.clone()),
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
        match api.create(&PostParams::default(), &event).await {
            Ok(_) => self.remember(key, name),
            Err(err) => {
                tracing::warn!(object = %object.name_any(), reason, error = %err, "cannot record an event");
            }
        }
    }

    /// The Event `key` repeats, its count raised, when one was recorded within the window.
    fn repeat_of(&self, key: &EventKey) -> Option<Recorded> {
        let mut recorded = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
        let seen = recorded.get_mut(key)?;
        if seen.at.elapsed() >= AGGREGATION_WINDOW {
            recorded.remove(key);
            return None;
        }
        seen.count += 1;
        seen.at = Instant::now();
        Some(seen.clone())
    }

    fn remember(&self, key: EventKey, name: String) {
        let mut recorded = self.recorded.lock().unwrap_or_else(PoisonError::into_inner);
        if recorded.len() >= REMEMBERED {
            recorded.retain(|_, r| r.at.elapsed() < AGGREGATION_WINDOW);
            if recorded.len() >= REMEMBERED {
                recorded.clear();
            }
        }
        recorded.insert(
            key,
            Recorded {
                name,
                count: 1,
                at: Instant::now(),
            },
        );
    }
}
