//! Strategic merge patch for built-in kinds.
//!
//! Like a JSON merge patch, except that some lists merge element-wise by a
//! *merge key* (`patchMergeKey` in the Kubernetes Go types): containers,
//! volumes, env and the like by `name`, container ports by `containerPort`,
//! service ports by `port`, conditions by `type`, volume mounts by
//! `mountPath`. `metadata.finalizers` merges as a set. Directives:
//!
//! * `{"$patch": "delete", <key>: ..}` in a list removes that element;
//!   `{"$patch": "replace"}` in a list replaces the whole list;
//! * `"$patch": "replace"` / `"delete"` in a map replaces / removes the map;
//! * `$retainKeys` keeps only the listed keys;
//! * `$deleteFromPrimitiveList/<field>` removes values from a primitive list;
//! * `$setElementOrder/<field>` (sent by kubectl) only orders; it is accepted
//!   and ignored.
//!
//! Custom resources have no Go struct tags: kube-apiserver rejects strategic
//! patches for them, and [`crate::patch`] callers fall back to merge patch.

use crate::error::ApiError;
use serde_json::{Map, Value};

/// The merge key of a list field of a built-in kind, judged by the field
/// name and, for `ports`, by what the elements look like.
pub fn list_merge_key(field: &str, items: &[Value]) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "readinessGates" => Some("name"),
        "ports" => {
            if items.iter().any(|i| i.get("containerPort").is_some()) {
                Some("containerPort")
            } else {
                Some("port")
            }
        }
        "conditions" => Some("type"),
        "volumeMounts" => Some("mountPath"),
        "ownerReferences" => Some("uid"),
        "addresses" if items.iter().all(|i| i.get("type").is_some()) => Some("type"),
        _ => None,
    }
}

/// Lists of scalars that merge as sets rather than being replaced.
fn is_set_list(field: &str) -> bool {
    field == "finalizers"
}

/// Applies a strategic merge patch to `target`.
pub fn strategic_merge(target: &Value, patch: &Value) -> Result<Value, ApiError> {
    match merge_map(target, patch)? {
        Some(v) => Ok(v),
        None => Ok(Value::Object(Map::new())),
    }
}

/// Merges a patch map into a value; `None` means "delete this map".
fn merge_map(target: &Value, patch: &Value) -> Result<Option<Value>, ApiError> {
    let Value::Object(patch_map) = patch else {
        return Ok(Some(patch.clone()));
    };
    match patch_map.get("$patch").and_then(Value::as_str) {
        Some("delete") => return Ok(None),
        Some("replace") => {
            let mut replaced = patch_map.clone();
            replaced.remove("$patch");
            return Ok(Some(Value::Object(replaced)));
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unknown patch directive $patch: {other}"
            )))
        }
        None => {}
    }
    let mut result = match target {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    for (key, value) in patch_map {
        if key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(list)), Value::Array(remove)) = (result.get_mut(field), value)
            {
                list.retain(|v| !remove.contains(v));
            }
            continue;
        }
        if key == "$retainKeys" {
            let keep: Vec<&str> = value
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            result.retain(|k, _| keep.contains(&k.as_str()) || patch_map.contains_key(k));
            continue;
        }
        merge_field(&mut result, key, value)?;
    }
    Ok(Some(Value::Object(result)))
}

fn merge_field(result: &mut Map<String, Value>, key: &str, value: &Value) -> Result<(), ApiError> {
    let current = result.get(key).cloned().unwrap_or(Value::Null);
    let merged = match (value, &current) {
        (Value::Null, _) => None,
        (Value::Object(_), _) => merge_map(&current, value)?,
        (Value::Array(patch_items), Value::Array(items)) => {
            Some(Value::Array(merge_list(key, items, patch_items)?))
        }
        (Value::Array(patch_items), _) => {
            // No list yet: drop directives and take the patch's elements.
            Some(Value::Array(merge_list(key, &[], patch_items)?))
        }
        _ => Some(value.clone()),
    };
    match merged {
        Some(v) => result.insert(key.to_string(), v),
        None => result.remove(key),
    };
    Ok(())
}

fn merge_list(field: &str, items: &[Value], patch_items: &[Value]) -> Result<Vec<Value>, ApiError> {
    let replace = patch_items
        .iter()
        .any(|p| p.get("$patch").and_then(Value::as_str) == Some("replace"));
    let plain: Vec<Value> = patch_items
        .iter()
        .filter(|p| p.get("$patch").and_then(Value::as_str) != Some("replace"))
        .cloned()
        .collect();
    if replace {
        return Ok(plain);
    }
    if is_set_list(field) {
        let mut out = items.to_vec();
        out.extend(plain.into_iter().filter(|p| !items.contains(p)));
        return Ok(out);
    }
    let all: Vec<Value> = items.iter().chain(plain.iter()).cloned().collect();
    let Some(merge_key) = list_merge_key(field, &all) else {
        return Ok(plain);
    };
    let mut out = items.to_vec();
    for patch_item in plain {
        let key_value = patch_item.get(merge_key).cloned().ok_or_else(|| {
            ApiError::bad_request(format!(
                "map: {patch_item} does not contain declared merge key: {merge_key}"
            ))
        })?;
        let position = out
            .iter()
            .position(|i| i.get(merge_key) == Some(&key_value));
        let delete = patch_item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                out.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => match merge_map(&out[i], &patch_item)? {
                Some(v) => out[i] = v,
                None => {
                    out.remove(i);
                }
            },
            (None, false) => out.push(merge_map(&Value::Null, &patch_item)?.unwrap_or(patch_item)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p", "finalizers": ["a"]},
            "spec": {"containers": [
                {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}],
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                {"name": "side", "image": "side:1"}
            ]}
        })
    }

    #[test]
    fn containers_merge_by_name() {
        let patch = json!({"spec": {"containers": [{"name": "app", "image": "app:2",
            "env": [{"name": "B", "value": "3"}, {"name": "C", "value": "4"}]}]}});
        let out = strategic_merge(&pod(), &patch).unwrap();
        let containers = out["spec"]["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 2);
        assert_eq!(containers[0]["image"], "app:2");
        assert_eq!(containers[0]["ports"], json!([{"containerPort": 80}]));
        assert_eq!(
            containers[0]["env"],
            json!([{"name": "A", "value": "1"}, {"name": "B", "value": "3"}, {"name": "C", "value": "4"}])
        );
        assert_eq!(containers[1]["name"], "side");
    }

    #[test]
    fn delete_and_replace_directives() {
        let patch = json!({"spec": {"containers": [{"name": "side", "$patch": "delete"}]}});
        let out = strategic_merge(&pod(), &patch).unwrap();
        assert_eq!(out["spec"]["containers"].as_array().unwrap().len(), 1);

        let patch = json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}});
        let out = strategic_merge(&pod(), &patch).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "only", "image": "x"}])
        );

        let patch = json!({"spec": {"$patch": "replace", "nodeName": "n"}});
        let out = strategic_merge(&pod(), &patch).unwrap();
        assert_eq!(out["spec"], json!({"nodeName": "n"}));
    }

    #[test]
    fn finalizers_merge_as_set_and_primitive_delete() {
        let patch = json!({"metadata": {"finalizers": ["b", "a"]}});
        let out = strategic_merge(&pod(), &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b"]));
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}});
        let out = strategic_merge(&out, &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    }

    #[test]
    fn missing_merge_key_is_rejected() {
        let patch = json!({"spec": {"containers": [{"image": "x"}]}});
        assert!(strategic_merge(&pod(), &patch).is_err());
    }
}
