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
use json::ToJson;
use k8s_pb::api::{apps, coordination, core, discovery, networking};
use k8s_pb::apimachinery::pkg::apis::meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{json, Value};

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The four bytes every Kubernetes protobuf body starts with.
const MAGIC: &[u8] = b"k8s\0";

fn bad_body(what: String) -> ApiError {
    ApiError::bad_request(format!("the protobuf request body is not valid: {what}"))
}

fn decode<M: Message + Default + ToJson>(raw: &[u8], kind: &str) -> Result<Value, ApiError> {
    M::decode(raw)
        .map(|m| m.to_json())
        .map_err(|e| bad_body(format!("{kind}: {e}")))
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
    let mut object = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Namespace") => decode::<core::v1::Namespace>(&raw, &kind)?,
        ("v1", "ConfigMap") => decode::<core::v1::ConfigMap>(&raw, &kind)?,
        ("v1", "Secret") => decode::<core::v1::Secret>(&raw, &kind)?,
        ("v1", "ServiceAccount") => decode::<core::v1::ServiceAccount>(&raw, &kind)?,
        ("v1", "Service") => decode::<core::v1::Service>(&raw, &kind)?,
        ("v1", "Pod") => decode::<core::v1::Pod>(&raw, &kind)?,
        ("v1", "Node") => decode::<core::v1::Node>(&raw, &kind)?,
        ("v1", "Endpoints") => decode::<core::v1::Endpoints>(&raw, &kind)?,
        ("v1", "Event") => decode::<core::v1::Event>(&raw, &kind)?,
        ("apps/v1", "Deployment") => decode::<apps::v1::Deployment>(&raw, &kind)?,
        ("apps/v1", "ReplicaSet") => decode::<apps::v1::ReplicaSet>(&raw, &kind)?,
        ("apps/v1", "DaemonSet") => decode::<apps::v1::DaemonSet>(&raw, &kind)?,
        ("apps/v1", "StatefulSet") => decode::<apps::v1::StatefulSet>(&raw, &kind)?,
        ("discovery.k8s.io/v1", "EndpointSlice") => {
            decode::<discovery::v1::EndpointSlice>(&raw, &kind)?
        }
        ("networking.k8s.io/v1", "NetworkPolicy") => {
            decode::<networking::v1::NetworkPolicy>(&raw, &kind)?
        }
        ("coordination.k8s.io/v1", "Lease") => decode::<coordination::v1::Lease>(&raw, &kind)?,
        (_, "DeleteOptions") => decode::<meta::v1::DeleteOptions>(&raw, &kind)?,
        _ => {
            return Err(ApiError::new(
                Reason::UnsupportedMediaType,
                format!(
                    "protobuf is not supported for {kind:?} ({api_version}): send it as application/json"
                ),
            ))
        }
    };
    object["apiVersion"] = json!(api_version);
    object["kind"] = json!(kind);
    Ok(object)
}

#[cfg(test)]
mod tests;
