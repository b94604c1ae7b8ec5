//! `Vip` (`vips.kubeovn.io`, short name `vip`): a reserved address, for allowed-address-pairs
//! or switch load balancers. Kube-OVN's chart gives it a status but no status subresource.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;

/// Where to reserve the address and who may use it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "Vip",
    plural = "vips",
    singular = "vip",
    shortname = "vip",
    status = "VipStatus",
    derive = "PartialEq",
    doc = "A virtual IP reserved in a subnet.",
    printcolumn(name = "Namespace", type_ = "string", json_path = ".spec.namespace"),
    printcolumn(name = "V4IP", type_ = "string", json_path = ".status.v4ip"),
    printcolumn(name = "V6IP", type_ = "string", json_path = ".status.v6ip"),
    printcolumn(name = "Mac", type_ = "string", json_path = ".status.mac"),
    printcolumn(name = "Subnet", type_ = "string", json_path = ".spec.subnet"),
    printcolumn(name = "Type", type_ = "string", json_path = ".status.type")
)]
#[serde(rename_all = "camelCase")]
pub struct VipSpec {
    /// Namespace of the pods that use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The subnet the address comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
    /// Usage: empty for allowed-address-pairs, `switch_lb_vip` for a switch load balancer.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// A chosen IPv4 address (allocated when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4ip: Option<String>,
    /// A chosen IPv6 address (allocated when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6ip: Option<String>,
    /// A chosen MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// Pods (by name) that may use the address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selector: Vec<String>,
    /// Subnets of further addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attach_subnets: Vec<String>,
}

/// The address as allocated.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VipStatus {
    /// Ready conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Allocated (Kube-OVN's Go type has it; its chart's schema does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// The spec's type as realized.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Allocated IPv4 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4ip: Option<String>,
    /// Allocated IPv6 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6ip: Option<String>,
    /// Allocated MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// Pods using it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selector: Vec<String>,
}
