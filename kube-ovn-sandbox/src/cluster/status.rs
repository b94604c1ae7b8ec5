//! `status`: the nodes (join address, chassis), the pods (node, IP, MAC, subnet,
//! ovn-installed on their node's OVS) and the subnets with their usage.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};

use super::apply::client;
use super::error::SandboxError;
use super::layout::StateLayout;
use kube_ovn_api::annotations::{NodeAnnotations, PodNetwork, Provider};
use kubectl_ko::target::SandboxState;

/// One node's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRow {
    /// Its name.
    pub name: String,
    /// Its underlay address (InternalIP).
    pub internal_ip: String,
    /// Its join-network address (`ovn0`), from the controller's annotation.
    pub join_ip: String,
    /// Its chassis.
    pub chassis: String,
}

/// One pod's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRow {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Phase.
    pub phase: String,
    /// Node.
    pub node: String,
    /// Addresses.
    pub ip: String,
    /// MAC.
    pub mac: String,
    /// Logical switch.
    pub subnet: String,
    /// Whether its OVS interface on its node has `external_ids:ovn-installed=true`.
    pub ovn_installed: bool,
}

/// One subnet's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubnetRow {
    /// Name.
    pub name: String,
    /// CIDR.
    pub cidr: String,
    /// Private.
    pub private: bool,
    /// Addresses in use.
    pub used: String,
    /// Addresses still free.
    pub available: String,
}

/// What `status` shows.
#[derive(Debug, Clone, Default)]
pub struct StatusReport {
    /// Nodes.
    pub nodes: Vec<NodeRow>,
    /// Pods.
    pub pods: Vec<PodRow>,
    /// Subnets.
    pub subnets: Vec<SubnetRow>,
}

/// Loads `sandbox.json`, failing with [`SandboxError::NotRunning`] when it is absent.
pub(crate) fn load_state(layout: &StateLayout) -> Result<SandboxState, SandboxError> {
    let file = layout.ko_state();
    if !file.exists() {
        return Err(SandboxError::NotRunning {
            dir: layout.dir().to_path_buf(),
            file,
        });
    }
    Ok(SandboxState::load(layout.dir())?)
}

/// Reads the sandbox's state from its API server and its nodes' OVS.
pub async fn status(layout: &StateLayout) -> Result<StatusReport, SandboxError> {
    let state = load_state(layout)?;
    let client = client(&state.kubeconfig).await?;
    let list = ListParams::default();
    let nodes = Api::<Node>::all(client.clone())
        .list(&list)
        .await
        .map_err(SandboxError::api("listing nodes"))?
        .items;
    let pods = Api::<Pod>::all(client.clone())
        .list(&list)
        .await
        .map_err(SandboxError::api("listing pods"))?
        .items;
    let subnets = Api::<kube_ovn_api::crd::Subnet>::all(client.clone())
        .list(&list)
        .await
        .map_err(SandboxError::api("listing subnets"))?
        .items;
    let mut report = StatusReport {
        nodes: nodes.iter().map(node_row).collect(),
        pods: pods.iter().map(|p| pod_row(&state, p)).collect(),
        subnets: subnets.iter().map(subnet_row).collect(),
    };
    report
        .pods
        .sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(report)
}

fn node_row(node: &Node) -> NodeRow {
    let (ann, _) =
        NodeAnnotations::parse_lenient(&node.metadata.annotations.clone().unwrap_or_default());
    let internal_ip = node
        .status
        .iter()
        .flat_map(|s| s.addresses.iter().flatten())
        .find(|a| a.type_ == "InternalIP")
        .map(|a| a.address.clone())
        .unwrap_or_default();
    NodeRow {
        name: node.metadata.name.clone().unwrap_or_default(),
        internal_ip,
        join_ip: ann
            .ip_address
            .map(|ip| addrs(&ip.addrs()))
            .unwrap_or_default(),
        chassis: ann.chassis.unwrap_or_default(),
    }
}

fn addrs(list: &[std::net::IpAddr]) -> String {
    list.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn pod_row(state: &SandboxState, pod: &Pod) -> PodRow {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default();
    let (net, _) = PodNetwork::parse_lenient(
        &Provider::ovn(),
        &pod.metadata.annotations.clone().unwrap_or_default(),
    );
    let ovn_installed = state
        .nodes
        .iter()
        .find(|n| n.name == node)
        .is_some_and(|n| ovn_installed(&n.ovs_remote, &format!("{name}.{namespace}")));
    PodRow {
        phase: pod
            .status
            .as_ref()
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Pending".into()),
        ip: net
            .ip_address
            .map(|ip| addrs(&ip.addrs()))
            .unwrap_or_default(),
        mac: net.mac_address.map(|m| m.to_string()).unwrap_or_default(),
        subnet: net.logical_switch.unwrap_or_default(),
        namespace,
        name,
        node,
        ovn_installed,
    }
}

/// Whether the interface of logical port `port` on the node whose database is
/// `ovs_remote` has been installed by ovn-controller.
fn ovn_installed(ovs_remote: &str, port: &str) -> bool {
    let db = format!("--db={ovs_remote}");
    let iface = format!("external_ids:iface-id={port}");
    ovn_harness::run(
        "ovs-vsctl",
        &[
            &db,
            "--timeout=5",
            "--bare",
            "--columns=name",
            "find",
            "Interface",
            &iface,
            "external_ids:ovn-installed=\"true\"",
        ],
    )
    .is_ok_and(|out| !out.trim().is_empty())
}

fn subnet_row(subnet: &kube_ovn_api::crd::Subnet) -> SubnetRow {
    let status = subnet.status.clone().unwrap_or_default();
    let count = |c: Option<kube_ovn_api::crd::IpCount>| {
        c.map(|c| c.to_string()).unwrap_or_else(|| "-".into())
    };
    SubnetRow {
        name: subnet.metadata.name.clone().unwrap_or_default(),
        cidr: subnet.spec.cidr_block.clone().unwrap_or_default(),
        private: subnet.spec.private.unwrap_or(false),
        used: count(status.v4_using_ips),
        available: count(status.v4_available_ips),
    }
}

impl StatusReport {
    /// Three tables, as `kubectl get` prints them.
    pub fn render(&self) -> String {
        let mut out = String::from("NODES\n");
        out.push_str(&table(
            &["NAME", "INTERNAL-IP", "JOIN-IP", "CHASSIS"],
            self.nodes.iter().map(|n| {
                vec![
                    n.name.clone(),
                    n.internal_ip.clone(),
                    n.join_ip.clone(),
                    n.chassis.clone(),
                ]
            }),
        ));
        out.push_str("\nPODS\n");
        out.push_str(&table(
            &[
                "NAMESPACE",
                "NAME",
                "PHASE",
                "NODE",
                "IP",
                "MAC",
                "SUBNET",
                "OVN-INSTALLED",
            ],
            self.pods.iter().map(|p| {
                vec![
                    p.namespace.clone(),
                    p.name.clone(),
                    p.phase.clone(),
                    p.node.clone(),
                    p.ip.clone(),
                    p.mac.clone(),
                    p.subnet.clone(),
                    p.ovn_installed.to_string(),
                ]
            }),
        ));
        out.push_str("\nSUBNETS\n");
        out.push_str(&table(
            &["NAME", "CIDR", "PRIVATE", "V4-USED", "V4-AVAILABLE"],
            self.subnets.iter().map(|s| {
                vec![
                    s.name.clone(),
                    s.cidr.clone(),
                    s.private.to_string(),
                    s.used.clone(),
                    s.available.clone(),
                ]
            }),
        ));
        out
    }
}

fn table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut all: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    all.extend(rows);
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            all.iter()
                .map(|r| r.get(i).map_or(0, String::len))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in all {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths[i]))
            .collect();
        out.push_str(cells.join("   ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::table;

    #[test]
    fn table_aligns_columns() {
        let out = table(
            &["A", "LONGER"],
            vec![vec!["xyz".to_string(), "1".to_string()]].into_iter(),
        );
        assert_eq!(out, "A     LONGER\nxyz   1\n");
    }
}
