//! Identifier rules shared by runtime and plugin side (libcni `pkg/utils`): container IDs
//! and network names match `^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`; interface names are non-empty,
//! at most 15 bytes (Linux `IFNAMSIZ` - 1), not `.` or `..`, without `/`, `:` or whitespace.

use crate::error::{CniError, ErrorCode};

/// An identifier that breaks the rules above.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ValidationError {
    /// The container ID is empty.
    #[error("missing containerID")]
    MissingContainerId,
    /// The container ID has characters outside `[a-zA-Z0-9_.-]` or does not start alnum.
    #[error("invalid characters in containerID {0:?}")]
    InvalidContainerId(String),
    /// The network name is empty.
    #[error("missing network name")]
    MissingNetworkName,
    /// The network name has characters outside `[a-zA-Z0-9_.-]` or does not start alnum.
    #[error("invalid characters found in network name {0:?}")]
    InvalidNetworkName(String),
    /// The interface name is empty.
    #[error("interface name is empty")]
    EmptyInterfaceName,
    /// The interface name is 16 bytes or longer.
    #[error("interface name {0:?} is too long: interface name should be less than 16 characters")]
    InterfaceNameTooLong(String),
    /// The interface name is `.` or `..`.
    #[error("interface name is . or ..")]
    InterfaceNameDots,
    /// The interface name contains `/`, `:` or whitespace.
    #[error("interface name {0:?} contains / or : or whitespace characters")]
    InterfaceNameBadCharacters(String),
}

impl ValidationError {
    /// The CNI error the reference skeleton answers with.
    pub fn to_cni_error(&self) -> CniError {
        let code = match self {
            ValidationError::MissingContainerId => ErrorCode::UnknownContainer,
            ValidationError::MissingNetworkName | ValidationError::InvalidNetworkName(_) => {
                ErrorCode::InvalidNetworkConfig
            }
            _ => ErrorCode::InvalidEnvironmentVariables,
        };
        CniError::new(code, self.to_string())
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// Checks a container ID.
pub fn validate_container_id(id: &str) -> Result<(), ValidationError> {
    if id.is_empty() {
        return Err(ValidationError::MissingContainerId);
    }
    if !is_identifier(id) {
        return Err(ValidationError::InvalidContainerId(id.to_owned()));
    }
    Ok(())
}

/// Checks a network name.
pub fn validate_network_name(name: &str) -> Result<(), ValidationError> {
    if name.is_empty() {
        return Err(ValidationError::MissingNetworkName);
    }
    if !is_identifier(name) {
        return Err(ValidationError::InvalidNetworkName(name.to_owned()));
    }
    Ok(())
}

/// Checks an interface name.
pub fn validate_interface_name(name: &str) -> Result<(), ValidationError> {
    if name.is_empty() {
        return Err(ValidationError::EmptyInterfaceName);
    }
    if name.len() > 15 {
        return Err(ValidationError::InterfaceNameTooLong(name.to_owned()));
    }
    if name == "." || name == ".." {
        return Err(ValidationError::InterfaceNameDots);
    }
    if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace())
    {
        return Err(ValidationError::InterfaceNameBadCharacters(name.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids() {
        assert!(validate_container_id("abc-1_2.3").is_ok());
        assert_eq!(
            validate_container_id(""),
            Err(ValidationError::MissingContainerId)
        );
        assert!(matches!(
            validate_container_id("-abc"),
            Err(ValidationError::InvalidContainerId(_))
        ));
        assert!(matches!(
            validate_container_id("a b"),
            Err(ValidationError::InvalidContainerId(_))
        ));
        assert_eq!(
            ValidationError::MissingContainerId.to_cni_error().code,
            ErrorCode::UnknownContainer
        );
    }

    #[test]
    fn interface_names() {
        assert!(validate_interface_name("eth0").is_ok());
        assert!(validate_interface_name("123456789012345").is_ok());
        assert!(matches!(
            validate_interface_name("1234567890123456"),
            Err(ValidationError::InterfaceNameTooLong(_))
        ));
        for bad in ["a/b", "a:b", "a b", "a\tb"] {
            assert!(matches!(
                validate_interface_name(bad),
                Err(ValidationError::InterfaceNameBadCharacters(_))
            ));
        }
        assert_eq!(
            validate_interface_name(".."),
            Err(ValidationError::InterfaceNameDots)
        );
        assert_eq!(
            validate_interface_name(""),
            Err(ValidationError::EmptyInterfaceName)
        );
    }

    #[test]
    fn network_names() {
        assert!(validate_network_name("k8s-pod.net_1").is_ok());
        assert_eq!(
            validate_network_name("bad/name")
                .unwrap_err()
                .to_cni_error()
                .code,
            ErrorCode::InvalidNetworkConfig
        );
    }
}
