//! A pod's annotations: one [`PodNetwork`] per provider (the default network `ovn`, and
//! each Multus attachment Kube-OVN serves), plus the pod-wide [`PodAnnotations`].

use std::net::IpAddr;

use ipam::Mac;

use super::fields::{annotation_struct, Reader, Writer};
use super::value::{
    BgpAnnouncement, CidrPair, IpFamily, IpPair, IpPool, LossPercent, Names, NicType, Routes,
};
use super::{AnnotationError, AnnotationMap, Provider};

annotation_struct! {
    /// One provider's view of a pod: what the user asked for (static address, pool,
    /// subnet, QoS, routes) and what the controller allocated (`allocated`, `ip_address`,
    /// `mac_address`, `cidr`, `gateway`, `logical_switch`, `routed`). Keys are
    /// `<provider>.kubernetes.io/<name>`.
    pub struct PodNetwork {
        /// The controller allocated this NIC's address (`"true"`).
        allocated: bool => "allocated",
        /// The NIC's routes are in place in OVN (`"true"`); the CNI waits for it.
        routed: bool => "routed",
        /// The NIC's addresses, `10.16.0.5,fd00::5` (static when set by the user).
        ip_address: IpPair => "ip_address",
        /// The NIC's MAC (static when set by the user).
        mac_address: Mac => "mac_address",
        /// The subnet's CIDRs, `10.16.0.0/16,fd00::/112`.
        cidr: CidrPair => "cidr",
        /// The subnet's gateways, `10.16.0.1,fd00::1`.
        gateway: IpPair => "gateway",
        /// The subnet (logical switch) to use or used.
        logical_switch: String => "logical_switch",
        /// The VPC's router.
        logical_router: String => "logical_router",
        /// Fixed addresses for the workload, or an IPPool name.
        ip_pool: IpPool => "ip_pool",
        /// The one family to allocate on a dual-stack subnet.
        ip_family: IpFamily => "ip_family",
        /// The underlay VLAN id.
        vlan_id: u16 => "vlan_id",
        /// The underlay provider network.
        provider_network: String => "provider_network",
        /// Ingress rate limit, Mbit/s.
        ingress_rate: u64 => "ingress_rate",
        /// Egress rate limit, Mbit/s.
        egress_rate: u64 => "egress_rate",
        /// Netem latency, ms.
        latency: u64 => "latency",
        /// Netem jitter, ms.
        jitter: u64 => "jitter",
        /// Netem queue limit, packets.
        limit: u64 => "limit",
        /// Netem loss, percent.
        loss: LossPercent => "loss",
        /// Extra routes, JSON `[{"dst":..,"gw":..}]`.
        routes: Routes => "routes",
        /// This NIC carries the pod's default route.
        default_route: bool => "default_route",
        /// Port security on the logical switch port.
        port_security: bool => "port_security",
        /// Virtual IPs the port may also use.
        port_vips: Vec<IpAddr> => "port_vips",
        /// Security groups of the port.
        security_groups: Names => "security_groups",
        /// Forward unknown L2 destinations to the port.
        layer2_forward: bool => "layer2_forward",
        /// Mirror the NIC's traffic.
        mirror: bool => "mirror",
        /// How the NIC is plugged.
        pod_nic_type: NicType => "pod_nic_type",
        /// The KubeVirt VM owning the pod.
        virtualmachine: String => "virtualmachine",
        /// SR-IOV VF representor (written by the daemon).
        vf_representor: String => "vf_representor",
        /// SR-IOV VF (written by the daemon).
        vf: String => "vf",
        /// KubeVirt live-migration activation strategy (e.g. `rarp`).
        activation_strategy: String => "activation_strategy",
    }
}

impl PodNetwork {
    /// Reads `provider`'s keys from a pod's annotations.
    pub fn parse(provider: &Provider, map: &AnnotationMap) -> Result<PodNetwork, AnnotationError> {
        let prefix = provider.key_prefix();
        PodNetwork::read(&Reader {
            map,
            prefix: &prefix,
        })
    }

    /// Like [`PodNetwork::parse`], but keeps going: every well-formed key is read and
    /// each malformed one is reported (and left unset), so a reconciler can act on the
    /// rest and raise one Event per offender.
    pub fn parse_lenient(
        provider: &Provider,
        map: &AnnotationMap,
    ) -> (PodNetwork, Vec<AnnotationError>) {
        let prefix = provider.key_prefix();
        PodNetwork::read_lenient(&Reader {
            map,
            prefix: &prefix,
        })
    }

    /// Writes `provider`'s keys into a pod's annotations: set fields are written,
    /// unset ones removed, every other key kept.
    pub fn write_into(&self, provider: &Provider, map: &mut AnnotationMap) {
        let prefix = provider.key_prefix();
        self.write(&mut Writer {
            map,
            prefix: &prefix,
        });
    }

    /// The providers whose `allocated` key a pod's annotations carry (`ovn` for
    /// `ovn.kubernetes.io/allocated`, `net1.default.ovn` for an attachment's), sorted.
    pub fn allocated_providers(map: &AnnotationMap) -> Vec<Provider> {
        let mut out: Vec<Provider> = map
            .keys()
            .filter_map(|key| key.strip_suffix(".kubernetes.io/allocated"))
            .filter_map(|provider| Provider::new(provider).ok())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// True once the controller has allocated this NIC (`allocated` is `"true"`).
    pub fn is_allocated(&self) -> bool {
        self.allocated == Some(true)
    }

    /// True once the NIC's routes are in place (`routed` is `"true"`).
    pub fn is_routed(&self) -> bool {
        self.routed == Some(true)
    }
}

annotation_struct! {
    /// The pod-wide `ovn.kubernetes.io/*` keys that are not per provider.
    pub struct PodAnnotations {
        /// Announce the pod's address over BGP.
        bgp: BgpAnnouncement => "bgp",
        /// The pod's EIP (a `dnat_and_snat` on the cluster router).
        eip: IpAddr => "eip",
        /// The pod's SNAT address.
        snat: IpAddr => "snat",
        /// Vip objects the pod uses.
        vip: Names => "vip",
        /// Allowed address pairs: Vip objects whose addresses the port may carry.
        aaps: Names => "aaps",
        /// The pod's north (egress) gateway.
        north_gateway: IpAddr => "north_gateway",
        /// The node chassis hosting the pod.
        chassis: String => "chassis",
    }
}

impl PodAnnotations {
    /// Reads the pod-wide keys.
    pub fn parse(map: &AnnotationMap) -> Result<PodAnnotations, AnnotationError> {
        let prefix = Provider::ovn().key_prefix();
        PodAnnotations::read(&Reader {
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

    /// Writes the pod-wide keys (unset fields removed, other keys kept).
    pub fn write_into(&self, map: &mut AnnotationMap) {
        let prefix = Provider::ovn().key_prefix();
        self.write(&mut Writer {
            map,
            prefix: &prefix,
        });
    }
}
