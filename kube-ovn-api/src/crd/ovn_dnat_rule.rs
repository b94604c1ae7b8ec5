//! `OvnDnatRule` (`ovn-dnat-rules.kubeovn.io`, short name `odnat`): a port forward from an
//! OvnEip to an internal address, as an OVN load balancer on the VPC router.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::{InvalidField, NatIpType};

/// Which external port forwards to which internal address and port.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "OvnDnatRule",
    plural = "ovn-dnat-rules",
    singular = "ovn-dnat-rule",
    shortname = "odnat",
    status = "OvnDnatRuleStatus",
    derive = "PartialEq",
    doc = "An OVN DNAT (port forwarding) rule.",
    printcolumn(name = "Vpc", type_ = "string", json_path = ".status.vpc"),
    printcolumn(name = "Eip", type_ = "string", json_path = ".spec.ovnEip"),
    printcolumn(name = "Protocol", type_ = "string", json_path = ".status.protocol"),
    printcolumn(name = "V4Eip", type_ = "string", json_path = ".status.v4Eip"),
    printcolumn(name = "V6Eip", type_ = "string", json_path = ".status.v6Eip"),
    printcolumn(name = "V4Ip", type_ = "string", json_path = ".status.v4Ip"),
    printcolumn(name = "V6Ip", type_ = "string", json_path = ".status.v6Ip"),
    printcolumn(
        name = "InternalPort",
        type_ = "string",
        json_path = ".status.internalPort"
    ),
    printcolumn(
        name = "ExternalPort",
        type_ = "string",
        json_path = ".status.externalPort"
    ),
    printcolumn(name = "IpName", type_ = "string", json_path = ".spec.ipName"),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready")
)]
#[serde(rename_all = "camelCase")]
pub struct OvnDnatRuleSpec {
    /// The OvnEip giving the external address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ovn_eip: Option<String>,
    /// Kind of `ipName`: `ip` or `vip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_type: Option<NatIpType>,
    /// The IP or Vip CR giving the internal address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_name: Option<String>,
    /// External port (a string, as in Kube-OVN).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_port: Option<String>,
    /// Internal port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_port: Option<String>,
    /// `tcp` or `udp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The VPC (immutable), when the internal address is given directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc: Option<String>,
    /// Internal IPv4 address, instead of `ipName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_ip: Option<String>,
    /// Internal IPv6 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_ip: Option<String>,
}

/// The forward as realized.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OvnDnatRuleStatus {
    /// Ready conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The NB rows exist.
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
    /// External port as realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_port: Option<String>,
    /// Internal port as realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_port: Option<String>,
    /// Protocol as realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The IP or Vip CR as realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_name: Option<String>,
}

impl OvnDnatRuleSpec {
    /// Checks every enum-valued field; the first unknown value is the error.
    pub fn validate(&self) -> Result<(), InvalidField> {
        match &self.ip_type {
            Some(ip_type) => ip_type.check("spec.ipType"),
            None => Ok(()),
        }
    }
}
