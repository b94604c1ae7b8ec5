//! Typed object keys: `namespace/name` as a value with two fields, not a string parsed
//! back with `split_once('/')` wherever it is read. The text form is Kube-OVN's (its
//! IPAM keys, the `external_ids:pod` of a port, `kubectl ko` arguments); it is made and
//! read only at those edges.

use std::fmt;
use std::str::FromStr;

use kube::Resource;

/// A namespaced object's namespace and name (Go's `types.NamespacedName`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NamespacedName {
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
}

/// Text that is not `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not NAMESPACE/NAME")]
pub struct KeyError {
    /// The offending text.
    pub text: String,
}

impl NamespacedName {
    /// The key of `namespace` and `name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> NamespacedName {
        NamespacedName {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of a namespaced object (empty parts where its metadata has none).
    pub fn of<K: Resource>(object: &K) -> NamespacedName {
        let meta = object.meta();
        NamespacedName::new(
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }
}

impl fmt::Display for NamespacedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl FromStr for NamespacedName {
    type Err = KeyError;

    /// `namespace/name`, both non-empty, one `/`.
    fn from_str(text: &str) -> Result<NamespacedName, KeyError> {
        match text.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(NamespacedName::new(ns, name))
            }
            _ => Err(KeyError {
                text: text.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn round_trips_and_refuses_what_is_not_a_key() {
        let key: NamespacedName = "tour/web-static".parse().unwrap();
        assert_eq!(key, NamespacedName::new("tour", "web-static"));
        assert_eq!(key.to_string(), "tour/web-static");
        for bad in ["", "web", "/web", "tour/", "a/b/c"] {
            assert_eq!(
                bad.parse::<NamespacedName>(),
                Err(KeyError { text: bad.into() }),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn of_a_pod() {
        let mut pod = Pod::default();
        pod.metadata.namespace = Some("x".into());
        pod.metadata.name = Some("a".into());
        assert_eq!(NamespacedName::of(&pod).to_string(), "x/a");
    }
}
