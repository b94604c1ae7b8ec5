//! A node's annotations: its join-network port (written by the controller) and what the
//! daemon reports; and the provider-network labels of underlay nodes.

use ipam::Mac;

use super::fields::{annotation_struct, Reader, Writer};
use super::value::{CidrPair, IpPair};
use super::{AnnotationError, AnnotationMap, Provider};

annotation_struct! {
    /// `ovn.kubernetes.io/*` keys of a Node: the join-switch port `node-<name>` the
    /// controller allocated, and what the node daemon reports back.
    pub struct NodeAnnotations {
        /// The join port's address was allocated (`"true"`).
        allocated: bool => "allocated",
        /// The join port's addresses (`ovn0` on the node).
        ip_address: IpPair => "ip_address",
        /// The join port's MAC.
        mac_address: Mac => "mac_address",
        /// The join subnet's CIDRs.
        cidr: CidrPair => "cidr",
        /// The join subnet's gateways.
        gateway: IpPair => "gateway",
        /// The join switch (`join`).
        logical_switch: String => "logical_switch",
        /// The join port's name, `node-<node>`.
        port_name: String => "port_name",
        /// The node's OVN chassis name (written by the daemon).
        chassis: String => "chassis",
        /// The node's tunnel interface (written by the daemon).
        tunnel_interface: String => "tunnel_interface",
    }
}

impl NodeAnnotations {
    /// Reads a node's keys.
    pub fn parse(map: &AnnotationMap) -> Result<NodeAnnotations, AnnotationError> {
        let prefix = Provider::ovn().key_prefix();
        NodeAnnotations::read(&Reader {
            map,
            prefix: &prefix,
        })
    }

    /// Every well-formed key, and an error for each malformed one (left unset).
    pub fn parse_lenient(map: &AnnotationMap) -> (Self, Vec<AnnotationError>) {
        let prefix = Provider::ovn().key_prefix();
        Self::read_lenient(&Reader {
            map,
            prefix: &prefix,
        })
    }

    /// Writes a node's keys (unset fields removed, other keys kept).
    pub fn write_into(&self, map: &mut AnnotationMap) {
        let prefix = Provider::ovn().key_prefix();
        self.write(&mut Writer {
            map,
            prefix: &prefix,
        });
    }

    /// True once the controller has allocated the join port (`allocated` is `"true"`).
    pub fn is_allocated(&self) -> bool {
        self.allocated == Some(true)
    }
}

annotation_struct! {
    /// The labels `<provider-network>.provider-network.kubernetes.io/*` the daemon keeps
    /// on an underlay node for each ProviderNetwork.
    pub struct ProviderNetworkNodeLabels {
        /// The provider network is ready on this node.
        ready: bool => "ready",
        /// The node is excluded from the provider network.
        exclude: bool => "exclude",
        /// The host NIC the provider network uses on this node.
        interface: String => "interface",
        /// The NIC's MTU.
        mtu: u32 => "mtu",
        /// Why the provider network is not ready.
        err_mesg: String => "err_mesg",
    }
}

impl ProviderNetworkNodeLabels {
    fn prefix(provider_network: &Provider) -> String {
        format!("{provider_network}.provider-network.kubernetes.io/")
    }

    /// Reads the labels of the provider network named `provider_network`.
    pub fn parse(
        provider_network: &Provider,
        labels: &AnnotationMap,
    ) -> Result<ProviderNetworkNodeLabels, AnnotationError> {
        let prefix = Self::prefix(provider_network);
        Self::read(&Reader {
            map: labels,
            prefix: &prefix,
        })
    }

    /// Every well-formed label, and an error for each malformed one (left unset).
    pub fn parse_lenient(
        provider_network: &Provider,
        labels: &AnnotationMap,
    ) -> (Self, Vec<AnnotationError>) {
        let prefix = Self::prefix(provider_network);
        Self::read_lenient(&Reader {
            map: labels,
            prefix: &prefix,
        })
    }

    /// Writes them (unset fields removed, other labels kept).
    pub fn write_into(&self, provider_network: &Provider, labels: &mut AnnotationMap) {
        let prefix = Self::prefix(provider_network);
        self.write(&mut Writer {
            map: labels,
            prefix: &prefix,
        });
    }
}
