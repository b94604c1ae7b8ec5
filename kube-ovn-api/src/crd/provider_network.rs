//! `ProviderNetwork` (`provider-networks.kubeovn.io`, no short name in Kube-OVN's chart): the
//! node interface an underlay network bridges onto.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::ProviderNetworkCondition;

/// Which interface of which nodes carries the network.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "ProviderNetwork",
    plural = "provider-networks",
    singular = "provider-network",
    status = "ProviderNetworkStatus",
    derive = "PartialEq",
    doc = "An underlay provider network: a node interface bridged into OVS.",
    printcolumn(
        name = "DefaultInterface",
        type_ = "string",
        json_path = ".spec.defaultInterface"
    ),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready")
)]
#[serde(rename_all = "camelCase")]
pub struct ProviderNetworkSpec {
    /// The interface used on nodes without a `customInterfaces` entry.
    pub default_interface: String,
    /// Other interfaces for some nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_interfaces: Vec<CustomInterface>,
    /// Nodes the network is set up on (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "node_selector_schema")]
    pub node_selector: Option<LabelSelector>,
    /// Nodes left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_nodes: Vec<String>,
    /// Swap the names of the interface and its OVS bridge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange_link_name: Option<bool>,
    /// Create missing VLAN subinterfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_create_vlan_subinterfaces: Option<bool>,
    /// Keep the VLAN interfaces found on the default interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_vlan_interfaces: Option<bool>,
    /// VLAN interfaces to keep, e.g. `eth0.10`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vlan_interfaces: Vec<String>,
}

/// A LabelSelector whose `matchExpressions` is a map list keyed by `key`, as Kube-OVN's chart
/// declares it, so server-side apply merges expressions the same way on both CRDs.
fn node_selector_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<LabelSelector>();
    if let Some(expressions) = schema
        .get_mut("properties")
        .and_then(|properties| properties.get_mut("matchExpressions"))
        .and_then(serde_json::Value::as_object_mut)
    {
        expressions.insert("x-kubernetes-list-type".into(), "map".into());
        expressions.insert(
            "x-kubernetes-list-map-keys".into(),
            serde_json::json!(["key"]),
        );
    }
    schema
}

/// An interface used on some nodes instead of the default.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CustomInterface {
    /// Interface name (at most 15 characters).
    pub interface: String,
    /// Nodes using it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}

/// Per-node readiness of the network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderNetworkStatus {
    /// Ready on every selected node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Nodes where it is set up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ready_nodes: Vec<String>,
    /// Nodes where setting it up failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_ready_nodes: Vec<String>,
    /// Vlans on this network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vlans: Vec<String>,
    /// One condition per node and type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ProviderNetworkCondition>,
}
