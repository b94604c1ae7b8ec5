//! `Subnet` (`subnets.kubeovn.io`, short name `subnet`): one Logical_Switch and its IPAM range.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conditions::Condition;
use super::ip_count::IpCount;
use super::open_enum::open_enum;
use super::InvalidField;

open_enum! {
    /// `spec.protocol`: which address families the subnet's `cidrBlock` holds.
    pub enum Protocol {
        IPv4 = "IPv4",
        IPv6 = "IPv6",
        Dual = "Dual",
        /// An underlay subnet without CIDR that hands out MAC addresses only.
        Mac = "Mac",
    }
}

open_enum! {
    /// `spec.gatewayType`: how traffic leaves the subnet for outside the cluster.
    pub enum GatewayType {
        /// Through the node the pod runs on.
        Distributed = "distributed",
        /// Through the `gatewayNode`s.
        Centralized = "centralized",
    }
}

open_enum! {
    /// `spec.acls[].direction`, as OVN's ACL `direction`.
    pub enum AclDirection {
        FromLport = "from-lport",
        ToLport = "to-lport",
    }
}

open_enum! {
    /// `spec.acls[].action`, as OVN's ACL `action`.
    pub enum AclAction {
        AllowRelated = "allow-related",
        AllowStateless = "allow-stateless",
        Allow = "allow",
        Drop = "drop",
        Reject = "reject",
    }
}

open_enum! {
    /// `natOutgoingPolicyRules[].action`.
    pub enum NatPolicyAction {
        Nat = "nat",
        Forward = "forward",
    }
}

/// The desired state of a Subnet. Every field is optional as in Kube-OVN; the controller
/// fills the defaults (`vpc` = `ovn-cluster`, `provider` = `ovn`, gateway = first address).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kubeovn.io",
    version = "v1",
    kind = "Subnet",
    plural = "subnets",
    singular = "subnet",
    shortname = "subnet",
    status = "SubnetStatus",
    derive = "PartialEq",
    doc = "A Kube-OVN subnet: a logical switch with its CIDR, gateway and policies.",
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.provider"),
    printcolumn(name = "Vpc", type_ = "string", json_path = ".spec.vpc"),
    printcolumn(name = "Vlan", type_ = "string", json_path = ".spec.vlan"),
    printcolumn(name = "Protocol", type_ = "string", json_path = ".spec.protocol"),
    printcolumn(name = "CIDR", type_ = "string", json_path = ".spec.cidrBlock"),
    printcolumn(name = "Private", type_ = "boolean", json_path = ".spec.private"),
    printcolumn(name = "NAT", type_ = "boolean", json_path = ".spec.natOutgoing"),
    printcolumn(name = "Default", type_ = "boolean", json_path = ".spec.default"),
    printcolumn(
        name = "GatewayType",
        type_ = "string",
        json_path = ".spec.gatewayType"
    ),
    printcolumn(name = "V4Used", type_ = "number", json_path = ".status.v4usingIPs"),
    printcolumn(
        name = "V4Available",
        type_ = "number",
        json_path = ".status.v4availableIPs"
    ),
    printcolumn(name = "V6Used", type_ = "number", json_path = ".status.v6usingIPs"),
    printcolumn(
        name = "V6Available",
        type_ = "number",
        json_path = ".status.v6availableIPs"
    ),
    printcolumn(name = "ExcludeIPs", type_ = "string", json_path = ".spec.excludeIps"),
    printcolumn(
        name = "U2OInterconnectionIP",
        type_ = "string",
        json_path = ".status.u2oInterconnectionIP"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SubnetSpec {
    /// Whether this is the cluster's default subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// The VPC the subnet belongs to (default `ovn-cluster`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vpc: Option<String>,
    /// Address families; recomputed from `cidrBlock` by the controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Namespaces whose pods get addresses from this subnet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// CIDR(s), comma-separated for dual stack: `10.16.0.0/16,fd00:10:16::/64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidr_block: Option<String>,
    /// Gateway address(es), comma-separated for dual stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    /// Addresses never allocated: single IPs or `start..end` ranges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_ips: Vec<String>,
    /// `ovn`, or `<name>.<namespace>[.ovn]` of a Multus attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `distributed` or `centralized`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_type: Option<GatewayType>,
    /// Centralized gateway nodes, comma-separated, each `node` or `node:ip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway_node: Option<String>,
    /// Centralized gateway nodes chosen by label.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gateway_node_selectors: Vec<LabelSelector>,
    /// SNAT traffic leaving the cluster to the node's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nat_outgoing: Option<bool>,
    /// Next hop(s) for traffic leaving the subnet, instead of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_egress_gateway: Option<String>,
    /// Priority of the policy route `externalEgressGateway` installs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_routing_priority: Option<u32>,
    /// Routing table of that policy route.
    #[serde(rename = "policyRoutingTableID")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_routing_table_id: Option<u32>,
    /// MTU of the subnet's pod interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Drop traffic from other subnets except `allowSubnets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private: Option<bool>,
    /// CIDRs a private subnet still accepts traffic from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_subnets: Vec<String>,
    /// The Vlan CR this underlay subnet rides on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<String>,
    /// Virtual IPs announced on the subnet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vips: Vec<String>,
    /// Underlay: OVN acts as the gateway instead of the physical one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_gateway: Option<bool>,
    /// Underlay: do not wait for the physical gateway to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_gateway_check: Option<bool>,
    /// Keep the subnet out of OVN interconnection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_inter_connection: Option<bool>,
    /// Serve DHCP from OVN.
    #[serde(rename = "enableDHCP")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dhcp: Option<bool>,
    /// DHCPv4 options, `key=value` comma-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dhcp_v4_options: Option<String>,
    /// DHCPv6 options, `key=value` comma-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dhcp_v6_options: Option<String>,
    /// Send IPv6 router advertisements.
    #[serde(rename = "enableIPv6RA")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_ipv6_ra: Option<bool>,
    /// Router advertisement options, `key=value` comma-separated.
    #[serde(rename = "ipv6RAConfigs")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipv6_ra_configs: Option<String>,
    /// OVN ACLs applied to the subnet's logical switch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acls: Vec<Acl>,
    /// Allow east-west traffic inside the subnet when ACLs would drop it.
    #[serde(rename = "allowEWTraffic")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_ew_traffic: Option<bool>,
    /// Which outgoing traffic is NATed (`natOutgoing`) and which is forwarded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nat_outgoing_policy_rules: Vec<NatOutgoingPolicyRule>,
    /// Underlay-to-overlay interconnection address (picked by the controller if empty).
    #[serde(rename = "u2oInterconnectionIP")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u2o_interconnection_ip: Option<String>,
    /// Let this underlay subnet reach overlay subnets through the VPC router.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u2o_interconnection: Option<bool>,
    /// Fine tuning of the underlay-to-overlay interconnection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub u2o_features: Option<U2oFeatures>,
    /// Attach the cluster's load balancers (default: the controller's `--enable-lb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_lb: Option<bool>,
    /// Centralized gateway: spread over all gateway nodes with ECMP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_ecmp: Option<bool>,
    /// Enable multicast snooping on the logical switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_multicast_snoop: Option<bool>,
    /// Allow LoadBalancer Service addresses from this subnet.
    #[serde(rename = "enableExternalLBAddress")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_external_lb_address: Option<bool>,
    /// Route table of the VPC router the subnet's routes go to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_table: Option<String>,
    /// Namespaces chosen by label, in addition to `namespaces`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespace_selectors: Vec<LabelSelector>,
    /// Underlay node network the subnet's traffic uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_network: Option<String>,
}

/// One OVN ACL on the subnet's logical switch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Acl {
    /// `from-lport` or `to-lport`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<AclDirection>,
    /// 0 to 32767.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// An OVN match expression.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub match_: Option<String>,
    /// What to do with matching packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<AclAction>,
}

/// Underlay-to-overlay interconnection tuning.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct U2oFeatures {
    /// Route only overlay CIDRs through the interconnection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay_only_routing: Option<bool>,
}

/// A rule choosing NAT or plain forwarding for outgoing traffic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NatOutgoingPolicyRule {
    /// Which packets the rule applies to.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub match_: Option<NatOutgoingPolicyMatch>,
    /// `nat` or `forward`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<NatPolicyAction>,
}

/// Source and destination address sets of a [`NatOutgoingPolicyRule`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NatOutgoingPolicyMatch {
    /// Source IPs/CIDRs, comma-separated.
    #[serde(rename = "srcIPs", default, skip_serializing_if = "Option::is_none")]
    pub src_ips: Option<String>,
    /// Destination IPs/CIDRs, comma-separated.
    #[serde(rename = "dstIPs", default, skip_serializing_if = "Option::is_none")]
    pub dst_ips: Option<String>,
}

/// A [`NatOutgoingPolicyRule`] as realized, with the id of its OVN policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NatOutgoingPolicyRuleStatus {
    /// Id tying the rule to the logical router policy that implements it.
    #[serde(rename = "ruleID", default, skip_serializing_if = "Option::is_none")]
    pub rule_id: Option<String>,
    /// The rule.
    #[serde(flatten)]
    pub rule: NatOutgoingPolicyRule,
}

/// What the controller observed of a Subnet. The IP counts and ranges come from IPAM.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubnetStatus {
    /// Ready, Validated and Error conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Free IPv4 addresses.
    #[serde(
        rename = "v4availableIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v4_available_ips: Option<IpCount>,
    /// Free IPv4 addresses as ranges, e.g. `10.16.0.5-10.16.255.254`.
    #[serde(
        rename = "v4availableIPrange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v4_available_ip_range: Option<String>,
    /// Allocated IPv4 addresses.
    #[serde(
        rename = "v4usingIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v4_using_ips: Option<IpCount>,
    /// Allocated IPv4 addresses as ranges.
    #[serde(
        rename = "v4usingIPrange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v4_using_ip_range: Option<String>,
    /// Free IPv6 addresses.
    #[serde(
        rename = "v6availableIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v6_available_ips: Option<IpCount>,
    /// Free IPv6 addresses as ranges.
    #[serde(
        rename = "v6availableIPrange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v6_available_ip_range: Option<String>,
    /// Allocated IPv6 addresses.
    #[serde(
        rename = "v6usingIPs",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v6_using_ips: Option<IpCount>,
    /// Allocated IPv6 addresses as ranges.
    #[serde(
        rename = "v6usingIPrange",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub v6_using_ip_range: Option<String>,
    /// The centralized gateway node currently in use.
    #[serde(
        rename = "activateGateway",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub activate_gateway: Option<String>,
    /// UUID of the NB DHCP_Options row for IPv4.
    #[serde(
        rename = "dhcpV4OptionsUUID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub dhcp_v4_options_uuid: Option<String>,
    /// UUID of the NB DHCP_Options row for IPv6.
    #[serde(
        rename = "dhcpV6OptionsUUID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub dhcp_v6_options_uuid: Option<String>,
    /// Underlay-to-overlay interconnection address in use.
    #[serde(
        rename = "u2oInterconnectionIP",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub u2o_interconnection_ip: Option<String>,
    /// Its MAC address.
    #[serde(
        rename = "u2oInterconnectionMAC",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub u2o_interconnection_mac: Option<String>,
    /// The VPC it connects to.
    #[serde(
        rename = "u2oInterconnectionVPC",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub u2o_interconnection_vpc: Option<String>,
    /// The NAT policy rules as realized.
    #[serde(
        rename = "natOutgoingPolicyRules",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub nat_outgoing_policy_rules: Vec<NatOutgoingPolicyRuleStatus>,
    /// Multicast querier address.
    #[serde(
        rename = "mcastQuerierIP",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub mcast_querier_ip: Option<String>,
    /// Multicast querier MAC address.
    #[serde(
        rename = "mcastQuerierMAC",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub mcast_querier_mac: Option<String>,
}

impl SubnetSpec {
    /// Checks every enum-valued field; the first unknown value is the error.
    pub fn validate(&self) -> Result<(), InvalidField> {
        if let Some(protocol) = &self.protocol {
            protocol.check("spec.protocol")?;
        }
        if let Some(gateway_type) = &self.gateway_type {
            gateway_type.check("spec.gatewayType")?;
        }
        for (i, acl) in self.acls.iter().enumerate() {
            if let Some(direction) = &acl.direction {
                direction.check(format!("spec.acls[{i}].direction"))?;
            }
            if let Some(action) = &acl.action {
                action.check(format!("spec.acls[{i}].action"))?;
            }
        }
        for (i, rule) in self.nat_outgoing_policy_rules.iter().enumerate() {
            if let Some(action) = &rule.action {
                action.check(format!("spec.natOutgoingPolicyRules[{i}].action"))?;
            }
        }
        Ok(())
    }
}
