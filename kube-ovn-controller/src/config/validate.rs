//! From raw flags to a [`ControllerConfig`]: Kube-OVN's defaulting (gateway = first
//! address of each CIDR, excluded = gateway) and checks that name the offending flag.

use std::time::Duration;

use ipnet::IpNet;
use ovsdb::client::Remote;

use super::{ClusterLoadBalancers, ConfigError, ControllerConfig, ControllerFlags, SubnetFlags};
use kube_ovn_api::annotations::{CidrPair, ExcludeIp, IpPair};

pub(super) fn config(raw: &ControllerFlags) -> Result<ControllerConfig, ConfigError> {
    let ovn_nb_addr = remotes("ovn-nb-addr", &raw.ovn_nb_addr)?;
    if ovn_nb_addr.is_empty() {
        return Err(ConfigError::MissingFlag {
            flag: "ovn-nb-addr",
        });
    }
    let default_subnet = subnet(
        ("default-ls", &raw.default_ls),
        ("default-cidr", &raw.default_cidr),
        ("default-gateway", &raw.default_gateway),
        Some(("default-exclude-ips", &raw.default_exclude_ips)),
    )?;
    let node_switch = subnet(
        ("node-switch", &raw.node_switch),
        ("node-switch-cidr", &raw.node_switch_cidr),
        ("node-switch-gateway", &raw.node_switch_gateway),
        None,
    )?;
    let service = cidr_pair("service-cluster-ip-range", &raw.service_cluster_ip_range)?;
    check_system_cidrs(&[
        ("node-switch-cidr", &node_switch.cidr),
        ("default-cidr", &default_subnet.cidr),
        ("service-cluster-ip-range", &service),
    ])?;
    if raw.worker_num == 0 {
        return Err(invalid("worker-num", "0", "at least one worker is needed"));
    }
    Ok(ControllerConfig {
        kubeconfig: (!raw.kubeconfig.is_empty()).then(|| raw.kubeconfig.clone().into()),
        ovn_nb_addr,
        ovn_sb_addr: remotes("ovn-sb-addr", &raw.ovn_sb_addr)?,
        default_subnet,
        cluster_router: name("cluster-router", &raw.cluster_router)?,
        node_switch,
        service_cluster_ip_range: service,
        load_balancers: load_balancers(raw)?,
        worker_num: raw.worker_num,
        enable_lb: raw.enable_lb,
        enable_np: raw.enable_np,
        gc_interval: (raw.gc_interval > 0).then(|| Duration::from_secs(raw.gc_interval)),
        enable_ovn_lb_prefer_local: raw.enable_ovn_lb_prefer_local,
        ls_dnat_mod_dl_dst: raw.ls_dnat_mod_dl_dst,
        ls_ct_skip_dst_lport_ips: raw.ls_ct_skip_dst_lport_ips,
        node_local_dns_ips: list("node-local-dns-ip", &raw.node_local_dns_ip, "an IP address")?,
        skip_conntrack_dst_cidrs: list(
            "skip-conntrack-dst-cidrs",
            &raw.skip_conntrack_dst_cidrs,
            "a CIDR",
        )?,
        enable_ovn_ipsec: raw.enable_ovn_ipsec,
        ignored: Vec::new(),
    })
}

fn invalid(flag: &'static str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidFlag {
        flag,
        value: value.to_string(),
        reason: reason.into(),
    }
}

fn name(flag: &'static str, value: &str) -> Result<String, ConfigError> {
    if value.is_empty() {
        return Err(ConfigError::MissingFlag { flag });
    }
    Ok(value.to_string())
}

fn remotes(flag: &'static str, value: &str) -> Result<Vec<Remote>, ConfigError> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    value
        .split(',')
        .map(|r| {
            if r.starts_with("ssl:") {
                return Err(invalid(
                    flag,
                    value,
                    format!("{r:?}: ssl remotes are not supported yet"),
                ));
            }
            r.parse::<Remote>()
                .map_err(|e| invalid(flag, value, e.to_string()))
        })
        .collect()
}

/// A comma-separated list of `T` (empty allowed).
fn list<T: std::str::FromStr>(
    flag: &'static str,
    value: &str,
    what: &str,
) -> Result<Vec<T>, ConfigError> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    value
        .split(',')
        .map(|s| {
            s.parse()
                .map_err(|_| invalid(flag, value, format!("{s:?} is not {what}")))
        })
        .collect()
}

fn cidr_pair(flag: &'static str, value: &str) -> Result<CidrPair, ConfigError> {
    let pair = kube_ovn_api::annotations::parse_value::<CidrPair>(value)
        .map_err(|r| invalid(flag, value, r))?;
    if pair.v4.is_none() && pair.v6.is_none() {
        return Err(ConfigError::MissingFlag { flag });
    }
    // Kube-OVN normalizes a subnet's CIDR to its network address.
    Ok(CidrPair {
        v4: pair.v4.map(|n| n.trunc()),
        v6: pair.v6.map(|n| n.trunc()),
    })
}

/// Kube-OVN's `GetGwByCidr`: the first address after each network address.
fn first_addresses(cidr: &CidrPair) -> IpPair {
    IpPair {
        v4: cidr
            .v4
            .map(|n| u32::from(n.network()).saturating_add(1).into()),
        v6: cidr
            .v6
            .map(|n| u128::from(n.network()).saturating_add(1).into()),
    }
}

fn gateway(flag: &'static str, value: &str, cidr: &CidrPair) -> Result<IpPair, ConfigError> {
    if value.is_empty() {
        return Ok(first_addresses(cidr));
    }
    let gw = kube_ovn_api::annotations::parse_value::<IpPair>(value)
        .map_err(|r| invalid(flag, value, r))?;
    let fits_v4 = match (gw.v4, cidr.v4) {
        (None, None) => true,
        (Some(ip), Some(net)) => net.contains(&ip),
        _ => false,
    };
    let fits_v6 = match (gw.v6, cidr.v6) {
        (None, None) => true,
        (Some(ip), Some(net)) => net.contains(&ip),
        _ => false,
    };
    if !(fits_v4 && fits_v6) {
        return Err(invalid(
            flag,
            value,
            "needs one address inside each family of the CIDR",
        ));
    }
    Ok(gw)
}

fn subnet(
    (name_flag, name_value): (&'static str, &str),
    (cidr_flag, cidr_value): (&'static str, &str),
    (gw_flag, gw_value): (&'static str, &str),
    exclude: Option<(&'static str, &str)>,
) -> Result<SubnetFlags, ConfigError> {
    let cidr = cidr_pair(cidr_flag, cidr_value)?;
    let gateway = gateway(gw_flag, gw_value, &cidr)?;
    let exclude_ips = match exclude {
        Some((flag, value)) if !value.is_empty() => value
            .split(',')
            .map(|e| ExcludeIp::parse(e).map_err(|r| invalid(flag, value, r)))
            .collect::<Result<_, _>>()?,
        _ => gateway.addrs().into_iter().map(ExcludeIp::Addr).collect(),
    };
    Ok(SubnetFlags {
        name: name(name_flag, name_value)?,
        cidr,
        gateway,
        exclude_ips,
    })
}

/// Kube-OVN's `CheckSystemCIDR`: join, default and Service CIDRs must not overlap.
fn check_system_cidrs(cidrs: &[(&'static str, &CidrPair)]) -> Result<(), ConfigError> {
    let nets: Vec<(&'static str, IpNet)> = cidrs
        .iter()
        .flat_map(|(flag, pair)| pair.nets().into_iter().map(move |n| (*flag, n)))
        .collect();
    for (i, (flag, a)) in nets.iter().enumerate() {
        for (other_flag, b) in &nets[i + 1..] {
            if flag != other_flag && (a.contains(&b.network()) || b.contains(&a.network())) {
                return Err(ConfigError::OverlappingCidrs {
                    flag,
                    cidr: *a,
                    other_flag,
                    other_cidr: *b,
                });
            }
        }
    }
    Ok(())
}

fn load_balancers(raw: &ControllerFlags) -> Result<ClusterLoadBalancers, ConfigError> {
    Ok(ClusterLoadBalancers {
        tcp: name("cluster-tcp-loadbalancer", &raw.cluster_tcp_loadbalancer)?,
        udp: name("cluster-udp-loadbalancer", &raw.cluster_udp_loadbalancer)?,
        sctp: name("cluster-sctp-loadbalancer", &raw.cluster_sctp_loadbalancer)?,
        tcp_session: name(
            "cluster-tcp-session-loadbalancer",
            &raw.cluster_tcp_session_loadbalancer,
        )?,
        udp_session: name(
            "cluster-udp-session-loadbalancer",
            &raw.cluster_udp_session_loadbalancer,
        )?,
        sctp_session: name(
            "cluster-sctp-session-loadbalancer",
            &raw.cluster_sctp_session_loadbalancer,
        )?,
    })
}
