//! Label and field selectors, as sent in `?labelSelector=` / `?fieldSelector=`.
//!
//! Label selector grammar (from `k8s.io/apimachinery/pkg/labels`), a comma
//! separated list of requirements:
//! `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`.
//! Field selectors only know `=`, `==`, `!=` on a fixed set of fields
//! (`metadata.name`, `metadata.namespace`, and `spec.nodeName` etc. per kind).

use crate::error::ApiError;
use serde_json::Value;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Exists(String),
    NotExists(String),
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut parts) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_set(key: &str, rest: &str, original: &str) -> Result<(String, Vec<String>), ApiError> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| bad_selector(original, "expected a parenthesised value list"))?;
    let values = inner.split(',').map(|v| v.trim().to_string()).collect();
    Ok((key.trim().to_string(), values))
}

fn bad_selector(selector: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement {selector:?}: {why}"))
}

fn parse_requirement(req: &str) -> Result<Requirement, ApiError> {
    let trimmed = req.trim();
    if let Some((key, rest)) = split_word(trimmed, " notin ") {
        let (k, v) = parse_set(key, rest, trimmed)?;
        return Ok(Requirement::NotIn(k, v));
    }
    if let Some((key, rest)) = split_word(trimmed, " in ") {
        let (k, v) = parse_set(key, rest, trimmed)?;
        return Ok(Requirement::In(k, v));
    }
    for (op, not) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((k, v)) = trimmed.split_once(op) {
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            check_key(&k, trimmed)?;
            return Ok(if not {
                Requirement::NotEquals(k, v)
            } else {
                Requirement::Equals(k, v)
            });
        }
    }
    if let Some(key) = trimmed.strip_prefix('!') {
        check_key(key.trim(), trimmed)?;
        return Ok(Requirement::NotExists(key.trim().to_string()));
    }
    check_key(trimmed, trimmed)?;
    Ok(Requirement::Exists(trimmed.to_string()))
}

fn split_word<'a>(s: &'a str, word: &str) -> Option<(&'a str, &'a str)> {
    s.find(word).map(|i| (&s[..i], &s[i + word.len()..]))
}

fn check_key(key: &str, original: &str) -> Result<(), ApiError> {
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if ok {
        Ok(())
    } else {
        Err(bad_selector(original, "invalid label key"))
    }
}

impl LabelSelector {
    /// Parses the query-string form; an empty string is the empty selector.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        if s.trim().is_empty() {
            return Ok(Self::default());
        }
        let requirements = split_top_level(s)
            .into_iter()
            .map(parse_requirement)
            .collect::<Result<_, _>>()?;
        Ok(LabelSelector { requirements })
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => !get(k).is_some_and(|l| vs.iter().any(|v| v == l)),
        })
    }
}

/// A parsed field selector: conjunction of `path=value` / `path!=value`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<(String, bool, String)>,
}

/// Fields every kind can be selected on, plus per-kind extras kube-apiserver
/// registers (pods by node and phase, events by involved object, ...).
fn field_supported(kind: &str, field: &str) -> bool {
    matches!(field, "metadata.name" | "metadata.namespace")
        || match kind {
            "Pod" => matches!(
                field,
                "spec.nodeName" | "status.phase" | "spec.serviceAccountName" | "status.podIP"
            ),
            "Event" => field.starts_with("involvedObject.") || field == "reason" || field == "type",
            "Secret" => field == "type",
            "Node" => field == "spec.unschedulable",
            _ => false,
        }
}

impl FieldSelector {
    /// Parses a field selector and checks its fields are selectable on `kind`.
    pub fn parse(s: &str, kind: &str) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, negate, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, true, v)
            } else if let Some((f, v)) = term.split_once("==") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once('=') {
                (f, false, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector {term:?}: expected field=value or field!=value"
                )));
            };
            let field = field.trim();
            if !field_supported(kind, field) {
                return Err(ApiError::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            terms.push((field.to_string(), negate, value.trim().to_string()));
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the object satisfies every term (a missing field reads as "").
    pub fn matches(&self, object: &Value) -> bool {
        self.terms.iter().all(|(field, negate, value)| {
            let actual = field
                .split('.')
                .try_fold(object, |v, part| v.get(part))
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            (actual == *value) != *negate
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels},
               "spec": {"nodeName": "node1"}})
    }

    #[test]
    fn label_selector_operators() {
        let p = pod(json!({"app": "web", "tier": "front"}));
        for (sel, expected) in [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (db, web)", true),
            ("app notin (db,web)", false),
            ("tier", true),
            ("!tier", false),
            ("missing!=x", true),
            ("app=web,tier in (back)", false),
            ("app in (web),!missing", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&p),
                expected,
                "{sel}"
            );
        }
    }

    #[test]
    fn bad_label_selector_is_bad_request() {
        let err = LabelSelector::parse("app in web").unwrap_err();
        assert_eq!(err.reason, crate::error::Reason::BadRequest);
    }

    #[test]
    fn field_selector_pods() {
        let p = pod(json!({}));
        let sel = FieldSelector::parse("spec.nodeName=node1,metadata.name!=b", "Pod").unwrap();
        assert!(sel.matches(&p));
        let sel = FieldSelector::parse("metadata.namespace==other", "Pod").unwrap();
        assert!(!sel.matches(&p));
        assert!(FieldSelector::parse("spec.nodeName=x", "ConfigMap").is_err());
    }
}
