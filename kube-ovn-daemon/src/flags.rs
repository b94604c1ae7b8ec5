//! `kube-ovn-daemon`'s flags, with Kube-OVN's names (`cmd/daemon`, `pkg/daemon/config.go`)
//! where they apply; the node name comes from `KUBE_NODE_NAME` as Kube-OVN's manifests
//! set it (`fieldRef: spec.nodeName`), the tunnel endpoint from `--iface` or else
//! `POD_IP`, as Kube-OVN's `initNicConfig` reads them.
//!
//! The other flags of Kube-OVN's `cni-server` container ([`IGNORED_DAEMON_FLAGS`]) are
//! accepted and reported as ignored ([`DaemonFlags::parse_with_ignored`]), so the
//! DaemonSet's args of Kube-OVN's chart run unchanged; an unknown flag is an error.

use std::path::PathBuf;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

use kube_ovn_cmd::flags::{with_ignored, FlagKind, KLOG_FLAGS};

use FlagKind::{Bool, Value};

/// Flags of Kube-OVN's `cni-server` (its chart's `kube-ovn-cni` DaemonSet args and
/// `cmd/daemon`'s `pkg/daemon/config.go`) that this daemon accepts and ignores: (name,
/// kind); klog's ([`KLOG_FLAGS`]) are too.
pub const IGNORED_DAEMON_FLAGS: &[(&str, FlagKind)] = &[
    ("mirror-iface", Value),
    ("node-switch", Value),
    ("dpdk-tunnel-iface", Value),
    ("default-interface-name", Value),
    ("default-provider-name", Value),
    ("node-local-dns-ip", Value),
    ("enable-metrics", Bool),
    ("kubelet-dir", Value),
    ("enable-tproxy", Bool),
    ("ovs-vsctl-concurrency", Value),
    ("secure-serving", Bool),
    ("enable-ovn-ipsec", Bool),
    ("set-vxlan-tx-off", Bool),
    ("non-primary-cni-mode", Bool),
    ("pprof-port", Value),
    ("enable-verbose-conn-check", Bool),
    ("tcp-conn-check-port", Value),
    ("udp-conn-check-port", Value),
    ("enable-arp-detect-ip-conflict", Bool),
    ("ovs-vsctl-timeout", Value),
    ("log-perm", Value),
    ("tls-min-version", Value),
    ("tls-max-version", Value),
    ("tls-cipher-suites", Value),
];

/// The daemon's command line.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-ovn-daemon",
    about = "Kube-OVN's node daemon: CNI ADD/DEL for the kube-ovn CNI binary",
    // pflag: a repeated flag's last value wins
    args_override_self = true
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
    /// The tunnel interface: a name, or comma-separated names and regular expressions;
    /// its first address is the tunnel endpoint (default: the interface carrying `POD_IP`).
    #[arg(long)]
    pub iface: Option<String>,
    /// The node's address when `--iface` is not given (Kube-OVN's DaemonSet sets it from
    /// `status.podIP`, the node's address for a host-network pod).
    #[arg(long, env = "POD_IP", hide_env_values = true)]
    pub pod_ip: Option<std::net::IpAddr>,
    /// The pod and `ovn0` MTU (default: the tunnel interface's MTU less the tunnel
    /// header, 100 for GENEVE; 1400 when no tunnel interface is known).
    #[arg(long)]
    pub mtu: Option<u32>,
    /// Not Kube-OVN's: the Southbound remotes for `external_ids:ovn-remote`,
    /// comma-separated (in Kube-OVN the ovs-ovn container's `start-ovs.sh` writes them;
    /// without this flag the value already there is kept).
    #[arg(long)]
    pub ovn_remote: Option<String>,
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

/// A Kube-OVN flag given on the command line that this daemon does not implement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredDaemonFlag {
    /// The flag's name, without dashes.
    pub name: &'static str,
    /// The value given (`true` for a bare boolean).
    pub value: String,
}

impl DaemonFlags {
    /// The command with every flag of [`IGNORED_DAEMON_FLAGS`] and [`KLOG_FLAGS`]
    /// accepted (hidden from `--help`).
    fn command_with_ignored() -> clap::Command {
        with_ignored(
            DaemonFlags::command(),
            IGNORED_DAEMON_FLAGS.iter().chain(KLOG_FLAGS),
        )
    }

    /// Parses `args` (the program name first); Kube-OVN flags this daemon does not
    /// implement are returned apart, to be logged.
    pub fn parse_with_ignored<I, T>(
        args: I,
    ) -> Result<(DaemonFlags, Vec<IgnoredDaemonFlag>), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut matches = Self::command_with_ignored().try_get_matches_from(args)?;
        let mut ignored = Vec::new();
        for (name, kind) in IGNORED_DAEMON_FLAGS.iter().chain(KLOG_FLAGS) {
            let value = match kind {
                Bool => matches.remove_one::<bool>(name).map(|b| b.to_string()),
                Value => matches.remove_one::<String>(name),
            };
            if let Some(value) = value {
                ignored.push(IgnoredDaemonFlag { name, value });
            }
        }
        let flags = DaemonFlags::from_arg_matches_mut(&mut matches)?;
        Ok((flags, ignored))
    }

    /// The `--ovn-remote` remotes (empty: keep what `Open_vSwitch` has).
    pub fn ovn_remotes(&self) -> Vec<String> {
        self.ovn_remote
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string)
            .collect()
    }

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

    /// The args of Kube-OVN's chart (`charts/kube-ovn/templates/ovncni-ds.yaml`,
    /// `cni-server`), with the chart's default values filled in.
    #[test]
    fn kube_ovns_daemonset_args_parse_and_the_unimplemented_are_reported() {
        let args = [
            "kube-ovn-daemon",
            "--enable-mirror=false",
            "--mirror-iface=mirror0",
            "--node-switch=100.64.0.0/16",
            "--encap-checksum=true",
            "--service-cluster-ip-range=10.96.0.0/12",
            "--iface=",
            "--dpdk-tunnel-iface=br-phy",
            "--network-type=geneve",
            "--default-interface-name=",
            "--logtostderr=false",
            "--alsologtostderr=true",
            "--log_file=/var/log/kube-ovn/kube-ovn-cni.log",
            "--log_file_max_size=200",
            "--enable-metrics=true",
            "--kubelet-dir=/var/lib/kubelet",
            "--enable-tproxy=false",
            "--ovs-vsctl-concurrency=100",
            "--secure-serving=false",
            "--enable-ovn-ipsec=false",
            "--set-vxlan-tx-off=false",
            "--non-primary-cni-mode=false",
            "--node-name=n1",
        ];
        let (flags, ignored) = DaemonFlags::parse_with_ignored(args).unwrap();
        assert!(flags.encap_checksum);
        assert_eq!(flags.network_type, "geneve");
        assert_eq!(flags.iface.as_deref(), Some(""));
        assert_eq!(flags.mtu, None);
        let names: Vec<&str> = ignored.iter().map(|f| f.name).collect();
        assert_eq!(names.len(), 16, "{names:?}");
        assert!(names.contains(&"kubelet-dir") && names.contains(&"logtostderr"));
        let log_file = ignored.iter().find(|f| f.name == "log_file").unwrap();
        assert_eq!(log_file.value, "/var/log/kube-ovn/kube-ovn-cni.log");

        let unknown = DaemonFlags::parse_with_ignored([
            "kube-ovn-daemon",
            "--node-name=n1",
            "--no-such-flag=1",
        ]);
        assert!(unknown.unwrap_err().to_string().contains("--no-such-flag"));
        let bad_bool = DaemonFlags::parse_with_ignored([
            "kube-ovn-daemon",
            "--node-name=n1",
            "--enable-tproxy=maybe",
        ]);
        assert!(bad_bool.unwrap_err().to_string().contains("maybe"));
    }

    #[test]
    fn ovn_remotes_split_on_commas() {
        let (flags, _) = DaemonFlags::parse_with_ignored([
            "kube-ovn-daemon",
            "--node-name=n1",
            "--ovn-remote=tcp:10.0.0.1:6642, tcp:10.0.0.2:6642",
        ])
        .unwrap();
        assert_eq!(
            flags.ovn_remotes(),
            ["tcp:10.0.0.1:6642", "tcp:10.0.0.2:6642"]
        );
        let (none, _) =
            DaemonFlags::parse_with_ignored(["kube-ovn-daemon", "--node-name=n1"]).unwrap();
        assert!(none.ovn_remotes().is_empty());
    }
}
