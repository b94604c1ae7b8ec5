//! `OvnFip` (`ovn-fips.kubeovn.io`, short name `ofip`): a dnat_and_snat NAT rule mapping an
//! OvnEip to a pod's or Vip's address.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::open_enum::open_enum;
use super::{GatewayType, InvalidField};

open_enum! {
    /// `spec.ipType` of OvnFip and OvnDnatRule: the kind of CR `ipName` names.
    pub enum NatIpType {
        /// An IP CR (a pod's or VM's address); what Kube-OVN assumes when absent.
        Ip = "ip",
        /// A Vip CR.
        Vip = "vip",
    }
}

/// Which external address maps to which internal one.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "OvnFip",
    plural = "ovn-fips",
    singular = "ovn-fip",
    shortname = "ofip",
    status = "OvnFipStatus",
    derive = "PartialEq",
    doc = "An OVN floating IP (dnat_and_snat).",
    printcolumn(name = "Vpc", type_ = "string", json_path = ".status.vpc"),
    printcolumn(name = "Type", type_ = "string", json_path = ".spec.type"),
    printcolumn(name = "V4Eip", type_ = "string", json_path = ".status.v4Eip"),
    printcolumn(name = "V6Eip", type_ = "string", json_path = ".status.v6Eip"),
    printcolumn(name = "V4Ip", type_ = "string", json_path = ".status.v4Ip"),
    printcolumn(name = "V6Ip", type_ = "string", json_path = ".status.v6Ip"),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready"),
    printcolumn(name = "IpType", type_ = "string", json_path = ".spec.ipType"),
    printcolumn(name = "IpName", type_ = "string", json_path = ".spec.ipName")
)]
#[serde(rename_all = "camelCase")]
pub struct OvnFipSpec {
    /// The OvnEip giving the external address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ovn_eip: Option<String>,
    /// Kind of `ipName`: `ip` (an IP CR, the default) or `vip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_type: Option<NatIpType>,
    /// `distributed` (NAT on the pod's node) or `centralized` (on the gateway chassis).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<GatewayType>,
    /// The IP or Vip CR giving the internal address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_name: Option<String>,
    /// The VPC (immutable), when the internal address is given directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc: Option<String>,
    /// Internal IPv4 address, instead of `ipName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_ip: Option<String>,
    /// Internal IPv6 address, instead of `ipName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_ip: Option<String>,
}

/// The NAT rule as realized.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OvnFipStatus {
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
    /// Internal IPv4 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_ip: Option<String>,
    /// Internal IPv6 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_ip: Option<String>,
    /// MAC address of the external address (distributed FIPs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}

impl OvnFipSpec {
    /// Checks every enum-valued field; the first unknown value is the error.
    pub fn validate(&self) -> Result<(), InvalidField> {
        if let Some(ip_type) = &self.ip_type {
            ip_type.check("spec.ipType")?;
        }
        match &self.type_ {
            Some(type_) => type_.check("spec.type"),
            None => Ok(()),
        }
    }
}
