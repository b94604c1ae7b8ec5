//! `CNI_ARGS`: extra `KEY=VALUE` pairs separated by `;`, e.g.
//! `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0`.
//!
//! Kubernetes runtimes pass the pod identity here. As the reference's `LoadArgs`, a plugin
//! may reject keys it does not know unless `IgnoreUnknown` is true.

use std::fmt;

use crate::error::{CniError, ErrorCode};

/// Keys Kubernetes runtimes set.
pub const K8S_POD_NAMESPACE: &str = "K8S_POD_NAMESPACE";
/// The pod name key.
pub const K8S_POD_NAME: &str = "K8S_POD_NAME";
/// The sandbox (infra) container ID key.
pub const K8S_POD_INFRA_CONTAINER_ID: &str = "K8S_POD_INFRA_CONTAINER_ID";
/// The pod UID key.
pub const K8S_POD_UID: &str = "K8S_POD_UID";
/// The key that allows unknown keys.
pub const IGNORE_UNKNOWN: &str = "IgnoreUnknown";

/// Parsed `CNI_ARGS`, in their original order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    pairs: Vec<(String, String)>,
}

/// A malformed or unexpected `CNI_ARGS` entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgsError {
    /// An entry without `=`.
    #[error("CNI_ARGS: invalid pair {0:?}")]
    InvalidPair(String),
    /// A key the plugin does not know, without `IgnoreUnknown`.
    #[error("CNI_ARGS: unknown key {0:?}")]
    UnknownKey(String),
}

impl ArgsError {
    /// The CNI error for this (invalid environment variables, code 4).
    pub fn to_cni_error(&self) -> CniError {
        CniError::new(ErrorCode::InvalidEnvironmentVariables, self.to_string())
    }
}

impl CniArgs {
    /// Parses `K=V;K2=V2`; empty entries are skipped.
    pub fn parse(s: &str) -> Result<Self, ArgsError> {
        let mut pairs = Vec::new();
        for item in s.split(';').filter(|item| !item.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| ArgsError::InvalidPair(item.to_owned()))?;
            pairs.push((k.to_owned(), v.to_owned()));
        }
        Ok(CniArgs { pairs })
    }

    /// Arguments from pairs.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        CniArgs {
            pairs: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `key` (the last one if repeated).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// All pairs.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// Whether `IgnoreUnknown` is `1` or `true` (any case).
    pub fn ignore_unknown(&self) -> bool {
        self.get(IGNORE_UNKNOWN)
            .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
    }

    /// Fails on a key not in `known` unless `IgnoreUnknown` is set.
    pub fn check_known(&self, known: &[&str]) -> Result<(), ArgsError> {
        if self.ignore_unknown() {
            return Ok(());
        }
        match self
            .pairs
            .iter()
            .find(|(k, _)| k != IGNORE_UNKNOWN && !known.contains(&k.as_str()))
        {
            Some((k, _)) => Err(ArgsError::UnknownKey(k.clone())),
            None => Ok(()),
        }
    }

    /// The pod identity Kubernetes runtimes pass, if both namespace and name are present.
    pub fn kubernetes(&self) -> Option<K8sPod<'_>> {
        Some(K8sPod {
            namespace: self.get(K8S_POD_NAMESPACE)?,
            name: self.get(K8S_POD_NAME)?,
            infra_container_id: self.get(K8S_POD_INFRA_CONTAINER_ID),
            uid: self.get(K8S_POD_UID),
        })
    }
}

impl fmt::Display for CniArgs {
    /// Formats back to `K=V;K2=V2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.pairs.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// The pod a Kubernetes runtime is attaching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct K8sPod<'a> {
    /// `K8S_POD_NAMESPACE`.
    pub namespace: &'a str,
    /// `K8S_POD_NAME`.
    pub name: &'a str,
    /// `K8S_POD_INFRA_CONTAINER_ID`.
    pub infra_container_id: Option<&'a str>,
    /// `K8S_POD_UID`.
    pub uid: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_args() {
        let args = CniArgs::parse(
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc;FOO=x",
        )
        .unwrap();
        let pod = args.kubernetes().unwrap();
        assert_eq!((pod.namespace, pod.name), ("default", "web-0"));
        assert_eq!(pod.infra_container_id, Some("abc"));
        assert!(args.check_known(&[K8S_POD_NAME]).is_ok());
        assert_eq!(
            args.to_string(),
            "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=abc;FOO=x"
        );
    }

    #[test]
    fn unknown_and_malformed() {
        let args = CniArgs::parse("K8S_POD_NAME=a;FOO=x").unwrap();
        assert_eq!(
            args.check_known(&[K8S_POD_NAME]),
            Err(ArgsError::UnknownKey("FOO".into()))
        );
        let err = CniArgs::parse("A=1;broken").unwrap_err();
        assert_eq!(err.to_string(), "CNI_ARGS: invalid pair \"broken\"");
        assert_eq!(
            err.to_cni_error().code,
            ErrorCode::InvalidEnvironmentVariables
        );
        assert!(CniArgs::parse("").unwrap().pairs().is_empty());
    }
}
