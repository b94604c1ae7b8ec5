//! CNI specification versions and version negotiation.
//!
//! Every configuration and result carries a `cniVersion` string. The spec has had seven
//! releases; results come in three wire layouts:
//!
//! | versions              | result layout                                   |
//! |-----------------------|-------------------------------------------------|
//! | 0.1.0, 0.2.0          | `ip4` / `ip6` objects with per-family routes      |
//! | 0.3.0, 0.3.1, 0.4.0   | `interfaces`, `ips` (with `version`), `routes`    |
//! | 1.0.0, 1.1.0          | like 0.4.0 without `ips[].version`; 1.1 adds MTU etc. |
//!
//! Negotiation follows the reference implementation (libcni / skel): a runtime picks the
//! highest version of a configuration list's `cniVersion` + `cniVersions` it understands; a
//! plugin accepts a configuration only if its exact version string is one it supports.
//! CHECK needs at least 0.4.0, STATUS and GC at least 1.1.0.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One released version of the CNI specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum CniVersion {
    /// 0.1.0: the initial release.
    V0_1_0,
    /// 0.2.0: adds the VERSION command.
    V0_2_0,
    /// 0.3.0: rich results and plugin chaining (configuration lists).
    V0_3_0,
    /// 0.3.1: typo fixes of 0.3.0.
    V0_3_1,
    /// 0.4.0: adds CHECK and `prevResult` on DEL.
    V0_4_0,
    /// 1.0.0: rewritten spec; `ips[].version` removed.
    V1_0_0,
    /// 1.1.0: STATUS, GC, `cniVersions`, more interface and route attributes.
    V1_1_0,
}

/// The highest version this crate implements.
pub const CURRENT_VERSION: CniVersion = CniVersion::V1_1_0;

/// Every version, oldest first.
pub const ALL_VERSIONS: [CniVersion; 7] = [
    CniVersion::V0_1_0,
    CniVersion::V0_2_0,
    CniVersion::V0_3_0,
    CniVersion::V0_3_1,
    CniVersion::V0_4_0,
    CniVersion::V1_0_0,
    CniVersion::V1_1_0,
];

/// A version string that names no released CNI version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown CNI version {0:?}")]
pub struct UnknownVersion(pub String);

impl CniVersion {
    /// The version as it appears on the wire, e.g. `"0.4.0"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CniVersion::V0_1_0 => "0.1.0",
            CniVersion::V0_2_0 => "0.2.0",
            CniVersion::V0_3_0 => "0.3.0",
            CniVersion::V0_3_1 => "0.3.1",
            CniVersion::V0_4_0 => "0.4.0",
            CniVersion::V1_0_0 => "1.0.0",
            CniVersion::V1_1_0 => "1.1.0",
        }
    }

    /// Parses a `cniVersion` value. As in libcni, an empty string means 0.1.0.
    pub fn parse(s: &str) -> Result<Self, UnknownVersion> {
        if s.is_empty() {
            return Ok(CniVersion::V0_1_0);
        }
        ALL_VERSIONS
            .iter()
            .copied()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownVersion(s.to_owned()))
    }

    /// Which wire layout results of this version use.
    pub fn result_layout(self) -> ResultLayout {
        match self {
            CniVersion::V0_1_0 | CniVersion::V0_2_0 => ResultLayout::Legacy,
            CniVersion::V0_3_0 | CniVersion::V0_3_1 | CniVersion::V0_4_0 => ResultLayout::Rich,
            CniVersion::V1_0_0 | CniVersion::V1_1_0 => ResultLayout::V1,
        }
    }

    /// Whether configuration lists and `prevResult` chaining exist (0.3.0 and later).
    pub fn supports_chaining(self) -> bool {
        self >= CniVersion::V0_3_0
    }

    /// Whether the CHECK command exists (0.4.0 and later).
    pub fn supports_check(self) -> bool {
        self >= CniVersion::V0_4_0
    }

    /// Whether `prevResult` is passed to DEL (0.4.0 and later).
    pub fn supports_prev_result_on_del(self) -> bool {
        self >= CniVersion::V0_4_0
    }

    /// Whether the STATUS and GC commands exist (1.1.0 and later).
    pub fn supports_status_and_gc(self) -> bool {
        self >= CniVersion::V1_1_0
    }
}

/// The three wire layouts of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResultLayout {
    /// 0.1.0 / 0.2.0: `ip4`, `ip6`, `dns`.
    Legacy,
    /// 0.3.0 / 0.3.1 / 0.4.0: `interfaces`, `ips[]` with `version`, `routes`, `dns`.
    Rich,
    /// 1.0.0 / 1.1.0: `ips[]` without `version`; 1.1 interface and route attributes.
    V1,
}

impl fmt::Display for CniVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CniVersion {
    type Err = UnknownVersion;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CniVersion::parse(s)
    }
}

impl Serialize for CniVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for CniVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        CniVersion::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Runtime-side selection (libcni `conf.go`): from a list's `cniVersion` and `cniVersions`,
/// drop what this crate does not know and take the highest. `None` if nothing is usable.
pub fn select_list_version<'a>(
    cni_version: &'a str,
    cni_versions: impl IntoIterator<Item = &'a String>,
) -> Option<CniVersion> {
    std::iter::once(cni_version)
        .chain(cni_versions.into_iter().map(String::as_str))
        .filter_map(|s| CniVersion::parse(s).ok())
        .max()
}

/// The highest version both sides support, if any.
pub fn highest_common(ours: &[CniVersion], theirs: &[CniVersion]) -> Option<CniVersion> {
    ours.iter().copied().filter(|v| theirs.contains(v)).max()
}

/// What a plugin answers to VERSION: `{cniVersion, supportedVersions}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// The version of this answer (the reference skeleton always says 1.1.0 / its current).
    #[serde(rename = "cniVersion")]
    pub cni_version: String,
    /// Versions the plugin accepts, as strings (a plugin may list versions we do not know).
    #[serde(rename = "supportedVersions", default)]
    pub supported_versions: Vec<String>,
}

impl VersionInfo {
    /// The answer for a plugin supporting `versions`.
    pub fn new(versions: &[CniVersion]) -> Self {
        VersionInfo {
            cni_version: CURRENT_VERSION.to_string(),
            supported_versions: versions.iter().map(|v| v.to_string()).collect(),
        }
    }

    /// The known versions among `supportedVersions`. As libcni does, a 0.2.0 answer
    /// without the list means 0.1.0 and 0.2.0.
    pub fn known_versions(&self) -> Vec<CniVersion> {
        if self.supported_versions.is_empty() && self.cni_version == "0.2.0" {
            return vec![CniVersion::V0_1_0, CniVersion::V0_2_0];
        }
        self.supported_versions
            .iter()
            .filter_map(|s| CniVersion::parse(s).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display_round_trip() {
        for v in ALL_VERSIONS {
            assert_eq!(CniVersion::parse(v.as_str()), Ok(v));
        }
        assert_eq!(CniVersion::parse(""), Ok(CniVersion::V0_1_0));
        assert_eq!(
            CniVersion::parse("0.5.0"),
            Err(UnknownVersion("0.5.0".into()))
        );
    }

    #[test]
    fn list_selection_takes_highest_known() {
        let extra = vec!["1.0.0".to_string(), "9.9.9".to_string(), "0.3.1".into()];
        assert_eq!(
            select_list_version("0.4.0", &extra),
            Some(CniVersion::V1_0_0)
        );
        assert_eq!(select_list_version("2.0.0", &[]), None);
    }

    #[test]
    fn command_floors() {
        assert!(!CniVersion::V0_3_1.supports_check());
        assert!(CniVersion::V0_4_0.supports_check());
        assert!(!CniVersion::V1_0_0.supports_status_and_gc());
        assert!(CniVersion::V1_1_0.supports_status_and_gc());
    }

    #[test]
    fn version_info_legacy_default() {
        let info: VersionInfo = serde_json::from_str(r#"{"cniVersion":"0.2.0"}"#).unwrap();
        assert_eq!(
            info.known_versions(),
            vec![CniVersion::V0_1_0, CniVersion::V0_2_0]
        );
        assert_eq!(
            highest_common(&ALL_VERSIONS, &info.known_versions()),
            Some(CniVersion::V0_2_0)
        );
    }
}
