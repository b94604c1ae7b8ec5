//! `OvnEip` (`ovn-eips.kubeovn.io`, short name `oeip`): an address of an external subnet, used
//! by a router port, a switch port or NAT rules.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::open_enum::open_enum;
use super::InvalidField;

open_enum! {
    /// `spec.type`: what the external address is for.
    pub enum OvnEipType {
        /// The VPC router's port on the external subnet.
        Lrp = "lrp",
        /// A switch port on the external subnet (e.g. a node's).
        Lsp = "lsp",
        /// FIP, SNAT and DNAT rules.
        Nat = "nat",
    }
}

/// Which external subnet, which address.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "OvnEip",
    plural = "ovn-eips",
    singular = "ovn-eip",
    shortname = "oeip",
    status = "OvnEipStatus",
    derive = "PartialEq",
    doc = "An OVN external IP.",
    printcolumn(name = "V4IP", type_ = "string", json_path = ".status.v4Ip"),
    printcolumn(name = "V6IP", type_ = "string", json_path = ".status.v6Ip"),
    printcolumn(name = "Mac", type_ = "string", json_path = ".status.macAddress"),
    printcolumn(name = "Type", type_ = "string", json_path = ".status.type"),
    printcolumn(name = "Nat", type_ = "string", json_path = ".status.nat"),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready"),
    printcolumn(
        name = "ExternalSubnet",
        type_ = "string",
        json_path = ".spec.externalSubnet"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct OvnEipSpec {
    /// The external subnet (immutable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_subnet: Option<String>,
    /// `lrp`, `lsp` or `nat`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<OvnEipType>,
    /// A chosen IPv4 address (allocated when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_ip: Option<String>,
    /// A chosen IPv6 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_ip: Option<String>,
    /// A chosen MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}

/// The address as allocated and the NAT rules using it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OvnEipStatus {
    /// Ready conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The type as realized.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// NAT kinds using it, comma-separated (`fip`, `snat`, `dnat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat: Option<String>,
    /// Allocated and usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Allocated IPv4 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_ip: Option<String>,
    /// Allocated IPv6 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_ip: Option<String>,
    /// Allocated MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
}

impl OvnEipSpec {
    /// Checks every enum-valued field; the first unknown value is the error.
    pub fn validate(&self) -> Result<(), InvalidField> {
        match &self.type_ {
            Some(type_) => type_.check("spec.type"),
            None => Ok(()),
        }
    }
}
