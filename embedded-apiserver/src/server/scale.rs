//! The `scale` subresource of Deployments, ReplicaSets and StatefulSets
//! (`autoscaling/v1` Scale), which `kubectl scale` reads and patches.

use super::handlers::ApiRequest;
use crate::error::{ApiError, Reason};
use crate::patch::{json_patch, merge_patch, PatchType};
use crate::registry::ResourceType;
use crate::store::{Part, State, WriteOptions};
use http::Method;
use serde_json::{json, Value};

/// Whether `rt` has a scale subresource.
pub fn serves(rt: &ResourceType) -> bool {
    rt.group == "apps"
        && matches!(
            rt.plural.as_str(),
            "deployments" | "replicasets" | "statefulsets"
        )
}

/// `spec.selector` as the label-selector string Scale's status carries.
fn selector_string(selector: &Value) -> String {
    let mut parts: Vec<String> = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    for req in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = req["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = req["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match req["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "DoesNotExist" => format!("!{key}"),
            _ => key.to_string(),
        });
    }
    parts.join(",")
}

/// The Scale view of a workload object.
pub fn scale_of(object: &Value) -> Value {
    let meta = &object["metadata"];
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": {"replicas": object["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {
            "replicas": object["status"]["replicas"].as_i64().unwrap_or(0),
            "selector": selector_string(&object["spec"]["selector"]),
        },
    })
}

/// GET, PUT or PATCH of `NAME/scale`.
pub fn respond(
    state: &mut State,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    req: &ApiRequest,
    opts: &WriteOptions,
) -> Result<Value, ApiError> {
    let current = scale_of(&state.get(rt, ns, name)?);
    let wanted = match req.method {
        Method::GET => return Ok(current),
        Method::PUT => serde_json::from_slice::<Value>(&req.body)
            .map_err(|e| ApiError::bad_request(format!("invalid Scale: {e}")))?,
        Method::PATCH => {
            let body: Value = serde_json::from_slice(&req.body)
                .map_err(|e| ApiError::bad_request(format!("invalid patch: {e}")))?;
            match PatchType::from_content_type(&req.content_type)? {
                PatchType::Json => json_patch(&current, &body, "Scale", name)?,
                _ => merge_patch(&current, &body),
            }
        }
        _ => {
            return Err(ApiError::new(
                Reason::MethodNotAllowed,
                format!("{} is not allowed on {name}/scale", req.method),
            ))
        }
    };
    let replicas = wanted["spec"]["replicas"]
        .as_i64()
        .filter(|r| *r >= 0 && *r <= i64::from(i32::MAX))
        .ok_or_else(|| {
            ApiError::invalid(
                &rt.kind,
                name,
                "spec.replicas",
                format!(
                    "{} must be a non-negative integer",
                    wanted["spec"]["replicas"]
                ),
            )
        })?;
    let mut patch = json!({"spec": {"replicas": replicas}});
    if let Some(rv) = wanted["metadata"]["resourceVersion"]
        .as_str()
        .filter(|rv| !rv.is_empty())
    {
        patch["metadata"] = json!({"resourceVersion": rv});
    }
    let updated = state.patch(rt, ns, name, PatchType::Merge, &patch, Part::Main, opts)?;
    Ok(scale_of(&updated))
}
