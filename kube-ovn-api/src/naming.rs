//! Kube-OVN's naming rules: the `vendor` every row carries, and the keys under which the controller's objects hold addresses: the IPAM [`Owner`] of
//! a pod's NIC or of a node's join address, and the names of the IP objects and ports
//! that record them. Kept in one place so that the start-up rebuild, the pod and node
//! reconcilers and garbage collection always agree.

use ipam::{Owner, SubnetSpec};

use crate::crd::Subnet;

/// `external_ids:vendor` of every row Kube-OVN owns (`util.CniTypeName`).
pub const VENDOR: &str = "kube-ovn";

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

/// `external_ids` key every row the controller writes carries, valued
/// [`VENDOR`].
pub const EXTERNAL_ID_VENDOR: &str = "vendor";
/// `external_ids` key naming the pod (`<namespace>/<pod>`) a logical switch port is for.
pub const EXTERNAL_ID_POD: &str = "pod";
/// `external_ids` key naming the switch (subnet) a port belongs to.
pub const EXTERNAL_ID_LS: &str = "ls";
/// `external_ids` key naming the node a router entry or port group is for.
pub const EXTERNAL_ID_NODE: &str = "node";
/// `external_ids` key naming the subnet a router entry or ACL is for.
pub const EXTERNAL_ID_SUBNET: &str = "subnet";

/// The `external_ids:pod` value of a pod's port: `<namespace>/<pod>`.
pub fn pod_key(namespace: &str, pod: &str) -> String {
    format!("{namespace}/{pod}")
}

/// The provider a port (or IP object) name `<pod>.<namespace>[.<provider>]` stands
/// for, given its pod and namespace; `None` when the name is not that pod's.
pub fn provider_of_port_name(name: &str, namespace: &str, pod: &str) -> Option<String> {
    let rest = name
        .strip_prefix(pod)?
        .strip_prefix('.')?
        .strip_prefix(namespace)?;
    match rest {
        "" => Some(OVN_PROVIDER.to_owned()),
        _ => rest.strip_prefix('.').map(str::to_owned),
    }
}

/// The node a join port or IP object name `node-<node>` is for.
pub fn node_of_port_name(name: &str) -> Option<&str> {
    name.strip_prefix("node-").filter(|n| !n.is_empty())
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
        assert_eq!(
            provider_of_port_name("web-0.default.macvlan.default", "default", "web-0").as_deref(),
            Some("macvlan.default")
        );
        assert_eq!(
            provider_of_port_name("web-0.default", "default", "web-0").as_deref(),
            Some(OVN_PROVIDER)
        );
        assert_eq!(
            provider_of_port_name("web-0.other", "default", "web-0"),
            None
        );
        assert_eq!(
            node_of_port_name("node-kube-ovn-worker"),
            Some("kube-ovn-worker")
        );
        assert_ne!(
            node_owner("n1").to_string(),
            pod_owner("default", "n1", "ovn").to_string()
        );
    }
}
