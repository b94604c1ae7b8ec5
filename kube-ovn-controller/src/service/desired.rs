//! What one Service asks of the cluster load balancers, computed from the Service and
//! its EndpointSlices alone (Kube-OVN's `handleUpdateEndpointSlice`,
//! `pkg/controller/endpoint_slice.go`):
//!
//! * one VIP `<clusterIP>:<port>` (`[<ip>]:<port>` for IPv6) per cluster IP and
//!   Service port, in the TCP, UDP or SCTP balancer of the port's protocol, or in its
//!   session twin when `sessionAffinity: ClientIP`;
//! * its backends `<ip>:<targetPort>` from the ready endpoints of the VIP's family,
//!   the target port resolved per EndpointSlice by the Service port's name (a named
//!   `targetPort` may differ from pod to pod, and the slices group endpoints by it);
//! * no VIP at all for a port without a ready backend; nothing for headless and
//!   ExternalName Services.
//!
//! Bad input (an address that is not an IP, a port no slice resolves) is skipped and
//! reported as a [`ServiceInputError`] naming the offender; the rest of the Service
//! still counts.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};

use k8s_openapi::api::core::v1::{Service, ServicePort};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::reflector::ObjectRef;

use crate::config::ClusterLoadBalancers;

/// Kubernetes' default ClientIP affinity timeout, seconds.
pub const DEFAULT_AFFINITY_TIMEOUT: i32 = 10800;

/// The label naming an EndpointSlice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Input that cannot be realized; skipped, logged, and nothing else is changed for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceInputError {
    /// A cluster IP of the Service is not an IP address.
    #[error("service {service}: cluster IP {value:?} is not an IP address")]
    BadClusterIp {
        /// `<namespace>/<name>`.
        service: String,
        /// The offending value.
        value: String,
    },
    /// An endpoint address of an EndpointSlice is not an IP address.
    #[error("endpointslice {slice} (service {service}): address {value:?} is not an IP address")]
    BadEndpointAddress {
        /// `<namespace>/<name>` of the Service.
        service: String,
        /// `<namespace>/<name>` of the slice.
        slice: String,
        /// The offending value.
        value: String,
    },
    /// No EndpointSlice with ready endpoints has a port of this Service port's name.
    #[error("service {service}: port {port:?} ({number}) has no target port in any EndpointSlice")]
    UnresolvedPort {
        /// `<namespace>/<name>`.
        service: String,
        /// The Service port's name (`""` when unnamed).
        port: String,
        /// The Service port's number.
        number: i32,
    },
}

/// The VIPs one Service wants: balancer name -> VIP -> backends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceVips {
    /// Per balancer, the VIPs and their comma-separated, sorted backends.
    pub by_lb: BTreeMap<String, BTreeMap<String, String>>,
    /// The Service's cluster IPs (the keys its VIPs start with).
    pub cluster_ips: Vec<IpAddr>,
    /// `sessionAffinityConfig.clientIP.timeoutSeconds` of a ClientIP Service.
    pub affinity_timeout: Option<i32>,
    /// What was skipped.
    pub problems: Vec<ServiceInputError>,
}

impl ServiceVips {
    /// Number of VIPs over all balancers.
    pub fn vip_count(&self) -> usize {
        self.by_lb.values().map(BTreeMap::len).sum()
    }
}

/// `<namespace>/<name>` of an object.
pub fn object_key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

/// The Service an EndpointSlice belongs to: its `kubernetes.io/service-name` label, in
/// the slice's namespace.
pub fn slice_service(slice: &EndpointSlice) -> Option<ObjectRef<Service>> {
    let name = slice.metadata.labels.as_ref()?.get(SERVICE_NAME_LABEL)?;
    let service = ObjectRef::new(name);
    Some(match slice.metadata.namespace.as_deref() {
        Some(ns) => service.within(ns),
        None => service,
    })
}

/// A VIP or backend key: `ip:port`, `[ip]:port` for IPv6.
pub fn host_port(ip: IpAddr, port: i32) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

/// What every VIP key of cluster IP `ip` starts with.
pub fn vip_prefix(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:"),
        IpAddr::V6(v6) => format!("[{v6}]:"),
    }
}

/// The IP of a VIP key (`ip:port` or `[ip]:port`), if it is one.
pub fn vip_ip(key: &str) -> Option<IpAddr> {
    key.parse::<SocketAddr>().ok().map(|s| s.ip())
}

/// Whether Kube-OVN gives the Service VIPs: not ExternalName, not headless.
pub fn has_cluster_ips(service: &Service) -> bool {
    let Some(spec) = &service.spec else {
        return false;
    };
    if spec.type_.as_deref() == Some("ExternalName") {
        return false;
    }
    raw_cluster_ips(service)
        .iter()
        .any(|ip| !ip.is_empty() && ip != "None")
}

fn raw_cluster_ips(service: &Service) -> Vec<String> {
    let Some(spec) = &service.spec else {
        return Vec::new();
    };
    match (&spec.cluster_ips, &spec.cluster_ip) {
        (Some(ips), _) if !ips.is_empty() => ips.clone(),
        (_, Some(ip)) => vec![ip.clone()],
        _ => Vec::new(),
    }
}

/// The parsed cluster IPs of an eligible Service, and the values that do not parse.
pub fn cluster_ips(service: &Service) -> (Vec<IpAddr>, Vec<ServiceInputError>) {
    let key = object_key(&service.metadata);
    let (mut ips, mut bad) = (Vec::new(), Vec::new());
    if !has_cluster_ips(service) {
        return (ips, bad);
    }
    for raw in raw_cluster_ips(service) {
        match raw.parse::<IpAddr>() {
            Ok(ip) => ips.push(ip),
            Err(_) => bad.push(ServiceInputError::BadClusterIp {
                service: key.clone(),
                value: raw,
            }),
        }
    }
    (ips, bad)
}

fn client_ip_affinity(service: &Service) -> Option<i32> {
    let spec = service.spec.as_ref()?;
    if spec.session_affinity.as_deref() != Some("ClientIP") {
        return None;
    }
    let timeout = spec
        .session_affinity_config
        .as_ref()
        .and_then(|c| c.client_ip.as_ref())
        .and_then(|c| c.timeout_seconds);
    Some(timeout.unwrap_or(DEFAULT_AFFINITY_TIMEOUT))
}

/// The cluster balancer of a port protocol (`TCP` when unset), or its session twin.
pub fn balancer_for<'a>(lbs: &'a ClusterLoadBalancers, protocol: &str, session: bool) -> &'a str {
    match (protocol, session) {
        ("UDP", false) => &lbs.udp,
        ("UDP", true) => &lbs.udp_session,
        ("SCTP", false) => &lbs.sctp,
        ("SCTP", true) => &lbs.sctp_session,
        (_, false) => &lbs.tcp,
        (_, true) => &lbs.tcp_session,
    }
}

/// The six cluster balancers.
pub fn all_balancers(lbs: &ClusterLoadBalancers) -> [&str; 6] {
    [
        &lbs.tcp,
        &lbs.udp,
        &lbs.sctp,
        &lbs.tcp_session,
        &lbs.udp_session,
        &lbs.sctp_session,
    ]
}

fn ready(endpoint: &k8s_openapi::api::discovery::v1::Endpoint) -> bool {
    endpoint
        .conditions
        .as_ref()
        .and_then(|c| c.ready)
        .unwrap_or(true)
}

/// The target port of Service port `port` in `slice` (matched by name, as the
/// EndpointSlice controller names slice ports after Service ports).
fn slice_target_port(slice: &EndpointSlice, port: &ServicePort) -> Option<i32> {
    let wanted = port.name.as_deref().unwrap_or_default();
    slice
        .ports
        .as_ref()?
        .iter()
        .find(|p| p.name.as_deref().unwrap_or_default() == wanted)
        .and_then(|p| p.port)
}

/// The ready endpoint addresses of `slice` (IP address slices only), and the
/// addresses that do not parse.
fn ready_addresses(
    slice: &EndpointSlice,
    service: &str,
    problems: &mut Vec<ServiceInputError>,
) -> Vec<IpAddr> {
    if slice.address_type == "FQDN" {
        return Vec::new();
    }
    let mut out = Vec::new();
    for endpoint in slice.endpoints.iter().flatten().filter(|e| ready(e)) {
        for raw in &endpoint.addresses {
            match raw.parse::<IpAddr>() {
                Ok(ip) => out.push(ip),
                Err(_) => problems.push(ServiceInputError::BadEndpointAddress {
                    service: service.to_string(),
                    slice: object_key(&slice.metadata),
                    value: raw.clone(),
                }),
            }
        }
    }
    out
}

/// The VIPs `service` wants given its EndpointSlices.
pub fn service_vips(
    service: &Service,
    slices: &[&EndpointSlice],
    lbs: &ClusterLoadBalancers,
) -> ServiceVips {
    let key = object_key(&service.metadata);
    let (ips, mut problems) = cluster_ips(service);
    let affinity_timeout = client_ip_affinity(service);
    let mut out = ServiceVips {
        cluster_ips: ips.clone(),
        affinity_timeout,
        ..Default::default()
    };
    let ports = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    if ips.is_empty() {
        out.problems = problems;
        return out;
    }
    // per slice once: its ready addresses (bad ones reported once)
    let addresses: Vec<Vec<IpAddr>> = slices
        .iter()
        .map(|s| ready_addresses(s, &key, &mut problems))
        .collect();
    for port in &ports {
        let protocol = port.protocol.as_deref().unwrap_or("TCP");
        let lb = balancer_for(lbs, protocol, affinity_timeout.is_some());
        let mut resolved = false;
        let mut backends: BTreeMap<bool, BTreeSet<String>> = BTreeMap::new();
        for (slice, addrs) in slices.iter().zip(&addresses) {
            if addrs.is_empty() {
                continue;
            }
            let Some(target) = slice_target_port(slice, port) else {
                continue;
            };
            resolved = true;
            for ip in addrs {
                backends
                    .entry(ip.is_ipv4())
                    .or_default()
                    .insert(host_port(*ip, target));
            }
        }
        if !resolved && addresses.iter().any(|a| !a.is_empty()) {
            problems.push(ServiceInputError::UnresolvedPort {
                service: key.clone(),
                port: port.name.clone().unwrap_or_default(),
                number: port.port,
            });
        }
        for ip in &ips {
            let Some(family) = backends.get(&ip.is_ipv4()) else {
                continue;
            };
            let joined = family.iter().cloned().collect::<Vec<_>>().join(",");
            out.by_lb
                .entry(lb.to_string())
                .or_default()
                .insert(host_port(*ip, port.port), joined);
        }
    }
    out.problems = problems;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lbs() -> ClusterLoadBalancers {
        let flags = ["kube-ovn-controller", "--ovn-nb-addr=tcp:127.0.0.1:6641"];
        crate::config::ControllerConfig::parse_from(flags)
            .expect("flags")
            .load_balancers
    }

    #[test]
    fn vip_keys_follow_ovn_for_both_families() {
        let v6: IpAddr = "fd00::a".parse().unwrap();
        assert_eq!(host_port(v6, 80), "[fd00::a]:80");
        assert_eq!(vip_prefix(v6), "[fd00::a]:");
        assert_eq!(vip_ip("[fd00::a]:80"), Some(v6));
        assert_eq!(vip_ip("10.96.0.1:443"), "10.96.0.1".parse().ok());
        assert_eq!(vip_ip("10.96.0.1"), None);
        // a prefix never matches a longer address
        assert!(!"10.96.0.10:80".starts_with(&vip_prefix("10.96.0.1".parse().unwrap())));
    }

    #[test]
    fn protocol_and_affinity_pick_the_balancer() {
        let lbs = lbs();
        assert_eq!(balancer_for(&lbs, "TCP", false), lbs.tcp);
        assert_eq!(balancer_for(&lbs, "UDP", true), lbs.udp_session);
        assert_eq!(balancer_for(&lbs, "SCTP", false), lbs.sctp);
        assert_eq!(all_balancers(&lbs).len(), 6);
    }

    #[test]
    fn an_fqdn_slice_and_a_headless_service_give_nothing() {
        let headless: Service = serde_json::from_value(json!({
            "metadata": {"name": "h", "namespace": "d"},
            "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}))
        .unwrap();
        assert!(!has_cluster_ips(&headless));
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "d"},
            "spec": {"clusterIP": "10.96.0.5", "ports": [{"port": 80}]}}))
        .unwrap();
        let fqdn: EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "s-a", "namespace": "d"}, "addressType": "FQDN",
            "ports": [{"port": 80}], "endpoints": [{"addresses": ["example.com"]}]}))
        .unwrap();
        let wanted = service_vips(&svc, &[&fqdn], &lbs());
        assert_eq!(wanted.vip_count(), 0);
        assert!(wanted.problems.is_empty(), "{:?}", wanted.problems);
    }
}
