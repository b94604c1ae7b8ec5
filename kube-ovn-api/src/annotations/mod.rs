//! The `ovn.kubernetes.io/*` annotations of pods, nodes and namespaces, as typed
//! structs read from and written back into an object's annotation map.
//!
//! Kube-OVN spells its keys as `<provider>.kubernetes.io/<name>`: the default network's
//! provider is `ovn` (so `ovn.kubernetes.io/ip_address`), a Multus attachment's is
//! `<nad>.<nad-namespace>.ovn` (and `.<interface>` appended when one attachment is used
//! twice). Here the provider is a [`Provider`] value and every key is spelled once, in
//! the struct that owns it; no caller formats a key.
//!
//! Reading takes only the keys a struct owns and checks each value against Kube-OVN's
//! format (a typed [`AnnotationError`] names the key and the value); writing sets or
//! removes only those keys, so every other annotation is left as it was. `parse` stops
//! at the first malformed value; `parse_lenient` reads every well-formed key and returns
//! one error per malformed one, for a reconciler that reports each offender.

mod fields;
// the controller parses Subnet spec fields (`cidrBlock`, `gateway`) in the annotations' formats
pub use fields::AnnotationValue;
mod namespace;
mod node;
mod pod;
mod value;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

pub use namespace::{NamespaceAnnotations, SubnetCidrs, SubnetExcludeIps};
pub use node::{NodeAnnotations, ProviderNetworkNodeLabels};
pub use pod::{PodAnnotations, PodNetwork};
pub use value::{
    BgpAnnouncement, CidrPair, ExcludeIp, IpFamily, IpPair, IpPool, LossPercent, Names, NicType,
    Pair, Route, Routes,
};

/// Parses one value in its annotation format (for flags that share the format, such as
/// `--default-cidr`).
pub fn parse_value<T: fields::AnnotationValue>(text: &str) -> Result<T, String> {
    T::parse(text)
}

/// The annotation map of a Kubernetes object (`metadata.annotations`).
pub type AnnotationMap = std::collections::BTreeMap<String, String>;

/// Why an annotation (or a provider name) is not in Kube-OVN's format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnnotationError {
    /// A value does not parse as the key's type.
    #[error("annotation {key}={value:?} is malformed: {reason}")]
    Malformed {
        /// The full annotation key.
        key: String,
        /// The offending value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A provider name cannot prefix an annotation key.
    #[error("provider {provider:?} cannot name annotations: {reason}")]
    InvalidProvider {
        /// The offending provider name.
        provider: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// The network provider whose keys a [`PodNetwork`] reads: `ovn` for the default
/// network, `<nad>.<nad-namespace>.ovn` for a Multus attachment handled by Kube-OVN.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Provider(String);

/// Longest provider: the key prefix `<provider>.kubernetes.io` must be a DNS
/// subdomain (253 characters at most).
const MAX_PROVIDER_LEN: usize = 253 - ".kubernetes.io".len();

impl Provider {
    /// Kube-OVN's default provider, `ovn`.
    pub fn ovn() -> Provider {
        Provider("ovn".to_string())
    }

    /// A provider by name, checked to form a valid key prefix (lower-case letters,
    /// digits, `-` and `.`, starting and ending with a letter or digit).
    pub fn new(name: &str) -> Result<Provider, AnnotationError> {
        let invalid = |reason| AnnotationError::InvalidProvider {
            provider: name.to_string(),
            reason,
        };
        if name.is_empty() || name.len() > MAX_PROVIDER_LEN {
            return Err(invalid("must be 1 to 239 characters"));
        }
        let allowed =
            |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
        if !name.chars().all(allowed) {
            return Err(invalid(
                "only lower-case letters, digits, '-' and '.' are allowed",
            ));
        }
        let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        if !edge_ok(name.chars().next()) || !edge_ok(name.chars().last()) {
            return Err(invalid("must start and end with a letter or digit"));
        }
        Ok(Provider(name.to_string()))
    }

    /// The provider of a Multus attachment `<nad>` in namespace `<ns>` served by
    /// Kube-OVN: `<nad>.<ns>.ovn`.
    pub fn attachment(nad: &str, namespace: &str) -> Result<Provider, AnnotationError> {
        Provider::new(&format!("{nad}.{namespace}.ovn"))
    }

    /// The provider name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the default provider `ovn`.
    pub fn is_default(&self) -> bool {
        self.0 == "ovn"
    }

    /// The prefix of this provider's pod keys, `<provider>.kubernetes.io/`.
    pub(crate) fn key_prefix(&self) -> String {
        format!("{}.kubernetes.io/", self.0)
    }
}

impl Default for Provider {
    fn default() -> Self {
        Provider::ovn()
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Provider {
    type Err = AnnotationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Provider::new(s)
    }
}
