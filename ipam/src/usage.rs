//! Usage figures in the formats of Kube-OVN's `Subnet` and `IPPool` status.
//!
//! Counts are plain JSON numbers (Kube-OVN's `BigInt` marshals as a bare
//! number); ranges are comma-joined `a` or `a-b` items in ascending order,
//! e.g. `"10.0.0.2-10.0.0.5,10.0.0.9"`, and `""` when empty.

use std::fmt::Write;

use crate::addr::IpFamily;
use crate::range_set::RangeSet;

/// Usage of one family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FamilyUsage {
    /// Free addresses (never used plus released).
    pub available: u128,
    /// Free addresses as ranges.
    pub available_range: String,
    /// Addresses held by owners.
    pub using: u128,
    /// Held addresses as ranges.
    pub using_range: String,
}

impl FamilyUsage {
    pub(crate) fn new(family: IpFamily, available: &RangeSet, using: &RangeSet) -> FamilyUsage {
        FamilyUsage {
            available: available.count(),
            available_range: format_ranges(family, available),
            using: using.count(),
            using_range: format_ranges(family, using),
        }
    }
}

/// Usage of a subnet or pool, both families (zero for an absent family).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// IPv4 figures.
    pub v4: FamilyUsage,
    /// IPv6 figures.
    pub v6: FamilyUsage,
}

/// The usage fields of a Kube-OVN `Subnet` status.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SubnetStatusUsage {
    #[serde(rename = "v4availableIPs")]
    /// Kube-OVN status field of the same name.
    pub v4_available_ips: u128,
    #[serde(rename = "v4availableIPrange")]
    /// Kube-OVN status field of the same name.
    pub v4_available_ip_range: String,
    #[serde(rename = "v4usingIPs")]
    /// Kube-OVN status field of the same name.
    pub v4_using_ips: u128,
    #[serde(rename = "v4usingIPrange")]
    /// Kube-OVN status field of the same name.
    pub v4_using_ip_range: String,
    #[serde(rename = "v6availableIPs")]
    /// Kube-OVN status field of the same name.
    pub v6_available_ips: u128,
    #[serde(rename = "v6availableIPrange")]
    /// Kube-OVN status field of the same name.
    pub v6_available_ip_range: String,
    #[serde(rename = "v6usingIPs")]
    /// Kube-OVN status field of the same name.
    pub v6_using_ips: u128,
    #[serde(rename = "v6usingIPrange")]
    /// Kube-OVN status field of the same name.
    pub v6_using_ip_range: String,
}

/// The usage fields of a Kube-OVN `IPPool` status (note the different
/// capitalisation from `Subnet`'s).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PoolStatusUsage {
    #[serde(rename = "v4AvailableIPs")]
    /// Kube-OVN status field of the same name.
    pub v4_available_ips: u128,
    #[serde(rename = "v4AvailableIPRange")]
    /// Kube-OVN status field of the same name.
    pub v4_available_ip_range: String,
    #[serde(rename = "v4UsingIPs")]
    /// Kube-OVN status field of the same name.
    pub v4_using_ips: u128,
    #[serde(rename = "v4UsingIPRange")]
    /// Kube-OVN status field of the same name.
    pub v4_using_ip_range: String,
    #[serde(rename = "v6AvailableIPs")]
    /// Kube-OVN status field of the same name.
    pub v6_available_ips: u128,
    #[serde(rename = "v6AvailableIPRange")]
    /// Kube-OVN status field of the same name.
    pub v6_available_ip_range: String,
    #[serde(rename = "v6UsingIPs")]
    /// Kube-OVN status field of the same name.
    pub v6_using_ips: u128,
    #[serde(rename = "v6UsingIPRange")]
    /// Kube-OVN status field of the same name.
    pub v6_using_ip_range: String,
}

impl Usage {
    /// As a Kube-OVN `Subnet` status fragment.
    pub fn subnet_status(&self) -> SubnetStatusUsage {
        let (v4, v6) = (self.v4.clone(), self.v6.clone());
        SubnetStatusUsage {
            v4_available_ips: v4.available,
            v4_available_ip_range: v4.available_range,
            v4_using_ips: v4.using,
            v4_using_ip_range: v4.using_range,
            v6_available_ips: v6.available,
            v6_available_ip_range: v6.available_range,
            v6_using_ips: v6.using,
            v6_using_ip_range: v6.using_range,
        }
    }

    /// As a Kube-OVN `IPPool` status fragment.
    pub fn pool_status(&self) -> PoolStatusUsage {
        let (v4, v6) = (self.v4.clone(), self.v6.clone());
        PoolStatusUsage {
            v4_available_ips: v4.available,
            v4_available_ip_range: v4.available_range,
            v4_using_ips: v4.using,
            v4_using_ip_range: v4.using_range,
            v6_available_ips: v6.available,
            v6_available_ip_range: v6.available_range,
            v6_using_ips: v6.using,
            v6_using_ip_range: v6.using_range,
        }
    }
}

/// `"a-b,c"` form of a set.
pub(crate) fn format_ranges(family: IpFamily, set: &RangeSet) -> String {
    let mut out = String::new();
    for (s, e) in set.iter() {
        if !out.is_empty() {
            out.push(',');
        }
        // Writing to a String cannot fail.
        let _ = if s == e {
            write!(out, "{}", family.addr(s))
        } else {
            write!(out, "{}-{}", family.addr(s), family.addr(e))
        };
    }
    out
}
