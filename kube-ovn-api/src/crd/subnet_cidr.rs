//! A Subnet's CIDR block as the controller and the node daemon both read it, and the
//! error that names a field of a Subnet's spec that cannot be realized.

use crate::annotations::{AnnotationValue, CidrPair};

use super::Subnet;

/// A field of a Subnet's spec that cannot be realized, reported as its
/// `Validated=False` condition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct SubnetInvalid {
    /// Path of the offending field, e.g. `spec.excludeIps[1]`.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl SubnetInvalid {
    /// The offending field and why.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> SubnetInvalid {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// The parsed CIDR block of a subnet, host bits cleared.
pub fn parse_cidr(subnet: &Subnet) -> Result<CidrPair, SubnetInvalid> {
    let text = subnet.spec.cidr_block.as_deref().unwrap_or_default();
    if text.is_empty() {
        return Err(SubnetInvalid::new("spec.cidrBlock", "is required"));
    }
    let pair = CidrPair::parse(text).map_err(|why| SubnetInvalid::new("spec.cidrBlock", why))?;
    Ok(CidrPair {
        v4: pair.v4.map(|n| n.trunc()),
        v6: pair.v6.map(|n| n.trunc()),
    })
}
