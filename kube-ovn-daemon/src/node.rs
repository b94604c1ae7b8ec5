//! The node bootstrap as the daemon runs it: the desired [`NodeBootstrap`] built from
//! the daemon's settings and the cluster's state (the Node's join-port annotations, the
//! Subnets whose CIDRs `ovn0` routes), and the loop that keeps the node converged, as
//! Kube-OVN's `InitNodeGateway` and `loopOvn0Check` do.
//!
//! The tunnel endpoint follows Kube-OVN's `initNicConfig`: the first address of
//! `--iface` (a name, or a comma-separated list of names and regular expressions), else
//! `POD_IP` (the node's address in Kube-OVN's DaemonSet, a host-network pod); the pod
//! MTU defaults to that interface's MTU less the tunnel header.

use std::future::Future;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use futures::TryStreamExt;
use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, PostParams};
use ovs_vsctl::{OpenVSwitch, VsClient};
use rtnetlink::packet_route::address::AddressAttribute;
use rtnetlink::packet_route::link::LinkAttribute;

use super::{ensure, error_chain, DatapathType, EncapType, HostNetwork, NodeBootstrap};
use kube_ovn_api::annotations::NodeAnnotations;
use kube_ovn_api::crd::Subnet;

/// The default VPC's router: only its overlay subnets are routed through `ovn0`.
const DEFAULT_VPC: &str = "ovn-cluster";
/// The Node condition Kube-OVN sets after pinging the join gateway from `ovn0`.
pub const NETWORK_UNAVAILABLE: &str = "NetworkUnavailable";
/// Its reasons.
pub const GATEWAY_REACHABLE: &str = "JoinSubnetGatewayReachable";
/// See [`GATEWAY_REACHABLE`].
pub const GATEWAY_UNREACHABLE: &str = "JoinSubnetGatewayUnreachable";
/// The join gateway check of one round: short, so a dead gateway does not hold up the
/// loop (Kube-OVN retries its ping at start-up, then `loopOvn0Check` every 5 s).
const GATEWAY_CHECK: datapath::GatewayCheck = datapath::GatewayCheck {
    attempts: 5,
    interval: Duration::from_millis(200),
};

/// What the daemon's flags and environment fix for the node bootstrap.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSettings {
    /// The Kubernetes node; also `system-id` and `hostname`, as in Kube-OVN.
    pub node_name: String,
    /// Southbound remotes for `external_ids:ovn-remote`. Empty: the value already in
    /// `Open_vSwitch` is kept (in Kube-OVN the ovs-ovn container's `start-ovs.sh` sets it).
    pub ovn_remotes: Vec<String>,
    /// `--network-type`.
    pub encap_type: EncapType,
    /// The tunnel endpoint.
    pub encap_ip: IpAddr,
    /// `--encap-checksum`.
    pub encap_csum: bool,
    /// `br-int`'s datapath.
    pub datapath_type: DatapathType,
    /// `ovn0`'s MTU.
    pub mtu: u32,
    /// `--service-cluster-ip-range`, routed through `ovn0`.
    pub service_cidrs: Vec<IpNet>,
    /// The host namespace's file, for the join gateway check from `ovn0`
    /// (`/proc/self/ns/net` on a real node).
    pub host_netns: PathBuf,
}

/// Why the bootstrap cannot be built yet; the loop waits and tries again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeWait {
    /// The Node object does not exist (yet).
    #[error("node {node} does not exist")]
    NoNode {
        /// The node.
        node: String,
    },
    /// The controller has not allocated the node's join port.
    #[error("node {node} has no join port yet (ovn.kubernetes.io/allocated is not true)")]
    NotAllocated {
        /// The node.
        node: String,
    },
    /// No Southbound remote: neither a flag nor `Open_vSwitch` gives one.
    #[error("no ovn-remote: give --ovn-remote or set external_ids:ovn-remote")]
    NoOvnRemote,
    /// The API server could not be read.
    #[error("reading {what} failed: {reason}")]
    Api {
        /// What was read.
        what: &'static str,
        /// The client's error.
        reason: String,
    },
}

/// The tunnel interface as found in the host namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelInterface {
    /// Its name.
    pub name: String,
    /// Its MTU.
    pub mtu: u32,
    /// Its addresses, in the kernel's order.
    pub addresses: Vec<IpAddr>,
}

/// The tunnel interface was not found, or has no address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TunnelError {
    /// No link matches `--iface`.
    #[error("no network interface matches --iface={wanted} in namespace {namespace}")]
    NoMatch {
        /// The flag's value.
        wanted: String,
        /// The namespace looked in.
        namespace: String,
    },
    /// A part of `--iface` is neither a name nor a valid regular expression.
    #[error("--iface part {part:?} is not a valid regular expression: {reason}")]
    BadPattern {
        /// The part.
        part: String,
        /// The regex crate's message.
        reason: String,
    },
    /// No link carries `POD_IP`.
    #[error("no network interface carries POD_IP {ip} in namespace {namespace}")]
    NoneCarries {
        /// The address.
        ip: IpAddr,
        /// The namespace looked in.
        namespace: String,
    },
    /// The matching interface has no address to tunnel from.
    #[error("tunnel interface {name} has no IP address")]
    NoAddress {
        /// The interface.
        name: String,
    },
    /// Netlink failed.
    #[error("listing links and addresses in namespace {namespace} failed: {reason}")]
    Netlink {
        /// The namespace.
        namespace: String,
        /// The error.
        reason: String,
    },
}

impl HostNetwork {
    /// Every link with its MTU and addresses.
    async fn interfaces(&self) -> Result<Vec<(u32, TunnelInterface)>, TunnelError> {
        let fail = |e: rtnetlink::Error| TunnelError::Netlink {
            namespace: self.namespace().to_string(),
            reason: e.to_string(),
        };
        let handle = self.handle();
        let links: Vec<_> = handle
            .link()
            .get()
            .execute()
            .try_collect()
            .await
            .map_err(fail)?;
        let addresses: Vec<_> = handle
            .address()
            .get()
            .execute()
            .try_collect()
            .await
            .map_err(fail)?;
        Ok(links
            .into_iter()
            .map(|link| {
                let index = link.header.index;
                let (mut name, mut mtu) = (String::new(), 0);
                for attr in link.attributes {
                    match attr {
                        LinkAttribute::IfName(n) => name = n,
                        LinkAttribute::Mtu(m) => mtu = m,
                        _ => {}
                    }
                }
                let addresses = addresses
                    .iter()
                    .filter(|a| a.header.index == index)
                    .filter_map(|a| {
                        a.attributes.iter().find_map(|attr| match attr {
                            AddressAttribute::Address(ip) => Some(*ip),
                            _ => None,
                        })
                    })
                    .collect();
                (
                    index,
                    TunnelInterface {
                        name,
                        mtu,
                        addresses,
                    },
                )
            })
            .collect())
    }

    /// The tunnel interface named by `--iface`: an exact name first, then each
    /// comma-separated part as a regular expression, in the kernel's link order.
    pub async fn tunnel_interface(&self, wanted: &str) -> Result<TunnelInterface, TunnelError> {
        let links = self.interfaces().await?;
        let parts: Vec<&str> = wanted.split(',').map(str::trim).collect();
        let exact = links.iter().find(|(_, l)| parts.contains(&l.name.as_str()));
        let found = match exact {
            Some((_, link)) => Some(link.clone()),
            None => {
                let mut patterns = Vec::new();
                for part in parts.iter().filter(|p| !p.is_empty()) {
                    patterns.push(regex::Regex::new(part).map_err(|e| {
                        TunnelError::BadPattern {
                            part: part.to_string(),
                            reason: e.to_string(),
                        }
                    })?);
                }
                links
                    .iter()
                    .find(|(_, l)| patterns.iter().any(|p| p.is_match(&l.name)))
                    .map(|(_, l)| l.clone())
            }
        };
        let link = found.ok_or_else(|| TunnelError::NoMatch {
            wanted: wanted.to_string(),
            namespace: self.namespace().to_string(),
        })?;
        if link.addresses.is_empty() {
            return Err(TunnelError::NoAddress { name: link.name });
        }
        Ok(link)
    }

    /// The interface carrying `ip` (Kube-OVN's `POD_IP` fallback).
    pub async fn interface_with(&self, ip: IpAddr) -> Result<TunnelInterface, TunnelError> {
        self.interfaces()
            .await?
            .into_iter()
            .map(|(_, link)| link)
            .find(|link| link.addresses.contains(&ip))
            .ok_or_else(|| TunnelError::NoneCarries {
                ip,
                namespace: self.namespace().to_string(),
            })
    }
}

/// The tunnel header Kube-OVN takes off the interface's MTU for the pods' default MTU
/// (`pkg/util/const.go`: geneve and vlan 100, vxlan 50, stt 72; 20 more over IPv6).
pub fn tunnel_overhead(encap: EncapType, encap_ip: IpAddr) -> u32 {
    let base = match encap {
        EncapType::Geneve => 100,
        EncapType::Vxlan => 50,
        EncapType::Stt => 72,
    };
    base + if encap_ip.is_ipv6() { 20 } else { 0 }
}

/// The CIDRs `ovn0` routes through the join gateway: every overlay subnet of the
/// default VPC except the join subnet itself (it is on-link), and the service range.
/// Underlay subnets (`vlan` set) are reached through their provider network instead.
pub fn routed_cidrs(
    subnets: &[Subnet],
    join_switch: Option<&str>,
    services: &[IpNet],
) -> Vec<IpNet> {
    let mut routes: Vec<IpNet> = subnets
        .iter()
        .filter(|s| s.metadata.name.as_deref() != join_switch)
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .filter(|s| {
            let vpc = s.spec.vpc.as_deref().unwrap_or_default();
            vpc.is_empty() || vpc == DEFAULT_VPC
        })
        .filter(|s| s.spec.vlan.as_deref().unwrap_or_default().is_empty())
        .filter_map(|s| s.spec.cidr_block.as_deref())
        .flat_map(|block| {
            block
                .split(',')
                .filter_map(|c| c.trim().parse::<IpNet>().ok())
                .map(|c| c.trunc())
                .collect::<Vec<_>>()
        })
        .chain(services.iter().map(IpNet::trunc))
        .collect();
    routes.sort();
    routes.dedup();
    routes
}

/// The `ovn-remote` the bootstrap writes: the settings', else what `Open_vSwitch` has.
fn ovn_remotes(vs: &VsClient, settings: &NodeSettings) -> Result<Vec<String>, NodeWait> {
    if !settings.ovn_remotes.is_empty() {
        return Ok(settings.ovn_remotes.clone());
    }
    let current = vs
        .store()
        .rows::<OpenVSwitch>()
        .ok()
        .and_then(|rows| rows.into_iter().next())
        .and_then(|root| root.row.external_ids.get("ovn-remote").cloned())
        .filter(|remote| !remote.is_empty());
    match current {
        Some(remote) => Ok(remote.split(',').map(str::to_string).collect()),
        None => Err(NodeWait::NoOvnRemote),
    }
}

/// The node as it should be now, from the settings and the cluster's state.
pub async fn desired(
    client: &kube::Client,
    vs: &VsClient,
    settings: &NodeSettings,
) -> Result<NodeBootstrap, NodeWait> {
    let api_failed = |what| {
        move |e: kube::Error| NodeWait::Api {
            what,
            reason: e.to_string(),
        }
    };
    let node = Api::<Node>::all(client.clone())
        .get_opt(&settings.node_name)
        .await
        .map_err(api_failed("the Node"))?
        .ok_or_else(|| NodeWait::NoNode {
            node: settings.node_name.clone(),
        })?;
    let (ann, _) = NodeAnnotations::parse_lenient(&node.metadata.annotations.unwrap_or_default());
    let not_allocated = || NodeWait::NotAllocated {
        node: settings.node_name.clone(),
    };
    if !ann.is_allocated() {
        return Err(not_allocated());
    }
    let subnets = Api::<Subnet>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(api_failed("the Subnets"))?
        .items;
    let routes = routed_cidrs(
        &subnets,
        ann.logical_switch.as_deref(),
        &settings.service_cidrs,
    );
    Ok(NodeBootstrap {
        node_name: settings.node_name.clone(),
        system_id: settings.node_name.clone(),
        hostname: settings.node_name.clone(),
        ovn_remotes: ovn_remotes(vs, settings)?,
        encap_type: settings.encap_type,
        encap_ip: settings.encap_ip,
        encap_csum: settings.encap_csum,
        bridge_mappings: Default::default(),
        datapath_type: settings.datapath_type,
        join_mac: ann.mac_address.ok_or_else(not_allocated)?.to_string(),
        join_ip: ann.ip_address.ok_or_else(not_allocated)?,
        join_cidr: ann.cidr.ok_or_else(not_allocated)?,
        join_gateway: ann.gateway.ok_or_else(not_allocated)?,
        mtu: settings.mtu,
        routes,
    })
}

/// Builds the desired node and [`ensure`]s it every `period` until `shutdown`
/// resolves; after a round that changed something (and until the gateway answers),
/// checks the join gateway from `ovn0` and sets the Node's `NetworkUnavailable`
/// condition as Kube-OVN does. A round that cannot build the node (no join port yet)
/// or fails is logged when its reason changes, and retried on the next tick: a deleted
/// `ovn0`, port or route comes back.
pub async fn keep_node_converged(
    client: kube::Client,
    vs: &VsClient,
    net: &HostNetwork,
    settings: &NodeSettings,
    period: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let state = tokio::sync::Mutex::new(LoopState::default());
    super::every(period, shutdown, || async {
        let mut state = state.lock().await;
        let outcome = match desired(&client, vs, settings).await {
            Ok(boot) => match ensure(vs, net, &boot).await {
                Ok(report) => {
                    if !report.is_noop() || state.reachable != Some(true) {
                        let reachable = check_join_gateway(settings, &boot).await;
                        report_gateway(&client, settings, &boot, reachable, &mut state).await;
                    }
                    String::new()
                }
                Err(error) => error_chain(&error),
            },
            Err(wait) => wait.to_string(),
        };
        if outcome != state.last_outcome {
            if outcome.is_empty() {
                tracing::info!(node = %settings.node_name, "node bootstrap converged");
            } else {
                tracing::warn!(node = %settings.node_name, reason = %outcome, "node bootstrap not converged");
            }
            state.last_outcome = outcome;
        }
    })
    .await
}

/// What the loop remembers between rounds.
#[derive(Debug, Default)]
struct LoopState {
    /// The last round's failure (empty: converged).
    last_outcome: String,
    /// The join gateway's reachability as last reported on the Node.
    reachable: Option<bool>,
}

/// ARP / neighbour discovery for the join gateways from `ovn0`.
async fn check_join_gateway(settings: &NodeSettings, boot: &NodeBootstrap) -> Result<(), String> {
    let plan = boot.plan().map_err(|e| e.to_string())?;
    let gateways = boot.join_gateway.addrs();
    datapath::check_gateways(
        &settings.host_netns,
        super::NODE_NIC,
        &plan.addresses,
        &gateways,
        GATEWAY_CHECK,
    )
    .await
    .map(|_| ())
    .map_err(|e| error_chain(&e))
}

/// Sets `NetworkUnavailable` on the Node when it changes (read, then replaced with the
/// read version: a concurrent writer makes it fail and the next round try again).
async fn report_gateway(
    client: &kube::Client,
    settings: &NodeSettings,
    boot: &NodeBootstrap,
    reachable: Result<(), String>,
    state: &mut LoopState,
) {
    let gateways = boot
        .join_gateway
        .addrs()
        .iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let (status, reason, message) = match &reachable {
        Ok(()) => (
            "False",
            GATEWAY_REACHABLE,
            format!("ping check to gateway ip {gateways} succeeded"),
        ),
        Err(why) => (
            "True",
            GATEWAY_UNREACHABLE,
            format!("ping check to gateway ip {gateways} failed: {why}"),
        ),
    };
    let wanted = reachable.is_ok();
    if state.reachable != Some(wanted) {
        tracing::info!(node = %settings.node_name, reachable = wanted, %message, "join gateway check");
    }
    let api = Api::<Node>::all(client.clone());
    let result = async {
        let mut node = api.get_status(&settings.node_name).await?;
        let conditions = node
            .status
            .get_or_insert_with(Default::default)
            .conditions
            .get_or_insert_with(Vec::new);
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        match conditions
            .iter_mut()
            .find(|c| c.type_ == NETWORK_UNAVAILABLE)
        {
            Some(c) if c.status == status && c.reason.as_deref() == Some(reason) => {
                return Ok(());
            }
            Some(c) => {
                c.status = status.to_string();
                c.reason = Some(reason.to_string());
                c.message = Some(message.clone());
                c.last_transition_time = Some(now.clone());
                c.last_heartbeat_time = Some(now);
            }
            None => conditions.push(NodeCondition {
                type_: NETWORK_UNAVAILABLE.to_string(),
                status: status.to_string(),
                reason: Some(reason.to_string()),
                message: Some(message.clone()),
                last_transition_time: Some(now.clone()),
                last_heartbeat_time: Some(now),
            }),
        }
        api.replace_status(&settings.node_name, &PostParams::default(), &node)
            .await
            .map(|_| ())
    }
    .await;
    match result {
        Ok(()) => state.reachable = Some(wanted),
        Err(error) => {
            tracing::warn!(node = %settings.node_name, %error, "setting the NetworkUnavailable condition failed");
            state.reachable = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_ovn_api::crd::SubnetSpec;

    fn subnet(name: &str, cidr: &str, vpc: Option<&str>, vlan: Option<&str>) -> Subnet {
        Subnet::new(
            name,
            SubnetSpec {
                cidr_block: Some(cidr.into()),
                vpc: vpc.map(str::to_string),
                vlan: vlan.map(str::to_string),
                ..Default::default()
            },
        )
    }

    #[test]
    fn routes_cover_default_vpc_overlay_subnets_and_services_only() {
        let subnets = [
            subnet("ovn-default", "10.16.0.0/16", None, None),
            subnet("join", "100.64.0.0/16", Some(DEFAULT_VPC), None),
            subnet(
                "dual",
                "10.17.0.1/16,fd00:17::/112",
                Some(DEFAULT_VPC),
                None,
            ),
            subnet("tenant", "10.18.0.0/16", Some("vpc-a"), None),
            subnet("underlay", "192.168.50.0/24", None, Some("vlan10")),
            subnet("bad", "not-a-cidr", None, None),
        ];
        let services = ["10.96.0.0/12".parse().unwrap()];
        let routes = routed_cidrs(&subnets, Some("join"), &services);
        let want: Vec<IpNet> = [
            "10.16.0.0/16",
            "10.17.0.0/16",
            "10.96.0.0/12",
            "fd00:17::/112",
        ]
        .iter()
        .map(|c| c.parse().unwrap())
        .collect();
        let mut want = want;
        want.sort();
        assert_eq!(routes, want);
    }

    #[test]
    fn overhead_follows_kube_ovns_constants() {
        let v4: IpAddr = "192.0.2.1".parse().unwrap();
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(tunnel_overhead(EncapType::Geneve, v4), 100);
        assert_eq!(tunnel_overhead(EncapType::Vxlan, v4), 50);
        assert_eq!(tunnel_overhead(EncapType::Stt, v4), 72);
        assert_eq!(tunnel_overhead(EncapType::Geneve, v6), 120);
    }
}
