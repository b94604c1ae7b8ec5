//! The keys under which the controller's objects hold addresses: the IPAM [`Owner`] of
//! a pod's NIC or of a node's join address, and the names of the IP objects and ports
//! that record them. Kept in one place so that the start-up rebuild, the pod and node
//! reconcilers and garbage collection always agree.

use ipam::{Owner, SubnetSpec};

use crate::crd::Subnet;

/// The provider name of a pod's primary (OVN) NIC.
pub const OVN_PROVIDER: &str = "ovn";

/// The IPAM owner of a pod's NIC: `<namespace>/<pod>` (Kube-OVN's IPAM key) and the
/// NIC's provider (`ovn` for the primary NIC).
pub fn pod_owner(namespace: &str, pod: &str, provider: &str) -> Owner {
    Owner::new(format!("{namespace}/{pod}"), provider)
}

/// The IPAM owner of a node's join address: `node-<node>` (Kube-OVN's
/// `util.NodeLspName`), on the `ovn` provider.
pub fn node_owner(node: &str) -> Owner {
    Owner::new(node_port_name(node), OVN_PROVIDER)
}

/// A pod's logical switch port and IP object name for its primary NIC:
/// `<pod>.<namespace>`; for another provider `<pod>.<namespace>.<provider>`.
pub fn pod_port_name(namespace: &str, pod: &str, provider: &str) -> String {
    if provider == OVN_PROVIDER {
        format!("{pod}.{namespace}")
    } else {
        format!("{pod}.{namespace}.{provider}")
    }
}

/// A node's port on the join switch, and its IP object name: `node-<node>`.
pub fn node_port_name(node: &str) -> String {
    format!("node-{node}")
}

/// The port group of a distributed-gateway Subnet's pods on one node,
/// `<subnet>.<node>` with every `-` made `.` (OVN address set names, which the group's
/// `_ip4`/`_ip6` sets take after it, allow no `-`): Kube-OVN's
/// `getOverlaySubnetsPortGroupName`.
pub fn distributed_port_group_name(subnet: &str, node: &str) -> String {
    format!("{subnet}.{node}").replace('-', ".")
}

/// The IPAM view of a Subnet's address fields (`cidrBlock`, `gateway`, `excludeIps`);
/// `None` when it has no CIDR yet.
pub fn ipam_spec(subnet: &Subnet) -> Option<SubnetSpec> {
    let cidr_block = subnet.spec.cidr_block.clone()?;
    Some(SubnetSpec {
        cidr_block,
        gateway: subnet.spec.gateway.clone().unwrap_or_default(),
        exclude_ips: subnet.spec.exclude_ips.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_kube_ovn() {
        assert_eq!(
            pod_port_name("default", "web-0", OVN_PROVIDER),
            "web-0.default"
        );
        assert_eq!(
            pod_port_name("default", "web-0", "macvlan.default"),
            "web-0.default.macvlan.default"
        );
        assert_eq!(node_port_name("kube-ovn-worker"), "node-kube-ovn-worker");
        assert_eq!(
            distributed_port_group_name("ovn-default", "kube-ovn-worker"),
            "ovn.default.kube.ovn.worker"
        );
        assert_eq!(
            pod_owner("ns1", "a", OVN_PROVIDER).to_string(),
            pod_owner("ns1", "a", "ovn").to_string()
        );
        assert_ne!(
            node_owner("n1").to_string(),
            pod_owner("default", "n1", "ovn").to_string()
        );
    }
}
