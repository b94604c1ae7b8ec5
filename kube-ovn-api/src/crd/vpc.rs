//! `Vpc` (`vpcs.kubeovn.io`, short name `vpc`): a Logical_Router with its subnets, routes and
//! peerings. The default one is `ovn-cluster`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::open_enum::open_enum;
use super::InvalidField;

open_enum! {
    /// `staticRoutes[].policy`: match the route on source or destination address.
    pub enum RoutePolicy {
        Src = "policySrc",
        Dst = "policyDst",
    }
}

open_enum! {
    /// `policyRoutes[].action`, as OVN's Logical_Router_Policy `action`.
    pub enum PolicyRouteAction {
        Allow = "allow",
        Drop = "drop",
        Reroute = "reroute",
    }
}

/// The VPC's routes, peerings and external connectivity.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "Vpc",
    plural = "vpcs",
    singular = "vpc",
    shortname = "vpc",
    status = "VpcStatus",
    derive = "PartialEq",
    doc = "A Kube-OVN VPC: a logical router and the subnets behind it.",
    printcolumn(
        name = "EnableExternal",
        type_ = "boolean",
        json_path = ".status.enableExternal"
    ),
    printcolumn(name = "EnableBfd", type_ = "boolean", json_path = ".status.enableBfd"),
    printcolumn(name = "Standby", type_ = "boolean", json_path = ".status.standby"),
    printcolumn(name = "Subnets", type_ = "string", json_path = ".status.subnets"),
    printcolumn(
        name = "ExtraExternalSubnets",
        type_ = "string",
        json_path = ".status.extraExternalSubnets"
    ),
    printcolumn(name = "Namespaces", type_ = "string", json_path = ".spec.namespaces"),
    printcolumn(
        name = "DefaultSubnet",
        type_ = "string",
        json_path = ".status.defaultLogicalSwitch"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct VpcSpec {
    /// Subnet for pods of `namespaces` that name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_subnet: Option<String>,
    /// Namespaces bound to this VPC.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Logical_Router_Static_Routes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_routes: Vec<StaticRoute>,
    /// Logical_Router_Policies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policy_routes: Vec<PolicyRoute>,
    /// Router-to-router peerings with other VPCs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vpc_peerings: Vec<VpcPeering>,
    /// Connect the router to the default external subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_external: Option<bool>,
    /// More external (provider-network VLAN) subnets to connect.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_external_subnets: Vec<String>,
    /// Enable BFD on the external routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_bfd: Option<bool>,
    /// A BFD logical router port for the external gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bfd_port: Option<BfdPort>,
}

/// One static route.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StaticRoute {
    /// `policySrc` or `policyDst` (OVN's default when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<RoutePolicy>,
    /// Prefix the route matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    /// Next hop address.
    #[serde(rename = "nextHopIP", default, skip_serializing_if = "Option::is_none")]
    pub next_hop_ip: Option<String>,
    /// `ecmp` or `ecmp_symmetric_reply`.
    #[serde(rename = "ecmpMode", default, skip_serializing_if = "Option::is_none")]
    pub ecmp_mode: Option<String>,
    /// UUID of the NB BFD row guarding the route.
    #[serde(rename = "bfdId", default, skip_serializing_if = "Option::is_none")]
    pub bfd_id: Option<String>,
    /// Route table the route goes into.
    #[serde(
        rename = "routeTable",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub route_table: Option<String>,
}

/// One logical router policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyRoute {
    /// 0 to 32767.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// An OVN match expression.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub match_: Option<String>,
    /// `allow`, `drop` or `reroute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<PolicyRouteAction>,
    /// Next hop, for `reroute`.
    #[serde(rename = "nextHopIP", default, skip_serializing_if = "Option::is_none")]
    pub next_hop_ip: Option<String>,
}

/// A peering with another VPC's router.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VpcPeering {
    /// The other VPC.
    #[serde(rename = "remoteVpc", default, skip_serializing_if = "Option::is_none")]
    pub remote_vpc: Option<String>,
    /// This side's address on the peering link, as a CIDR.
    #[serde(
        rename = "localConnectIP",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub local_connect_ip: Option<String>,
}

/// The BFD logical router port.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BfdPort {
    /// Create the port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Its address(es), IPv4, IPv6 or `v4,v6`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Nodes that may host it (default: up to 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
}

/// The router and load balancers the controller created for the VPC.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VpcStatus {
    /// Ready conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The controller has set the VPC up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standby: Option<bool>,
    /// This is the default VPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// The default subnet's logical switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_logical_switch: Option<String>,
    /// The Logical_Router name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<String>,
    /// Load_Balancer names, per protocol and session affinity.
    #[serde(
        rename = "tcpLoadBalancer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tcp_load_balancer: Option<String>,
    /// See `tcpLoadBalancer`.
    #[serde(
        rename = "udpLoadBalancer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub udp_load_balancer: Option<String>,
    /// See `tcpLoadBalancer`.
    #[serde(
        rename = "sctpLoadBalancer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sctp_load_balancer: Option<String>,
    /// See `tcpLoadBalancer`.
    #[serde(
        rename = "tcpSessionLoadBalancer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tcp_session_load_balancer: Option<String>,
    /// See `tcpLoadBalancer`.
    #[serde(
        rename = "udpSessionLoadBalancer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub udp_session_load_balancer: Option<String>,
    /// See `tcpLoadBalancer`.
    #[serde(
        rename = "sctpSessionLoadBalancer",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sctp_session_load_balancer: Option<String>,
    /// Subnets in the VPC.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<String>,
    /// Peered VPCs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vpc_peerings: Vec<String>,
    /// External connectivity as realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_external: Option<bool>,
    /// Extra external subnets as realized.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_external_subnets: Vec<String>,
    /// BFD as realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_bfd: Option<bool>,
    /// The BFD port as realized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bfd_port: Option<BfdPortStatus>,
}

/// The BFD logical router port as created.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BfdPortStatus {
    /// Logical_Router_Port name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its address(es).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Nodes hosting it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}

impl VpcSpec {
    /// Checks every enum-valued field; the first unknown value is the error.
    pub fn validate(&self) -> Result<(), InvalidField> {
        for (i, route) in self.static_routes.iter().enumerate() {
            if let Some(policy) = &route.policy {
                policy.check(format!("spec.staticRoutes[{i}].policy"))?;
            }
        }
        for (i, route) in self.policy_routes.iter().enumerate() {
            if let Some(action) = &route.action {
                action.check(format!("spec.policyRoutes[{i}].action"))?;
            }
        }
        Ok(())
    }
}
