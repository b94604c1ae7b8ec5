//! The CNI error result, `{cniVersion, code, msg, details}`.
//!
//! A plugin that fails prints this object on **stdout** and exits non-zero (stderr is for
//! logs). Codes 0-99 are reserved for the spec; 100 and above are plugin-specific.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An error code of the CNI spec, or a plugin-specific one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// 1: incompatible CNI version.
    IncompatibleCniVersion,
    /// 2: unsupported field in the network configuration (message names key and value).
    UnsupportedField,
    /// 3: container unknown or does not exist (the runtime need not clean up).
    UnknownContainer,
    /// 4: invalid necessary environment variables (message names them).
    InvalidEnvironmentVariables,
    /// 5: I/O failure, e.g. reading stdin.
    IoFailure,
    /// 6: failed to decode content, e.g. JSON.
    DecodingFailure,
    /// 7: invalid network configuration.
    InvalidNetworkConfig,
    /// 11: try again later; the condition is transient.
    TryAgainLater,
    /// 50: STATUS: the plugin is not available (cannot service ADD).
    PluginNotAvailable,
    /// 51: STATUS: not available, and existing containers may have limited connectivity.
    PluginNotAvailableLimitedConnectivity,
    /// A code in 0-99 the spec does not (yet) define.
    Reserved(u32),
    /// A plugin-specific code, 100 and above (the Go skeleton uses 999 for internal errors).
    Plugin(u32),
}

impl ErrorCode {
    /// The code the reference skeleton uses for errors that are not CNI errors.
    pub const INTERNAL: ErrorCode = ErrorCode::Plugin(999);

    /// The numeric value on the wire.
    pub fn as_u32(self) -> u32 {
        match self {
            ErrorCode::IncompatibleCniVersion => 1,
            ErrorCode::UnsupportedField => 2,
            ErrorCode::UnknownContainer => 3,
            ErrorCode::InvalidEnvironmentVariables => 4,
            ErrorCode::IoFailure => 5,
            ErrorCode::DecodingFailure => 6,
            ErrorCode::InvalidNetworkConfig => 7,
            ErrorCode::TryAgainLater => 11,
            ErrorCode::PluginNotAvailable => 50,
            ErrorCode::PluginNotAvailableLimitedConnectivity => 51,
            ErrorCode::Reserved(n) | ErrorCode::Plugin(n) => n,
        }
    }
}

impl From<u32> for ErrorCode {
    fn from(n: u32) -> Self {
        match n {
            1 => ErrorCode::IncompatibleCniVersion,
            2 => ErrorCode::UnsupportedField,
            3 => ErrorCode::UnknownContainer,
            4 => ErrorCode::InvalidEnvironmentVariables,
            5 => ErrorCode::IoFailure,
            6 => ErrorCode::DecodingFailure,
            7 => ErrorCode::InvalidNetworkConfig,
            11 => ErrorCode::TryAgainLater,
            50 => ErrorCode::PluginNotAvailable,
            51 => ErrorCode::PluginNotAvailableLimitedConnectivity,
            n if n >= 100 => ErrorCode::Plugin(n),
            n => ErrorCode::Reserved(n),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_u32())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.as_u32())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        u32::deserialize(deserializer).map(ErrorCode::from)
    }
}

/// The error object a plugin prints on failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct CniError {
    /// The version of the configuration being answered; may be empty (Go's type omits it).
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub cni_version: String,
    /// What kind of failure.
    pub code: ErrorCode,
    /// A short message.
    #[serde(default)]
    pub msg: String,
    /// Longer details, e.g. the offending value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub details: String,
}

impl CniError {
    /// An error with a message and no details.
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> Self {
        CniError {
            cni_version: String::new(),
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    /// Adds details.
    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = details.into();
        self
    }

    /// Sets the version of the answer.
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.cni_version = version.into();
        self
    }

    /// The JSON printed on stdout.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("error object always serializes")
    }
}

impl fmt::Display for CniError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CNI error {}: {}", self.code, self.msg)?;
        if !self.details.is_empty() {
            write!(f, "; {}", self.details)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for n in [1, 2, 3, 4, 5, 6, 7, 11, 50, 51, 8, 99, 100, 999] {
            assert_eq!(ErrorCode::from(n).as_u32(), n);
        }
        assert_eq!(ErrorCode::from(8), ErrorCode::Reserved(8));
        assert_eq!(ErrorCode::from(100), ErrorCode::Plugin(100));
    }

    #[test]
    fn wire_format() {
        let e = CniError::new(ErrorCode::InvalidEnvironmentVariables, "missing")
            .with_details("CNI_IFNAME")
            .with_version("1.0.0");
        let json = e.to_json();
        assert_eq!(
            json,
            r#"{"cniVersion":"1.0.0","code":4,"msg":"missing","details":"CNI_IFNAME"}"#
        );
        assert_eq!(serde_json::from_str::<CniError>(&json).unwrap(), e);
        let go_style: CniError = serde_json::from_str(r#"{"code":7,"msg":"x"}"#).unwrap();
        assert_eq!(go_style.code, ErrorCode::InvalidNetworkConfig);
        assert_eq!(go_style.to_string(), "CNI error 7: x");
    }
}
