//! The four PATCH flavours kube-apiserver accepts, chosen by `Content-Type`:
//!
//! | content type | semantics |
//! |---|---|
//! | `application/json-patch+json` | RFC 6902 operation list (`add`, `remove`, `replace`, `move`, `copy`, `test`) |
//! | `application/merge-patch+json` | RFC 7386: objects merge, `null` deletes, everything else replaces |
//! | `application/strategic-merge-patch+json` | merge patch, but lists of built-in kinds merge by key ([`strategic`]) |
//! | `application/apply-patch+yaml` | server-side apply ([`apply`]); kubectl and kube-rs send JSON, a YAML subset |
//!
//! Every function here is pure: it takes the stored object and returns the
//! patched one, so a failed patch cannot change what is stored.

pub mod apply;
pub mod fields;
pub mod strategic;

use crate::error::{ApiError, Reason};
use serde_json::Value;

/// The patch flavour, parsed from the request's `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// RFC 6902.
    Json,
    /// RFC 7386.
    Merge,
    /// Kubernetes strategic merge patch.
    Strategic,
    /// Server-side apply.
    Apply,
}

impl PatchType {
    /// Maps a `Content-Type` header value (parameters ignored).
    pub fn from_content_type(content_type: &str) -> Result<Self, ApiError> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(PatchType::Apply),
            other => Err(ApiError::new(
                Reason::UnsupportedMediaType,
                format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other:?})"),
            )),
        }
    }
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    let Value::Object(patch_map) = patch else {
        return patch.clone();
    };
    let mut result = match target {
        Value::Object(m) => m.clone(),
        _ => serde_json::Map::new(),
    };
    for (key, value) in patch_map {
        if value.is_null() {
            result.remove(key);
        } else {
            let merged = merge_patch(result.get(key).unwrap_or(&Value::Null), value);
            result.insert(key.clone(), merged);
        }
    }
    Value::Object(result)
}

/// RFC 6902 JSON patch; a failed operation (including `test`) is a 422.
///
/// Like kube-apiserver (evanphx/json-patch), a `test` for `null` passes when
/// the path does not exist: kube-rs's finalizer helper relies on it
/// (`test /metadata/finalizers == null` before adding the first finalizer).
pub fn json_patch(
    target: &Value,
    patch: &Value,
    kind: &str,
    name: &str,
) -> Result<Value, ApiError> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
    let mut doc = target.clone();
    for op in ops.0 {
        if let json_patch::PatchOperation::Test(test) = &op {
            if test.value.is_null() && doc.pointer(test.path.as_str()).is_none_or(Value::is_null) {
                continue;
            }
        }
        json_patch::patch(&mut doc, &[op]).map_err(|e| {
            let mut err = ApiError::invalid(kind, name, "patch", e.to_string());
            err.message =
                format!("the server rejected our request due to an error in our request: {e}");
            err
        })?;
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_rfc7386_examples() {
        let target = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        let patch = json!({"a": "z", "c": {"f": null}, "l": [3]});
        assert_eq!(
            merge_patch(&target, &patch),
            json!({"a": "z", "c": {"d": "e"}, "l": [3]})
        );
    }

    #[test]
    fn json_patch_test_failure_is_invalid() {
        let target = json!({"metadata": {"finalizers": ["a"]}});
        let patch = json!([{"op": "test", "path": "/metadata/finalizers/0", "value": "b"}]);
        let err = json_patch(&target, &patch, "ConfigMap", "x").unwrap_err();
        assert_eq!(err.reason, Reason::Invalid);
        let absent = json!([{"op": "test", "path": "/metadata/labels", "value": null},
                            {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]);
        assert_eq!(
            json_patch(&target, &absent, "ConfigMap", "x").unwrap()["metadata"]["labels"]["a"],
            "b"
        );
        let ok = json!([{"op": "remove", "path": "/metadata/finalizers/0"}]);
        assert_eq!(
            json_patch(&target, &ok, "ConfigMap", "x").unwrap(),
            json!({"metadata": {"finalizers": []}})
        );
    }

    #[test]
    fn content_types() {
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8").unwrap(),
            PatchType::Merge
        );
        assert!(PatchType::from_content_type("text/plain").is_err());
    }
}
