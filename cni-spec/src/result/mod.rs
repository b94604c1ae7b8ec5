//! Results of ADD (and `prevResult`) in all three wire layouts, and conversion between
//! any two versions following the reference implementation (`pkg/types/{020,040,100}`).
//!
//! Parsing reads `cniVersion` first and then decodes the layout that version uses, so a
//! [`CniResult`] always holds a layout that matches its version.

mod common;
mod convert;
mod legacy;
mod rich;
mod v1;

pub use common::{Dns, IpFamily, Route};
pub use convert::ConversionError;
pub use legacy::{LegacyIpConfig, LegacyResult};
pub use rich::{RichInterface, RichIpConfig, RichResult};
pub use v1::{Interface, IpConfig, V1Result};

use serde::Deserialize;

use crate::version::{CniVersion, ResultLayout, UnknownVersion};

/// A result of any version.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CniResult {
    /// 0.1.0 / 0.2.0.
    Legacy(LegacyResult),
    /// 0.3.0 / 0.3.1 / 0.4.0.
    Rich(RichResult),
    /// 1.0.0 / 1.1.0.
    V1(V1Result),
}

/// Why a result could not be parsed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultParseError {
    /// The bytes are not JSON, or not a result of the layout its version uses.
    #[error("invalid CNI result JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// `cniVersion` names no known version.
    #[error("invalid CNI result: {0}")]
    Version(#[from] UnknownVersion),
}

#[derive(Deserialize)]
struct VersionProbe {
    #[serde(rename = "cniVersion", default)]
    cni_version: Option<String>,
}

impl CniResult {
    /// Parses a result; its `cniVersion` must be present and known.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ResultParseError> {
        Self::from_slice_or(bytes, None)
    }

    /// Parses a result, taking `default` as its version when `cniVersion` is absent (as the
    /// reference does for a `prevResult`, using the configuration's version).
    pub fn from_slice_or(
        bytes: &[u8],
        default: Option<CniVersion>,
    ) -> Result<Self, ResultParseError> {
        let value: serde_json::Value = serde_json::from_slice(bytes)?;
        Self::from_value_or(value, default)
    }

    /// Parses a result from a JSON value (see [`CniResult::from_slice_or`]).
    pub fn from_value_or(
        mut value: serde_json::Value,
        default: Option<CniVersion>,
    ) -> Result<Self, ResultParseError> {
        let probe = VersionProbe::deserialize(&value)?;
        let version = match (probe.cni_version, default) {
            (Some(v), _) => CniVersion::parse(&v)?,
            (None, Some(d)) => d,
            (None, None) => CniVersion::parse("")?,
        };
        if let Some(obj) = value.as_object_mut() {
            obj.insert("cniVersion".into(), version.as_str().into());
        }
        Ok(match version.result_layout() {
            ResultLayout::Legacy => CniResult::Legacy(LegacyResult::deserialize(value)?),
            ResultLayout::Rich => CniResult::Rich(RichResult::deserialize(value)?),
            ResultLayout::V1 => CniResult::V1(V1Result::deserialize(value)?),
        })
    }

    /// The version of this result.
    pub fn version(&self) -> CniVersion {
        match self {
            CniResult::Legacy(r) => r.cni_version,
            CniResult::Rich(r) => r.cni_version,
            CniResult::V1(r) => r.cni_version,
        }
    }

    /// The result as a JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        let value = match self {
            CniResult::Legacy(r) => serde_json::to_value(r),
            CniResult::Rich(r) => serde_json::to_value(r),
            CniResult::V1(r) => serde_json::to_value(r),
        };
        value.expect("results always serialize")
    }

    /// The result as JSON text, as a plugin prints it.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// Converts to the 1.1.0 layout, the one plugins work with.
    pub fn to_current(&self) -> Result<V1Result, ConversionError> {
        match self.convert_to(crate::version::CURRENT_VERSION)? {
            CniResult::V1(r) => Ok(r),
            _ => unreachable!("1.1.0 uses the V1 layout"),
        }
    }
}

impl From<V1Result> for CniResult {
    fn from(r: V1Result) -> Self {
        CniResult::V1(r)
    }
}

impl From<RichResult> for CniResult {
    fn from(r: RichResult) -> Self {
        CniResult::Rich(r)
    }
}

impl From<LegacyResult> for CniResult {
    fn from(r: LegacyResult) -> Self {
        CniResult::Legacy(r)
    }
}

#[cfg(test)]
mod tests;
