//! `OvnSnatRule` (`ovn-snat-rules.kubeovn.io`, short name `osnat`): an snat NAT rule sending
//! a subnet or address out through an OvnEip.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;

/// Which internal addresses leave through which external one.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "OvnSnatRule",
    plural = "ovn-snat-rules",
    singular = "ovn-snat-rule",
    shortname = "osnat",
    status = "OvnSnatRuleStatus",
    derive = "PartialEq",
    doc = "An OVN SNAT rule.",
    printcolumn(name = "Vpc", type_ = "string", json_path = ".status.vpc"),
    printcolumn(name = "V4Eip", type_ = "string", json_path = ".status.v4Eip"),
    printcolumn(name = "V6Eip", type_ = "string", json_path = ".status.v6Eip"),
    printcolumn(name = "V4IpCidr", type_ = "string", json_path = ".status.v4IpCidr"),
    printcolumn(name = "V6IpCidr", type_ = "string", json_path = ".status.v6IpCidr"),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready")
)]
#[serde(rename_all = "camelCase")]
pub struct OvnSnatRuleSpec {
    /// The OvnEip giving the external address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ovn_eip: Option<String>,
    /// A subnet whose whole CIDR is translated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc_subnet: Option<String>,
    /// An IP CR whose address is translated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_name: Option<String>,
    /// The VPC (immutable), when the CIDRs are given directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc: Option<String>,
    /// Internal IPv4 CIDR, instead of `vpcSubnet`/`ipName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_ip_cidr: Option<String>,
    /// Internal IPv6 CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_ip_cidr: Option<String>,
}

/// The NAT rule as realized.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OvnSnatRuleStatus {
    /// Ready conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The NB NAT row exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// The VPC whose router holds the rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc: Option<String>,
    /// External IPv4 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_eip: Option<String>,
    /// External IPv6 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_eip: Option<String>,
    /// Internal IPv4 CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_ip_cidr: Option<String>,
    /// Internal IPv6 CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_ip_cidr: Option<String>,
}
