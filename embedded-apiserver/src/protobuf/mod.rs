//! Protobuf request bodies, as kubectl and client-go send them for the
//! built-in kinds (`Content-Type: application/vnd.kubernetes.protobuf`):
//! the `k8s\0` magic, then a `runtime.Unknown` envelope naming the
//! apiVersion and kind around the encoded object. Decoding is k8s-pb's
//! (prost); [`json`] and the generated impls turn the message into the JSON
//! the store keeps, with the field names of the JSON API.

#[allow(missing_docs)]
mod generated;
mod json;

use crate::error::{ApiError, Reason};
use json::{FromJson, ToJson};
use k8s_pb::api::{apps, coordination, core, discovery, networking};
use k8s_pb::apimachinery::pkg::apis::meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{json, Value};

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

fn bad_body(what: String) -> ApiError {
    ApiError::bad_request(format!("the protobuf request body is not valid: {what}"))
}

/// Runs `$action::<T>($args)` for the k8s-pb type `T` of an apiVersion and
/// kind; anything else is 415.
macro_rules! for_kind {
    ($api_version:expr, $kind:expr, $action:ident($($arg:expr),*)) => {
        match ($api_version, $kind) {
            ("v1", "Namespace") => $action::<core::v1::Namespace>($($arg),*),
            ("v1", "NamespaceList") => $action::<core::v1::NamespaceList>($($arg),*),
            ("v1", "ConfigMap") => $action::<core::v1::ConfigMap>($($arg),*),
            ("v1", "ConfigMapList") => $action::<core::v1::ConfigMapList>($($arg),*),
            ("v1", "Secret") => $action::<core::v1::Secret>($($arg),*),
            ("v1", "SecretList") => $action::<core::v1::SecretList>($($arg),*),
            ("v1", "ServiceAccount") => $action::<core::v1::ServiceAccount>($($arg),*),
            ("v1", "ServiceAccountList") => $action::<core::v1::ServiceAccountList>($($arg),*),
            ("v1", "Service") => $action::<core::v1::Service>($($arg),*),
            ("v1", "ServiceList") => $action::<core::v1::ServiceList>($($arg),*),
            ("v1", "Pod") => $action::<core::v1::Pod>($($arg),*),
            ("v1", "PodList") => $action::<core::v1::PodList>($($arg),*),
            ("v1", "Node") => $action::<core::v1::Node>($($arg),*),
            ("v1", "NodeList") => $action::<core::v1::NodeList>($($arg),*),
            ("v1", "Endpoints") => $action::<core::v1::Endpoints>($($arg),*),
            ("v1", "EndpointsList") => $action::<core::v1::EndpointsList>($($arg),*),
            ("v1", "Event") => $action::<core::v1::Event>($($arg),*),
            ("v1", "EventList") => $action::<core::v1::EventList>($($arg),*),
            ("apps/v1", "Deployment") => $action::<apps::v1::Deployment>($($arg),*),
            ("apps/v1", "DeploymentList") => $action::<apps::v1::DeploymentList>($($arg),*),
            ("apps/v1", "ReplicaSet") => $action::<apps::v1::ReplicaSet>($($arg),*),
            ("apps/v1", "ReplicaSetList") => $action::<apps::v1::ReplicaSetList>($($arg),*),
            ("apps/v1", "DaemonSet") => $action::<apps::v1::DaemonSet>($($arg),*),
            ("apps/v1", "DaemonSetList") => $action::<apps::v1::DaemonSetList>($($arg),*),
            ("apps/v1", "StatefulSet") => $action::<apps::v1::StatefulSet>($($arg),*),
            ("apps/v1", "StatefulSetList") => $action::<apps::v1::StatefulSetList>($($arg),*),
            ("discovery.k8s.io/v1", "EndpointSlice") => $action::<discovery::v1::EndpointSlice>($($arg),*),
            ("discovery.k8s.io/v1", "EndpointSliceList") => $action::<discovery::v1::EndpointSliceList>($($arg),*),
            ("networking.k8s.io/v1", "NetworkPolicy") => $action::<networking::v1::NetworkPolicy>($($arg),*),
            ("networking.k8s.io/v1", "NetworkPolicyList") => $action::<networking::v1::NetworkPolicyList>($($arg),*),
            ("coordination.k8s.io/v1", "Lease") => $action::<coordination::v1::Lease>($($arg),*),
            ("coordination.k8s.io/v1", "LeaseList") => $action::<coordination::v1::LeaseList>($($arg),*),
            (_, "DeleteOptions") => $action::<meta::v1::DeleteOptions>($($arg),*),
            ("v1", "Status") => $action::<meta::v1::Status>($($arg),*),
            (api_version, kind) => Err(ApiError::new(
                Reason::UnsupportedMediaType,
                format!("protobuf is not supported for {kind:?} ({api_version}): use application/json"),
            )),
        }
    };
}

fn decode<M: Message + Default + ToJson>(raw: &[u8], kind: &str) -> Result<Value, ApiError> {
    M::decode(raw)
        .map(|m| m.to_json())
        .map_err(|e| bad_body(format!("{kind}: {e}")))
}

fn encode<M: Message + FromJson>(object: &Value) -> Result<Vec<u8>, ApiError> {
    Ok(M::from_json(object).encode_to_vec())
}

/// A protobuf body as the JSON object it encodes, `apiVersion` and `kind`
/// included.
pub fn to_json(body: &[u8]) -> Result<Value, ApiError> {
    let envelope = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad_body("it does not start with the k8s\\0 magic".into()))?;
    let unknown = Unknown::decode(envelope).map_err(|e| bad_body(format!("envelope: {e}")))?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let mut object = for_kind!(api_version.as_str(), kind.as_str(), decode(&raw, &kind))?;
    object["apiVersion"] = json!(api_version);
    object["kind"] = json!(kind);
    Ok(object)
}

/// A stored (JSON) object, list or Status as a protobuf body: magic,
/// `runtime.Unknown` envelope, message.
pub fn from_json(object: &Value) -> Result<Vec<u8>, ApiError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let raw = for_kind!(api_version, kind, encode(object))?;
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    Ok(body)
}

/// Whether an `Accept` header takes protobuf but no JSON (then answers
/// must be protobuf; a header that also takes JSON gets JSON).
pub fn wants_only_protobuf(accept: &str) -> bool {
    let mut protobuf = false;
    for media in accept.split(',') {
        match media.split(';').next().unwrap_or_default().trim() {
            MEDIA_TYPE => protobuf = true,
            "application/json" | "application/*" | "*/*" => return false,
            _ => {}
        }
    }
    protobuf
}

#[cfg(test)]
mod tests;
