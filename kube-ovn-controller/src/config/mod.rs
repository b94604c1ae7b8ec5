//! The controller's flags, with Kube-OVN's names and defaults, validated into a
//! [`ControllerConfig`].
//!
//! Kube-OVN's own Deployment args parse unchanged: flags this controller does not
//! implement yet are accepted and reported in [`ControllerConfig::ignored`] (the binary
//! logs them), an unknown flag is an error, and every address flag is checked (a typed
//! [`ConfigError`] names the flag and its value).

mod flags;
mod ignored;
mod validate;

#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::parser::ValueSource;
use clap::FromArgMatches;
use ipnet::IpNet;
use ovsdb::client::Remote;

use kube_ovn_api::annotations::{CidrPair, ExcludeIp, IpPair};

pub use flags::ControllerFlags;
pub use ignored::{FlagKind, IGNORED_FLAGS, KLOG_FLAGS};

/// Why the command line does not make a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A flag neither Kube-OVN nor this controller knows.
    #[error("unknown flag {flag}")]
    UnknownFlag {
        /// The flag as given.
        flag: String,
    },
    /// A flag's value is not valid.
    #[error("invalid --{flag}={value:?}: {reason}")]
    InvalidFlag {
        /// The flag's name (without `--`).
        flag: &'static str,
        /// The offending value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A required flag is missing or empty.
    #[error("--{flag} is required")]
    MissingFlag {
        /// The flag's name.
        flag: &'static str,
    },
    /// Two of the system CIDRs overlap (Kube-OVN's `CheckSystemCIDR`).
    #[error("--{flag}={cidr} overlaps --{other_flag}={other_cidr}")]
    OverlappingCidrs {
        /// One flag.
        flag: &'static str,
        /// Its network.
        cidr: IpNet,
        /// The other flag.
        other_flag: &'static str,
        /// Its network.
        other_cidr: IpNet,
    },
    /// Any other command-line error, or `--help` (print it with [`clap::Error::exit`]).
    #[error(transparent)]
    Usage(#[from] clap::Error),
}

/// A Kube-OVN flag given on the command line that this controller does not implement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredFlag {
    /// The flag's name (without `--`).
    pub name: &'static str,
    /// The value given (bare booleans show `true`).
    pub value: String,
}

/// The names of the cluster router's six load balancers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterLoadBalancers {
    /// `--cluster-tcp-loadbalancer`.
    pub tcp: String,
    /// `--cluster-udp-loadbalancer`.
    pub udp: String,
    /// `--cluster-sctp-loadbalancer`.
    pub sctp: String,
    /// `--cluster-tcp-session-loadbalancer`.
    pub tcp_session: String,
    /// `--cluster-udp-session-loadbalancer`.
    pub udp_session: String,
    /// `--cluster-sctp-session-loadbalancer`.
    pub sctp_session: String,
}

/// A subnet the controller creates from its flags (`ovn-default`, `join`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubnetFlags {
    /// The subnet (logical switch) name.
    pub name: String,
    /// Its CIDR block.
    pub cidr: CidrPair,
    /// Its gateway (the first address of each CIDR unless given).
    pub gateway: IpPair,
    /// Addresses never allocated (the gateway unless given).
    pub exclude_ips: Vec<ExcludeIp>,
}

/// The validated configuration of the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// `--kubeconfig` (None: in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// `--ovn-nb-addr`.
    pub ovn_nb_addr: Vec<Remote>,
    /// `--ovn-sb-addr` (may be empty: the controller does not read SB yet).
    pub ovn_sb_addr: Vec<Remote>,
    /// `--default-ls`, `--default-cidr`, `--default-gateway`, `--default-exclude-ips`.
    pub default_subnet: SubnetFlags,
    /// `--cluster-router`.
    pub cluster_router: String,
    /// `--node-switch`, `--node-switch-cidr`, `--node-switch-gateway`.
    pub node_switch: SubnetFlags,
    /// `--service-cluster-ip-range`.
    pub service_cluster_ip_range: CidrPair,
    /// The `--cluster-*-loadbalancer` names.
    pub load_balancers: ClusterLoadBalancers,
    /// `--worker-num`.
    pub worker_num: u32,
    /// `--enable-lb`.
    pub enable_lb: bool,
    /// `--enable-np`.
    pub enable_np: bool,
    /// `--gc-interval` (None: disabled).
    pub gc_interval: Option<Duration>,
    /// `--enable-ovn-lb-prefer-local`.
    pub enable_ovn_lb_prefer_local: bool,
    /// `--ls-dnat-mod-dl-dst`.
    pub ls_dnat_mod_dl_dst: bool,
    /// `--ls-ct-skip-dst-lport-ips`.
    pub ls_ct_skip_dst_lport_ips: bool,
    /// `--node-local-dns-ip`.
    pub node_local_dns_ips: Vec<IpAddr>,
    /// `--skip-conntrack-dst-cidrs`.
    pub skip_conntrack_dst_cidrs: Vec<IpNet>,
    /// `--enable-ovn-ipsec`.
    pub enable_ovn_ipsec: bool,
    /// Kube-OVN flags given but not implemented here.
    pub ignored: Vec<IgnoredFlag>,
}

impl ControllerConfig {
    /// Parses and validates a command line (`args[0]` is the program name).
    pub fn parse_from<I, T>(args: I) -> Result<ControllerConfig, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let matches = flags::command()
            .try_get_matches_from(args)
            .map_err(unknown_flag)?;
        let raw = ControllerFlags::from_arg_matches(&matches)?;
        let ignored = IGNORED_FLAGS
            .iter()
            .chain(KLOG_FLAGS)
            .filter(|(name, _)| matches.value_source(name) == Some(ValueSource::CommandLine))
            .map(|(name, _)| IgnoredFlag {
                name,
                value: matches
                    .get_raw(name)
                    .into_iter()
                    .flatten()
                    .last()
                    .map(|v| v.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            })
            .collect();
        let mut config = ControllerConfig::from_flags(&raw)?;
        config.ignored = ignored;
        Ok(config)
    }

    /// Validates raw flags (Kube-OVN's defaulting included).
    pub fn from_flags(raw: &ControllerFlags) -> Result<ControllerConfig, ConfigError> {
        validate::config(raw)
    }

    /// Logs the ignored flags, once, in one line (`name=value` each).
    pub fn log_ignored(&self) {
        if self.ignored.is_empty() {
            return;
        }
        let flags: Vec<String> = self
            .ignored
            .iter()
            .map(|f| format!("{}={}", f.name, f.value))
            .collect();
        tracing::info!(
            flags = %flags.join(" "),
            "Kube-OVN flags accepted but ignored: this controller does not implement them yet"
        );
    }
}

/// Turns clap's "unexpected argument" into [`ConfigError::UnknownFlag`].
fn unknown_flag(err: clap::Error) -> ConfigError {
    if err.kind() == ErrorKind::UnknownArgument {
        // a stray positional word is reported the same way; only `-...` is a flag
        if let Some(ContextValue::String(flag)) = err.get(ContextKind::InvalidArg) {
            if flag.starts_with('-') {
                return ConfigError::UnknownFlag { flag: flag.clone() };
            }
        }
    }
    ConfigError::Usage(err)
}
