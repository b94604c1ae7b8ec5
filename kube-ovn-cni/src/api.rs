//! The daemon's API to the CNI binary: Kube-OVN's `CniRequest` / `CniResponse` JSON
//! (`pkg/request/cniserver.go`, same field names), carried as JSON-RPC 2.0 over HTTP on
//! the daemon's unix socket (`--bind-socket`). Kube-OVN posts the same bodies to
//! `/api/v1/add` and `/api/v1/del`; here the path is the method name.

use serde::{Deserialize, Serialize};

/// JSON-RPC method: CNI ADD. Params: one [`CniRequest`]; result: [`CniResponse`].
pub const METHOD_ADD: &str = "add";
/// JSON-RPC method: CNI DEL. Params: one [`CniRequest`]; result: `null`.
pub const METHOD_DEL: &str = "del";
/// JSON-RPC method: CNI CHECK. Params: one [`CniRequest`]; result: `null` when the pod's
/// port and veth are in place.
pub const METHOD_CHECK: &str = "check";
/// JSON-RPC method: readiness (CNI STATUS). No params; result: `null`.
pub const METHOD_STATUS: &str = "status";
/// JSON-RPC method: run the stale-port GC now (CNI GC). No params; result: [`GcReport`].
pub const METHOD_GC: &str = "gc";

/// The default provider (the pod's first NIC on OVN).
pub const DEFAULT_PROVIDER: &str = "ovn";

/// One route asked for or answered, Kube-OVN's `request.Route` (`{"dst","gw"}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteEntry {
    /// Destination; empty or absent means the default route.
    #[serde(rename = "dst", default, skip_serializing_if = "String::is_empty")]
    pub destination: String,
    /// Next hop.
    #[serde(rename = "gw", default, skip_serializing_if = "String::is_empty")]
    pub gateway: String,
}

/// CNI DNS settings (`types.DNS`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DnsConfig {
    /// Nameservers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    /// Local domain.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    /// Search domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    /// Resolver options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// What the CNI binary asks the daemon (Kube-OVN's `CniRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CniRequest {
    /// The plugin type from the configuration (`kube-ovn`).
    pub cni_type: String,
    /// `ADD`, `DEL`, `CHECK` (not in Kube-OVN's request: the URL said it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// `K8S_POD_NAME`.
    pub pod_name: String,
    /// `K8S_POD_NAMESPACE`.
    pub pod_namespace: String,
    /// `CNI_CONTAINERID`.
    pub container_id: String,
    /// `CNI_NETNS`; empty on a DEL after the sandbox is gone.
    #[serde(default)]
    pub net_ns: String,
    /// `CNI_IFNAME`.
    pub if_name: String,
    /// The provider (`ovn` for the default network).
    pub provider: String,
    /// Routes from the configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteEntry>,
    /// DNS from the configuration.
    #[serde(default)]
    pub dns: DnsConfig,
}

/// One address of the answer (Kube-OVN's `request.Response` `ips` entries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpResponse {
    /// `IPv4` or `IPv6`.
    pub protocol: String,
    /// The address, without prefix.
    pub ip: String,
    /// The subnet's CIDR.
    pub cidr: String,
    /// The gateway (empty on a NIC without the default route).
    #[serde(default)]
    pub gateway: String,
}

/// What the daemon answers an ADD (Kube-OVN's `CniResponse`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CniResponse {
    /// One entry per family.
    #[serde(default)]
    pub ips: Vec<IpResponse>,
    /// The pod NIC's MAC.
    pub mac_address: String,
    /// Routes configured in the pod (besides the default ones).
    #[serde(default)]
    pub routes: Vec<RouteEntry>,
    /// The pod NIC's MTU.
    pub mtu: u32,
    /// The pod NIC's name.
    pub nicname: String,
    /// DNS to report.
    #[serde(default)]
    pub dns: DnsConfig,
    /// Kept for Kube-OVN's shape; errors travel as JSON-RPC errors.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// What one GC pass removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcReport {
    /// Ports removed, by name.
    pub removed: Vec<String>,
}

/// JSON-RPC error codes the daemon answers with (application range).
pub mod codes {
    /// The request is malformed (missing pod name, bad interface name, ...).
    pub const INVALID_REQUEST: i32 = -32602;
    /// The pod is not scheduled on this node.
    pub const NOT_ON_THIS_NODE: i32 = 1001;
    /// The pod does not exist, or is being deleted without a network.
    pub const POD_NOT_FOUND: i32 = 1002;
    /// Something the daemon waited for did not come in time (annotation, ovn-installed,
    /// the gateway): the caller may try again.
    pub const NOT_READY: i32 = 1003;
    /// The node's datapath or OVS failed.
    pub const INTERNAL: i32 = 1004;
}
