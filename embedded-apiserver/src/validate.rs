//! Request-body validation shared by create, update and patch: the body must
//! be an object of the right `apiVersion`/`kind`, and the name must be a valid
//! DNS-1123 label or subdomain (which one depends on the kind, as in
//! kube-apiserver: Namespaces and Services are labels because their names end
//! up in DNS names of their own).

use crate::error::ApiError;
use crate::registry::ResourceType;
use serde_json::Value;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character \
(e.g. 'example.com', regex used for validation is \
'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric \
characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name', \
or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// Whether `s` is an RFC 1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, ≤ 63).
pub fn is_dns1123_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// Whether `s` is an RFC 1123 subdomain (dot-separated labels, ≤ 253).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

fn name_is_label(rt: &ResourceType) -> bool {
    rt.group.is_empty() && matches!(rt.plural.as_str(), "namespaces" | "services")
}

/// Checks the object name for `rt`'s rules; a 422 naming the field otherwise.
pub fn check_name(rt: &ResourceType, name: &str) -> Result<(), ApiError> {
    let (ok, msg) = if name_is_label(rt) {
        (is_dns1123_label(name), LABEL_MSG)
    } else {
        (is_dns1123_subdomain(name), SUBDOMAIN_MSG)
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &rt.kind,
            name,
            "metadata.name",
            format!("Invalid value: {name:?}: {msg}"),
        ))
    }
}

/// Checks that a request body is an object whose `apiVersion`/`kind` (when
/// given) match the resource it was sent to. CRDs accept any served version
/// of their group.
pub fn check_type(rt: &ResourceType, body: &Value, same_group_ok: bool) -> Result<(), ApiError> {
    if !body.is_object() {
        return Err(ApiError::bad_request(format!(
            "the body of the request is not a {} object",
            rt.kind
        )));
    }
    if let Some(av) = body.get("apiVersion") {
        let av = av.as_str().unwrap_or_default();
        let expected = rt.api_version();
        let group_of = |a: &str| crate::registry::split_group_version(a).0.to_string();
        let ok = av == expected || (same_group_ok && group_of(av) == rt.group);
        if !ok {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({expected})"
            )));
        }
    }
    if let Some(kind) = body.get("kind") {
        let kind = kind.as_str().unwrap_or_default();
        if kind != rt.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                rt.kind
            )));
        }
    }
    if let Some(meta) = body.get("metadata") {
        if !meta.is_object() {
            return Err(ApiError::bad_request("metadata must be an object"));
        }
    }
    Ok(())
}

/// Labels and annotations must be string maps.
pub fn check_metadata_maps(rt: &ResourceType, name: &str, body: &Value) -> Result<(), ApiError> {
    for field in ["labels", "annotations"] {
        match body["metadata"].get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) if m.values().all(Value::is_string) => {}
            Some(_) => {
                return Err(ApiError::invalid(
                    &rt.kind,
                    name,
                    &format!("metadata.{field}"),
                    "Invalid value: must be a map of string to string",
                ))
            }
        }
    }
    Ok(())
}

/// kube-apiserver's `ValidateNoNewFinalizers`: an object being deleted may lose
/// finalizers but not gain any, so a controller that arrives late cannot hold up a
/// deletion it never took part in.
pub fn check_no_new_finalizers(
    rt: &ResourceType,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), ApiError> {
    if old["metadata"].get("deletionTimestamp").is_none() {
        return Ok(());
    }
    let had = old["metadata"]["finalizers"].as_array();
    let extra: Vec<&str> = new["metadata"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|f| !had.is_some_and(|h| h.iter().any(|o| o.as_str() == Some(f))))
        .collect();
    if extra.is_empty() {
        return Ok(());
    }
    let quoted: Vec<String> = extra.iter().map(|f| format!("{f:?}")).collect();
    Err(ApiError::forbidden_field(
        &rt.kind,
        name,
        "metadata.finalizers",
        format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
            quoted.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        assert!(is_dns1123_label("a-1"));
        assert!(!is_dns1123_label("A"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label("a.b"));
        assert!(is_dns1123_subdomain("a.b-c.d"));
        assert!(!is_dns1123_subdomain("a..b"));
        assert!(!is_dns1123_subdomain("bad_name"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
    }
}
