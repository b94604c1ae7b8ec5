//! The flags this controller implements, with Kube-OVN's names and defaults, parsed the
//! way Go's pflag does: `--flag=value` and `--flag value`; booleans bare (`--enable-lb`)
//! or with `=` (`--enable-lb=false`), values as `strconv.ParseBool` reads them.

use clap::builder::ValueParser;
use clap::{Command, Parser};

use kube_ovn_cmd::flags::{parse_go_bool, with_ignored};

use super::ignored::{IGNORED_FLAGS, KLOG_FLAGS};

/// The raw flags, before validation ([`super::ControllerConfig::from_flags`]).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "kube-ovn-controller",
    about = "Kube-OVN's controller: writes the OVN northbound database from Kubernetes",
    args_override_self = true,
    disable_version_flag = true
)]
pub struct ControllerFlags {
    /// Path to a kubeconfig; empty uses the in-cluster config.
    #[arg(long, default_value = "")]
    pub kubeconfig: String,
    /// OVN northbound remotes, comma-separated (`tcp:[IP]:6641,...`); the leader is used.
    #[arg(long = "ovn-nb-addr", default_value = "")]
    pub ovn_nb_addr: String,
    /// OVN southbound remotes, comma-separated.
    #[arg(long = "ovn-sb-addr", default_value = "")]
    pub ovn_sb_addr: String,
    /// The default subnet (logical switch).
    #[arg(long = "default-ls", default_value = "ovn-default")]
    pub default_ls: String,
    /// The default subnet's CIDR (`v4`, `v6` or `v4,v6`).
    #[arg(long = "default-cidr", default_value = "10.16.0.0/16")]
    pub default_cidr: String,
    /// The default subnet's gateway (default: the first address of each CIDR).
    #[arg(long = "default-gateway", default_value = "")]
    pub default_gateway: String,
    /// Addresses or `a..b` ranges the default subnet never allocates (default: the gateway).
    #[arg(long = "default-exclude-ips", default_value = "")]
    pub default_exclude_ips: String,
    /// The cluster router (the default VPC).
    #[arg(long = "cluster-router", default_value = "ovn-cluster")]
    pub cluster_router: String,
    /// The join switch between nodes and pods.
    #[arg(long = "node-switch", default_value = "join")]
    pub node_switch: String,
    /// The join switch's CIDR.
    #[arg(long = "node-switch-cidr", default_value = "100.64.0.0/16")]
    pub node_switch_cidr: String,
    /// The join switch's gateway (default: the first address of each CIDR).
    #[arg(long = "node-switch-gateway", default_value = "")]
    pub node_switch_gateway: String,
    /// The Kubernetes Service CIDR.
    #[arg(long = "service-cluster-ip-range", default_value = "10.96.0.0/12")]
    pub service_cluster_ip_range: String,
    /// The cluster's TCP load balancer.
    #[arg(
        long = "cluster-tcp-loadbalancer",
        default_value = "cluster-tcp-loadbalancer"
    )]
    pub cluster_tcp_loadbalancer: String,
    /// The cluster's UDP load balancer.
    #[arg(
        long = "cluster-udp-loadbalancer",
        default_value = "cluster-udp-loadbalancer"
    )]
    pub cluster_udp_loadbalancer: String,
    /// The cluster's SCTP load balancer.
    #[arg(
        long = "cluster-sctp-loadbalancer",
        default_value = "cluster-sctp-loadbalancer"
    )]
    pub cluster_sctp_loadbalancer: String,
    /// The cluster's TCP load balancer for ClientIP session affinity.
    #[arg(
        long = "cluster-tcp-session-loadbalancer",
        default_value = "cluster-tcp-session-loadbalancer"
    )]
    pub cluster_tcp_session_loadbalancer: String,
    /// The cluster's UDP load balancer for ClientIP session affinity.
    #[arg(
        long = "cluster-udp-session-loadbalancer",
        default_value = "cluster-udp-session-loadbalancer"
    )]
    pub cluster_udp_session_loadbalancer: String,
    /// The cluster's SCTP load balancer for ClientIP session affinity.
    #[arg(
        long = "cluster-sctp-session-loadbalancer",
        default_value = "cluster-sctp-session-loadbalancer"
    )]
    pub cluster_sctp_session_loadbalancer: String,
    /// Workers per reconciler.
    #[arg(long = "worker-num", default_value_t = 3)]
    pub worker_num: u32,
    /// Implement Services with OVN load balancers.
    #[arg(long = "enable-lb", default_value = "true", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = ValueParser::new(parse_go_bool))]
    pub enable_lb: bool,
    /// Implement NetworkPolicies with OVN ACLs.
    #[arg(long = "enable-np", default_value = "true", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = ValueParser::new(parse_go_bool))]
    pub enable_np: bool,
    /// Seconds between garbage collections; 0 disables them.
    #[arg(long = "gc-interval", default_value_t = 360)]
    pub gc_interval: u64,
    /// Set `prefer_local_backend` on the cluster load balancers.
    #[arg(long = "enable-ovn-lb-prefer-local", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = ValueParser::new(parse_go_bool))]
    pub enable_ovn_lb_prefer_local: bool,
    /// NB_Global `ls_dnat_mod_dl_dst`.
    #[arg(long = "ls-dnat-mod-dl-dst", default_value = "true", num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = ValueParser::new(parse_go_bool))]
    pub ls_dnat_mod_dl_dst: bool,
    /// NB_Global `ls_ct_skip_dst_lport_ips`.
    #[arg(long = "ls-ct-skip-dst-lport-ips", default_value = "true", num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = ValueParser::new(parse_go_bool))]
    pub ls_ct_skip_dst_lport_ips: bool,
    /// NodeLocal DNSCache addresses, comma-separated (NB_Global `node_local_dns_ip`).
    #[arg(long = "node-local-dns-ip", default_value = "")]
    pub node_local_dns_ip: String,
    /// Destination CIDRs that skip conntrack, comma-separated (NB_Global `skip_conntrack_dst_cidrs`).
    #[arg(long = "skip-conntrack-dst-cidrs", default_value = "")]
    pub skip_conntrack_dst_cidrs: String,
    /// NB_Global `ipsec`.
    #[arg(long = "enable-ovn-ipsec", default_value = "false", num_args = 0..=1,
          require_equals = true, default_missing_value = "true",
          value_parser = ValueParser::new(parse_go_bool))]
    pub enable_ovn_ipsec: bool,
}

/// The implemented flags plus every flag of [`IGNORED_FLAGS`] and [`KLOG_FLAGS`],
/// hidden from `--help`.
pub(crate) fn command() -> Command {
    use clap::CommandFactory;
    with_ignored(
        ControllerFlags::command(),
        IGNORED_FLAGS.iter().chain(KLOG_FLAGS),
    )
}
