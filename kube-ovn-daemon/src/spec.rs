//! What a node should look like: [`NodeBootstrap`], plain desired values, and its
//! validation into [`Plan`] before anything is written.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::str::FromStr;

use ipam::Mac;
use ipnet::IpNet;

use kube_ovn_api::annotations::{CidrPair, IpPair, NodeAnnotations};

/// The node's port on the join switch, as Kube-OVN names it (`util.NodeNic`).
pub const NODE_NIC: &str = "ovn0";
/// The integration bridge ovn-controller programs.
pub const INTEGRATION_BRIDGE: &str = "br-int";
/// `/sys/module/<name>` exists while a kernel module is loaded (or built in).
const KERNEL_MODULE_DIR: &str = "/sys/module/openvswitch";

/// `Bridge:datapath_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatapathType {
    /// The kernel datapath (`openvswitch.ko`).
    System,
    /// The userspace datapath of ovs-vswitchd (tap devices for internal ports).
    Netdev,
}

impl DatapathType {
    /// The schema's value.
    pub fn as_str(self) -> &'static str {
        match self {
            DatapathType::System => "system",
            DatapathType::Netdev => "netdev",
        }
    }

    /// `system` when the kernel's `openvswitch` module is loaded, `netdev` otherwise.
    ///
    /// A loaded (or built-in) module shows up as the directory `/sys/module/openvswitch`;
    /// hosts without it (containers on kernels built without the module, such as this
    /// project's CI machines) can only run the userspace datapath.
    pub fn detect() -> DatapathType {
        DatapathType::detect_at(Path::new(KERNEL_MODULE_DIR))
    }

    /// [`DatapathType::detect`] with the module directory given (for tests).
    pub fn detect_at(module_dir: &Path) -> DatapathType {
        if module_dir.is_dir() {
            DatapathType::System
        } else {
            DatapathType::Netdev
        }
    }
}

impl fmt::Display for DatapathType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `external_ids:ovn-encap-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncapType {
    /// GENEVE (Kube-OVN's default).
    Geneve,
    /// VXLAN.
    Vxlan,
    /// STT.
    Stt,
}

impl EncapType {
    /// The value ovn-controller reads.
    pub fn as_str(self) -> &'static str {
        match self {
            EncapType::Geneve => "geneve",
            EncapType::Vxlan => "vxlan",
            EncapType::Stt => "stt",
        }
    }
}

/// Everything the node bootstrap makes true on one node.
///
/// Built from the daemon's flags (`ovn-remote`, encapsulation, MTU, ...) and the Node's
/// annotations (`NodeAnnotations`: the join port's MAC, address, CIDR and gateway the
/// controller allocated).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeBootstrap {
    /// The Kubernetes node; `ovn0` is bound to the join port `node-<node_name>`.
    pub node_name: String,
    /// `external_ids:system-id`, the OVN chassis name.
    pub system_id: String,
    /// `external_ids:hostname`.
    pub hostname: String,
    /// Southbound remotes, joined with `,` into `external_ids:ovn-remote`.
    pub ovn_remotes: Vec<String>,
    /// `external_ids:ovn-encap-type`.
    pub encap_type: EncapType,
    /// `external_ids:ovn-encap-ip`, the tunnel endpoint.
    pub encap_ip: IpAddr,
    /// `external_ids:ovn-encap-csum` (Kube-OVN's `--encap-checksum`).
    pub encap_csum: bool,
    /// Provider network to bridge (`external_ids:ovn-bridge-mappings`); the key is
    /// removed when empty.
    pub bridge_mappings: BTreeMap<String, String>,
    /// `br-int`'s datapath ([`DatapathType::detect`]).
    pub datapath_type: DatapathType,
    /// The join port's MAC (annotation `ovn.kubernetes.io/mac_address`), as written.
    pub join_mac: String,
    /// The join port's addresses (`ip_address`).
    pub join_ip: IpPair,
    /// The join subnet's CIDRs (`cidr`).
    pub join_cidr: CidrPair,
    /// The join subnet's gateways (`gateway`).
    pub join_gateway: IpPair,
    /// `ovn0`'s MTU.
    pub mtu: u32,
    /// Destinations routed via the join gateway through `ovn0`: every overlay subnet's
    /// CIDR and the service CIDR.
    pub routes: Vec<IpNet>,
}

/// Bad desired values; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NodeSpecError {
    /// A name that must not be empty is.
    #[error("{field} is empty")]
    Empty {
        /// Which value.
        field: &'static str,
    },
    /// The join MAC does not parse.
    #[error("join MAC {mac:?} does not parse")]
    JoinMacSyntax {
        /// The value.
        mac: String,
    },
    /// The join MAC is a group or all-zero address.
    #[error("join MAC {mac:?} is not a unicast address")]
    JoinMacNotUnicast {
        /// The value.
        mac: String,
    },
    /// The join port has no address.
    #[error("the join port has no address")]
    NoJoinAddress,
    /// A join address or gateway has no join CIDR of its family.
    #[error("{what} {ip} has no join CIDR of its family")]
    NoCidrFor {
        /// `join address` or `join gateway`.
        what: &'static str,
        /// The address.
        ip: IpAddr,
    },
    /// A join address or gateway lies outside its join CIDR.
    #[error("{what} {ip} is outside the join CIDR {cidr}")]
    OutsideCidr {
        /// `join address` or `join gateway`.
        what: &'static str,
        /// The address.
        ip: IpAddr,
        /// The CIDR.
        cidr: IpNet,
    },
    /// A route's family has no join gateway to route it through.
    #[error("route to {destination} has no join gateway of its family")]
    NoGatewayFor {
        /// The destination.
        destination: IpNet,
    },
    /// A node annotation the join port needs is not set yet (the controller has not
    /// allocated the port; Kube-OVN's daemon waits for it).
    #[error("node annotation ovn.kubernetes.io/{key} is not set")]
    MissingAnnotation {
        /// The key after `ovn.kubernetes.io/`.
        key: &'static str,
    },
    /// The MTU is outside what Linux accepts for IPv4 (68) and an `i64` column.
    #[error("MTU {mtu} is outside 68..=65535")]
    Mtu {
        /// The value.
        mtu: u32,
    },
}

/// The validated, parsed form of a [`NodeBootstrap`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub(crate) mac: Mac,
    /// Join addresses with their CIDR's prefix length.
    pub(crate) addresses: Vec<IpNet>,
    /// `(destination, gateway)` routes through `ovn0`.
    pub(crate) routes: Vec<(IpNet, IpAddr)>,
    /// The join CIDRs, routed on-link through `ovn0`.
    pub(crate) on_link: Vec<IpNet>,
}

fn cidr_of(cidrs: &CidrPair, ip: IpAddr, what: &'static str) -> Result<IpNet, NodeSpecError> {
    let cidr = match ip {
        IpAddr::V4(_) => cidrs.v4.map(IpNet::V4),
        IpAddr::V6(_) => cidrs.v6.map(IpNet::V6),
    }
    .ok_or(NodeSpecError::NoCidrFor { what, ip })?;
    if !cidr.contains(&ip) {
        return Err(NodeSpecError::OutsideCidr { what, ip, cidr });
    }
    Ok(cidr)
}

impl NodeBootstrap {
    /// The join port `ovn0` is bound to: `node-<node>`.
    pub fn port_name(&self) -> String {
        format!("node-{}", self.node_name)
    }

    /// Takes the join port (MAC, addresses, CIDR, gateway) from the Node's annotations,
    /// as the controller wrote them; `self` is unchanged when one is missing.
    pub fn set_join_port(&mut self, node: &NodeAnnotations) -> Result<(), NodeSpecError> {
        let missing = |key| NodeSpecError::MissingAnnotation { key };
        let mac = node.mac_address.ok_or(missing("mac_address"))?;
        let ip = node.ip_address.ok_or(missing("ip_address"))?;
        let cidr = node.cidr.ok_or(missing("cidr"))?;
        let gateway = node.gateway.ok_or(missing("gateway"))?;
        self.join_mac = mac.to_string();
        self.join_ip = ip;
        self.join_cidr = cidr;
        self.join_gateway = gateway;
        Ok(())
    }

    /// Checks every value and parses the join port's; no system is touched.
    pub(crate) fn plan(&self) -> Result<Plan, NodeSpecError> {
        for (field, value) in [
            ("node name", &self.node_name),
            ("system-id", &self.system_id),
            ("hostname", &self.hostname),
        ] {
            if value.is_empty() {
                return Err(NodeSpecError::Empty { field });
            }
        }
        if self.ovn_remotes.is_empty() {
            return Err(NodeSpecError::Empty {
                field: "ovn-remote",
            });
        }
        if !(68..=65535).contains(&self.mtu) {
            return Err(NodeSpecError::Mtu { mtu: self.mtu });
        }
        let mac = Mac::from_str(&self.join_mac).map_err(|_| NodeSpecError::JoinMacSyntax {
            mac: self.join_mac.clone(),
        })?;
        if mac.is_multicast() || mac.0 == [0; 6] {
            return Err(NodeSpecError::JoinMacNotUnicast {
                mac: self.join_mac.clone(),
            });
        }
        let ips = self.join_ip.addrs();
        if ips.is_empty() {
            return Err(NodeSpecError::NoJoinAddress);
        }
        let mut addresses = Vec::new();
        let mut on_link = Vec::new();
        for ip in ips {
            let cidr = cidr_of(&self.join_cidr, ip, "join address")?;
            addresses.push(IpNet::new(ip, cidr.prefix_len()).expect("prefix of a valid CIDR"));
            on_link.push(cidr.trunc());
        }
        for gw in self.join_gateway.addrs() {
            cidr_of(&self.join_cidr, gw, "join gateway")?;
        }
        let mut routes = Vec::new();
        for destination in &self.routes {
            let gateway = match destination {
                IpNet::V4(_) => self.join_gateway.v4.map(IpAddr::V4),
                IpNet::V6(_) => self.join_gateway.v6.map(IpAddr::V6),
            }
            .ok_or(NodeSpecError::NoGatewayFor {
                destination: *destination,
            })?;
            routes.push((destination.trunc(), gateway));
        }
        routes.sort();
        routes.dedup();
        Ok(Plan {
            mac,
            addresses,
            routes,
            on_link,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datapath_follows_the_kernel_module_directory() {
        let sys_module = tempfile::tempdir().unwrap();
        let loaded = sys_module.path().join("openvswitch");
        assert_eq!(DatapathType::detect_at(&loaded), DatapathType::Netdev);
        std::fs::create_dir(&loaded).unwrap();
        assert_eq!(DatapathType::detect_at(&loaded), DatapathType::System);
    }

    fn bootstrap() -> NodeBootstrap {
        NodeBootstrap {
            node_name: "n1".into(),
            system_id: "n1".into(),
            hostname: "n1".into(),
            ovn_remotes: vec!["tcp:192.0.2.1:6642".into()],
            encap_type: EncapType::Geneve,
            encap_ip: "192.0.2.5".parse().unwrap(),
            encap_csum: true,
            bridge_mappings: BTreeMap::new(),
            datapath_type: DatapathType::Netdev,
            join_mac: String::new(),
            join_ip: IpPair { v4: None, v6: None },
            join_cidr: CidrPair { v4: None, v6: None },
            join_gateway: IpPair { v4: None, v6: None },
            mtu: 1400,
            routes: vec!["10.16.0.0/16".parse().unwrap()],
        }
    }

    #[test]
    fn join_port_comes_from_the_node_annotations() {
        let map = [
            ("ovn.kubernetes.io/mac_address", "00:00:00:12:34:56"),
            ("ovn.kubernetes.io/ip_address", "100.64.0.3"),
            ("ovn.kubernetes.io/cidr", "100.64.0.0/16"),
            ("ovn.kubernetes.io/gateway", "100.64.0.1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let annotations = NodeAnnotations::parse(&map).unwrap();
        let mut boot = bootstrap();
        boot.set_join_port(&annotations).unwrap();
        let plan = boot.plan().unwrap();
        assert_eq!(plan.mac.to_string(), "00:00:00:12:34:56");
        assert_eq!(plan.addresses, ["100.64.0.3/16".parse::<IpNet>().unwrap()]);
        assert_eq!(
            plan.routes,
            [(
                "10.16.0.0/16".parse().unwrap(),
                "100.64.0.1".parse().unwrap()
            )]
        );

        let mut unallocated = annotations.clone();
        unallocated.gateway = None;
        let mut untouched = bootstrap();
        assert_eq!(
            untouched.set_join_port(&unallocated),
            Err(NodeSpecError::MissingAnnotation { key: "gateway" })
        );
        assert_eq!(untouched, bootstrap());
    }
}
