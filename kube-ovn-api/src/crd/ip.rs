//! `IP` (`ips.kubeovn.io`, short name `ip`): one allocated address, named after its logical
//! switch port (`<pod>.<namespace>[.<provider>]`, or `node-<node>` for a node's join address).
//! Kube-OVN gives it no status.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who holds the address and where.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "IP",
    plural = "ips",
    singular = "ip",
    shortname = "ip",
    derive = "PartialEq",
    doc = "An address Kube-OVN's IPAM allocated to a pod, VM or node.",
    printcolumn(name = "V4IP", type_ = "string", json_path = ".spec.v4IpAddress"),
    printcolumn(name = "V6IP", type_ = "string", json_path = ".spec.v6IpAddress"),
    printcolumn(name = "Mac", type_ = "string", json_path = ".spec.macAddress"),
    printcolumn(name = "Node", type_ = "string", json_path = ".spec.nodeName"),
    printcolumn(name = "Subnet", type_ = "string", json_path = ".spec.subnet")
)]
#[serde(rename_all = "camelCase")]
pub struct IPSpec {
    /// The pod (or VM) name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// The pod's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The subnet the address comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
    /// Subnets of the pod's other interfaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attach_subnets: Vec<String>,
    /// The node the pod runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// All addresses, comma-separated (deprecated in favour of the v4/v6 fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    /// The IPv4 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v4_ip_address: Option<String>,
    /// The IPv6 address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v6_ip_address: Option<String>,
    /// Addresses of the other interfaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attach_ips: Vec<String>,
    /// The MAC address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac_address: Option<String>,
    /// MAC addresses of the other interfaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attach_macs: Vec<String>,
    /// The sandbox container id.
    #[serde(
        rename = "containerID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub container_id: Option<String>,
    /// The pod's owner kind when it keeps its address (`StatefulSet`, `VirtualMachine`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_type: Option<String>,
}
