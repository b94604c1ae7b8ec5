//! `Vlan` (`vlans.kubeovn.io`, short name `vlan`): a VLAN id on a ProviderNetwork, for
//! underlay subnets.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;

/// The VLAN id and the provider network carrying it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "Vlan",
    plural = "vlans",
    singular = "vlan",
    shortname = "vlan",
    status = "VlanStatus",
    derive = "PartialEq",
    doc = "A VLAN on a provider network.",
    printcolumn(name = "ID", type_ = "string", json_path = ".spec.id"),
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.provider"),
    printcolumn(name = "conflict", type_ = "boolean", json_path = ".status.conflict")
)]
#[serde(rename_all = "camelCase")]
pub struct VlanSpec {
    /// VLAN id, 0 to 4095 (0: untagged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// The ProviderNetwork name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Deprecated spelling of `id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan_id: Option<i64>,
    /// Deprecated spelling of `provider`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_interface_name: Option<String>,
}

/// Which subnets use the VLAN.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VlanStatus {
    /// Subnets on this VLAN.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<String>,
    /// Another Vlan already uses this id on the same provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<bool>,
    /// Error conditions (Kube-OVN's Go type has them; its chart's schema does not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
