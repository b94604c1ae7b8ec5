//! `kube-ovn-daemon`'s flags, with Kube-OVN's names (`cmd/daemon`, `pkg/daemon/config.go`)
//! where they apply; the node name comes from `KUBE_NODE_NAME` as Kube-OVN's manifests
//! set it (`fieldRef: spec.nodeName`).

use std::path::PathBuf;

use clap::{ArgAction, Parser};

/// The daemon's command line.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-ovn-daemon",
    about = "Kube-OVN's node daemon: CNI ADD/DEL for the kube-ovn CNI binary"
)]
pub struct DaemonFlags {
    /// kubeconfig for the API server (in-cluster configuration when absent).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The unix socket the CNI binary talks to.
    #[arg(long, default_value = "/run/openvswitch/kube-ovn-daemon.sock")]
    pub bind_socket: PathBuf,
    /// The node's Open_vSwitch database (a path or `unix:PATH`).
    #[arg(long, default_value = "/run/openvswitch/db.sock")]
    pub ovs_socket: String,
    /// The tunnel interface.
    #[arg(long)]
    pub iface: Option<String>,
    /// The pod MTU when a subnet sets none (Kube-OVN: the tunnel interface's MTU - 100).
    #[arg(long, default_value_t = 1400)]
    pub mtu: u32,
    /// Checksum the tunnel packets (`ovn-encap-csum`).
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub encap_checksum: bool,
    /// The tunnel type.
    #[arg(long, default_value = "geneve")]
    pub network_type: String,
    /// Install the conflist into `--cni-conf-dir`.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub install_cni_config: bool,
    /// Where runtimes read CNI configurations.
    #[arg(long, default_value = "/etc/cni/net.d")]
    pub cni_conf_dir: PathBuf,
    /// The conflist's file name.
    #[arg(long, default_value = super::cniconf::DEFAULT_CONF_NAME)]
    pub cni_conf_name: String,
    /// The service CIDR(s).
    #[arg(long, default_value = "10.96.0.0/12")]
    pub service_cluster_ip_range: String,
    /// Mirror pod traffic to `mirror0`.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enable_mirror: bool,
    /// This node.
    #[arg(long, env = "KUBE_NODE_NAME")]
    pub node_name: String,
    /// Not Kube-OVN's: the network namespace holding ovs-vswitchd and the host ends of the
    /// veths, for a node simulated in a namespace (default: the daemon's own).
    #[arg(long)]
    pub host_netns: Option<PathBuf>,
}

impl DaemonFlags {
    /// The `--ovs-socket` as an OVSDB remote.
    pub fn ovs_remote(&self) -> String {
        if self.ovs_socket.contains(':') {
            self.ovs_socket.clone()
        } else {
            format!("unix:{}", self.ovs_socket)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_ovns_flag_names_and_defaults() {
        let flags = DaemonFlags::try_parse_from([
            "kube-ovn-daemon",
            "--node-name=n1",
            "--install-cni-config",
            "--encap-checksum=false",
            "--ovs-socket=/var/run/openvswitch/db.sock",
            "--iface=eth1",
            "--network-type=geneve",
            "--service-cluster-ip-range=10.96.0.0/12",
        ])
        .unwrap();
        assert_eq!(
            flags.bind_socket,
            PathBuf::from("/run/openvswitch/kube-ovn-daemon.sock")
        );
        assert!(flags.install_cni_config);
        assert!(!flags.encap_checksum);
        assert!(!flags.enable_mirror);
        assert_eq!(flags.ovs_remote(), "unix:/var/run/openvswitch/db.sock");
        assert_eq!(flags.cni_conf_name, "01-kube-ovn.conflist");
        assert_eq!(flags.cni_conf_dir, PathBuf::from("/etc/cni/net.d"));
        let bad = DaemonFlags::try_parse_from(["kube-ovn-daemon", "--node-name=n1", "--mtu=big"]);
        assert!(bad.unwrap_err().to_string().contains("--mtu"));
    }
}
