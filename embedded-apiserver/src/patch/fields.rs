//! Field sets: the `fieldsV1` format of `metadata.managedFields`.
//!
//! A field set is a tree whose keys are path elements: `f:<field>` for a map
//! field, `k:<json>` for an element of a list that merges by key (the JSON
//! holds the key fields, e.g. `k:{"name":"app"}`). A leaf is `{}`. Lists
//! without a merge key (and every list of a custom resource) are atomic: the
//! whole list is one leaf. Server-side apply compares these sets between
//! field managers to find conflicts.
//!
//! Here a set is a `BTreeSet` of leaf paths; [`to_fields_v1`] and
//! [`from_fields_v1`] convert to and from the wire tree.

use crate::patch::strategic::list_merge_key;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One leaf: path elements in `fieldsV1` spelling.
pub type FieldPath = Vec<String>;
/// A set of owned leaves.
pub type FieldSet = BTreeSet<FieldPath>;

/// Metadata fields that managers own; the rest of `metadata` is the server's.
const TRACKED_METADATA: [&str; 4] = ["labels", "annotations", "finalizers", "ownerReferences"];

/// The leaves of an object (`keyed`: whether lists may merge by key, i.e.
/// whether this is a built-in kind). `apiVersion`, `kind`, server-owned
/// metadata and `status` are not tracked.
pub fn leaf_paths(object: &Value, keyed: bool) -> FieldSet {
    let mut set = FieldSet::new();
    let Value::Object(map) = object else {
        return set;
    };
    for (key, value) in map {
        match key.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                for field in TRACKED_METADATA {
                    if let Some(v) = value.get(field) {
                        let path = vec!["f:metadata".to_string(), format!("f:{field}")];
                        walk(v, field, keyed, path, &mut set);
                    }
                }
            }
            _ => walk(value, key, keyed, vec![format!("f:{key}")], &mut set),
        }
    }
    set
}

fn walk(value: &Value, field: &str, keyed: bool, path: FieldPath, set: &mut FieldSet) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                let mut child = path.clone();
                child.push(format!("f:{k}"));
                walk(v, k, keyed, child, set);
            }
        }
        Value::Array(items) if keyed && !items.is_empty() => match list_merge_key(field, items) {
            Some(key) if items.iter().all(|i| i.get(key).is_some()) => {
                for item in items {
                    let mut child = path.clone();
                    child.push(key_element(key, &item[key]));
                    walk(item, "", keyed, child, set);
                }
            }
            _ => {
                set.insert(path);
            }
        },
        _ => {
            set.insert(path);
        }
    }
}

fn key_element(key: &str, value: &Value) -> String {
    let mut m = Map::new();
    m.insert(key.to_string(), value.clone());
    format!("k:{}", Value::Object(m))
}

/// The value at a path, if present.
pub fn get_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(object, |v, elem| step(v, elem))
}

fn step<'a>(value: &'a Value, elem: &str) -> Option<&'a Value> {
    if let Some(field) = elem.strip_prefix("f:") {
        return value.get(field);
    }
    let position = find_keyed(value, elem)?;
    value.as_array()?.get(position)
}

fn find_keyed(list: &Value, elem: &str) -> Option<usize> {
    let key: Map<String, Value> = serde_json::from_str(elem.strip_prefix("k:")?).ok()?;
    list.as_array()?
        .iter()
        .position(|item| key.iter().all(|(k, v)| item.get(k) == Some(v)))
}

/// Removes the value at a path; containers emptied by the removal go too.
pub fn remove_at(object: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let Some(parent) = parents
        .iter()
        .try_fold(&mut *object, |v, elem| step_mut(v, elem))
    else {
        return;
    };
    remove_child(parent, last);
    if is_empty_container(parent) && !parents.is_empty() {
        remove_at(object, parents);
    }
}

fn step_mut<'a>(value: &'a mut Value, elem: &str) -> Option<&'a mut Value> {
    if let Some(field) = elem.strip_prefix("f:") {
        return value.get_mut(field);
    }
    let position = find_keyed(value, elem)?;
    value.as_array_mut()?.get_mut(position)
}

fn remove_child(parent: &mut Value, elem: &str) {
    if let Some(field) = elem.strip_prefix("f:") {
        if let Value::Object(m) = parent {
            m.remove(field);
        }
    } else if let Some(position) = find_keyed(parent, elem) {
        if let Value::Array(items) = parent {
            items.remove(position);
        }
    }
}

fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The `fieldsV1` tree of a set.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for elem in path {
            let entry = node
                .entry(elem.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            node = match entry {
                Value::Object(m) => m,
                _ => unreachable!("fieldsV1 nodes are objects"),
            };
        }
    }
    Value::Object(root)
}

/// The set of a `fieldsV1` tree (`.` markers are ignored).
pub fn from_fields_v1(tree: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    collect(tree, &mut Vec::new(), &mut set);
    set
}

fn collect(node: &Value, path: &mut FieldPath, set: &mut FieldSet) {
    let children: Vec<(&String, &Value)> = node
        .as_object()
        .map(|m| m.iter().filter(|(k, _)| k.as_str() != ".").collect())
        .unwrap_or_default();
    if children.is_empty() {
        if !path.is_empty() {
            set.insert(path.clone());
        }
        return;
    }
    for (k, v) in children {
        path.push(k.clone());
        collect(v, path, set);
        path.pop();
    }
}

/// `.spec.containers[name="app"].image`, as kube-apiserver prints conflicts.
pub fn display_path(path: &[String]) -> String {
    let mut out = String::new();
    for elem in path {
        if let Some(f) = elem.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = elem.strip_prefix("k:") {
            let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let parts: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("[{}]", parts.join(",")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keyed_lists_round_trip_through_fields_v1() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "1"}},
            "spec": {"containers": [{"name": "app", "image": "x"}], "tolerations": [{"key": "k"}]}});
        let set = leaf_paths(&pod, true);
        assert!(set.contains(&vec![
            "f:spec".to_string(),
            "f:containers".to_string(),
            r#"k:{"name":"app"}"#.to_string(),
            "f:image".to_string()
        ]));
        assert!(set.contains(&vec!["f:spec".to_string(), "f:tolerations".to_string()]));
        assert!(!set
            .iter()
            .any(|p| p.contains(&"f:name".to_string()) && p.len() == 2));
        assert_eq!(from_fields_v1(&to_fields_v1(&set)), set);
        let image = &set.iter().find(|p| p.last().unwrap() == "f:image").unwrap();
        assert_eq!(get_at(&pod, image), Some(&json!("x")));
        assert_eq!(display_path(image), r#".spec.containers[name="app"].image"#);
    }

    #[test]
    fn remove_prunes_emptied_parents() {
        let mut obj = json!({"spec": {"a": {"b": 1}, "c": 2}});
        remove_at(&mut obj, &["f:spec".into(), "f:a".into(), "f:b".into()]);
        assert_eq!(obj, json!({"spec": {"c": 2}}));
    }
}
