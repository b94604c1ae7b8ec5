//! `IPPool` (`ippools.kubeovn.io`, short name `ippool`): a part of a subnet reserved for some
//! namespaces.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::ip_count::IpCount;

/// Which addresses of which subnet, for whom.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "IPPool",
    plural = "ippools",
    singular = "ippool",
    shortname = "ippool",
    status = "IPPoolStatus",
    derive = "PartialEq",
    doc = "A pool of addresses inside a subnet, reserved for some namespaces.",
    printcolumn(name = "Subnet", type_ = "string", json_path = ".spec.subnet"),
    printcolumn(
        name = "enableAddressSet",
        type_ = "boolean",
        json_path = ".spec.enableAddressSet"
    ),
    printcolumn(name = "IPs", type_ = "string", json_path = ".spec.ips"),
    printcolumn(name = "V4Used", type_ = "number", json_path = ".status.v4UsingIPs"),
    printcolumn(
        name = "V4Available",
        type_ = "number",
        json_path = ".status.v4AvailableIPs"
    ),
    printcolumn(name = "V6Used", type_ = "number", json_path = ".status.v6UsingIPs"),
    printcolumn(
        name = "V6Available",
        type_ = "number",
        json_path = ".status.v6AvailableIPs"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct IPPoolSpec {
    /// The subnet the pool is carved from (immutable).
    pub subnet: String,
    /// Namespaces whose pods allocate from the pool (a set, as in Kube-OVN).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub namespaces: Vec<String>,
    /// Addresses, `start..end` ranges and CIDRs (a set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub ips: Vec<String>,
    /// Also keep an OVN address set of the pool, for ACLs and policy routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_address_set: Option<bool>,
}

/// Usage of the pool, from IPAM.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IPPoolStatus {
    /// Free IPv4 addresses.
    #[serde(
        rename = "v4AvailableIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v4_available_ips: Option<IpCount>,
    /// Free IPv4 addresses as ranges.
    #[serde(
        rename = "v4AvailableIPRange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v4_available_ip_range: Option<String>,
    /// Allocated IPv4 addresses.
    #[serde(
        rename = "v4UsingIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v4_using_ips: Option<IpCount>,
    /// Allocated IPv4 addresses as ranges.
    #[serde(
        rename = "v4UsingIPRange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v4_using_ip_range: Option<String>,
    /// Free IPv6 addresses.
    #[serde(
        rename = "v6AvailableIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v6_available_ips: Option<IpCount>,
    /// Free IPv6 addresses as ranges.
    #[serde(
        rename = "v6AvailableIPRange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v6_available_ip_range: Option<String>,
    /// Allocated IPv6 addresses.
    #[serde(
        rename = "v6UsingIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v6_using_ips: Option<IpCount>,
    /// Allocated IPv6 addresses as ranges.
    #[serde(
        rename = "v6UsingIPRange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v6_using_ip_range: Option<String>,
    /// Ready and Error conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
