//! What Kube-OVN's daemon does on each node besides CNI and pod QoS, which the
//! `kube-ovn-daemon` binary does not run yet, so the supervisor runs it on the daemon's
//! library code: the host side (`br-int`'s `ovn0` on the join network with routes to
//! every subnet and the service range, kept converged as Kube-OVN does at start and in
//! `loopOvn0Check`: [`crate::daemon::ensure`], once the controller has given the node
//! its join address). The pods' QoS loop runs in the daemon binary.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use ovs_vsctl::VsClient;

use crate::annotations::NodeAnnotations;
use crate::daemon::{ensure, DatapathType, EncapType, HostNetwork, NodeBootstrap};

/// How often a node's host side is checked.
const PERIOD: Duration = Duration::from_secs(3);
/// The service range routed through `ovn0` (the controller's and daemon's default).
const SERVICE_CIDR: &str = "10.96.0.0/12";
/// `ovn0`'s MTU: the daemon's default pod MTU.
const MTU: u32 = 1400;

/// What one node's loop needs.
#[derive(Debug, Clone)]
pub(crate) struct NodeHost {
    /// The Kubernetes node (= chassis) name.
    pub(crate) name: String,
    /// Its Open_vSwitch database.
    pub(crate) ovs_remote: String,
    /// Its network namespace file.
    pub(crate) netns: PathBuf,
    /// The SB remote its ovn-controller uses.
    pub(crate) sb_remote: String,
    /// Its tunnel endpoint.
    pub(crate) encap_ip: IpAddr,
}

/// Converges the node's host side every [`PERIOD`] until dropped; a failed round is
/// logged and retried.
pub(crate) async fn keep_node_converged(client: kube::Client, host: NodeHost) {
    let mut connections = None;
    let mut last_error = String::new();
    loop {
        if connections.is_none() {
            connections = connect(&host).await;
        }
        if let Some((vs, net)) = &connections {
            match bootstrap(&client, &host).await {
                Some(boot) => match ensure(vs, net, &boot).await {
                    Ok(_) => last_error.clear(),
                    Err(e) => {
                        let text = crate::daemon::error_chain(&e);
                        if text != last_error {
                            tracing::warn!(node = %host.name, error = %text, "node host side not converged");
                            last_error = text;
                        }
                    }
                },
                None => tracing::debug!(node = %host.name, "no join address yet"),
            }
        }
        tokio::time::sleep(PERIOD).await;
    }
}

async fn connect(host: &NodeHost) -> Option<(VsClient, HostNetwork)> {
    let vs = VsClient::connect(&host.ovs_remote)
        .await
        .map_err(|e| tracing::warn!(node = %host.name, error = %e, "cannot reach the node's OVS"))
        .ok()?;
    let net = HostNetwork::open(&host.netns)
        .await
        .map_err(
            |e| tracing::warn!(node = %host.name, error = %e, "cannot open the node's netlink"),
        )
        .ok()?;
    Some((vs, net))
}

/// The node's wanted host side, once the controller has allocated its join port.
async fn bootstrap(client: &kube::Client, host: &NodeHost) -> Option<NodeBootstrap> {
    let node = Api::<Node>::all(client.clone())
        .get_opt(&host.name)
        .await
        .ok()??;
    let (ann, _) =
        NodeAnnotations::parse_lenient(&node.metadata.annotations.clone().unwrap_or_default());
    if !ann.is_allocated() {
        return None;
    }
    let mut routes: Vec<IpNet> = Api::<crate::crd::Subnet>::all(client.clone())
        .list(&ListParams::default())
        .await
        .ok()?
        .items
        .into_iter()
        .filter(|s| ann.logical_switch.as_deref() != s.metadata.name.as_deref())
        .filter_map(|s| s.spec.cidr_block)
        .flat_map(|cidrs| {
            cidrs
                .split(',')
                .filter_map(|c| c.trim().parse::<IpNet>().ok())
                .collect::<Vec<_>>()
        })
        .collect();
    routes.extend(SERVICE_CIDR.parse::<IpNet>().ok());
    routes.sort();
    Some(NodeBootstrap {
        node_name: host.name.clone(),
        system_id: host.name.clone(),
        hostname: host.name.clone(),
        ovn_remotes: vec![host.sb_remote.clone()],
        encap_type: EncapType::Geneve,
        encap_ip: host.encap_ip,
        encap_csum: true,
        bridge_mappings: Default::default(),
        datapath_type: DatapathType::Netdev,
        join_mac: ann.mac_address?.to_string(),
        join_ip: ann.ip_address?,
        join_cidr: ann.cidr?,
        join_gateway: ann.gateway?,
        mtu: MTU,
        routes,
    })
}
