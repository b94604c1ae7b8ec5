//! ClusterIP allocation, as kube-apiserver's Service storage does it on create: a
//! Service without `spec.clusterIP` (and not `ExternalName`) gets a free address of
//! the service range in the create response itself, so `kubectl apply` followed by
//! `kubectl get svc` shows it at once; an address asked for must be in the range and
//! free. The lowest free address from the range's tenth is taken (kube-apiserver picks
//! at random; the first ones are by custom `kubernetes` and DNS).

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{json, Value};

use super::{ObjectKey, State};
use crate::error::ApiError;

/// The service range: base address and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceRange {
    base: u32,
    prefix: u8,
}

impl ServiceRange {
    /// `10.96.0.0/12`, Kube-OVN's `--service-cluster-ip-range` default.
    pub const DEFAULT: ServiceRange = ServiceRange {
        base: u32::from_be_bytes([10, 96, 0, 0]),
        prefix: 12,
    };

    /// The range `addr/prefix` (host bits cleared); None for a prefix over 30.
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Option<ServiceRange> {
        (prefix <= 30).then(|| ServiceRange {
            base: u32::from(addr) & (u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)),
            prefix,
        })
    }

    fn size(self) -> u32 {
        1u32 << (32 - u32::from(self.prefix))
    }

    fn contains(self, ip: Ipv4Addr) -> bool {
        let ip = u32::from(ip);
        ip > self.base && ip < self.base + self.size() - 1
    }
}

impl std::fmt::Display for ServiceRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }
}

fn is_service(key: &ObjectKey) -> bool {
    key.group.is_empty() && key.resource == "services"
}

impl State {
    /// The ClusterIPs the stored Services hold.
    fn cluster_ips_in_use(&self) -> BTreeSet<Ipv4Addr> {
        self.objects
            .iter()
            .filter(|(key, _)| is_service(key))
            .filter_map(|(_, svc)| svc["spec"]["clusterIP"].as_str()?.parse().ok())
            .collect()
    }

    /// Gives a new Service its ClusterIP (see the module docs).
    pub(super) fn allocate_cluster_ip(&self, name: &str, body: &mut Value) -> Result<(), ApiError> {
        let spec = &mut body["spec"];
        if spec["type"].as_str() == Some("ExternalName") {
            return Ok(());
        }
        let asked = spec["clusterIP"]
            .as_str()
            .or_else(|| spec["clusterIPs"][0].as_str())
            .unwrap_or_default()
            .to_string();
        if asked == "None" {
            spec["clusterIP"] = json!("None");
            spec["clusterIPs"] = json!(["None"]);
            return Ok(());
        }
        let range = self.service_range;
        let used = self.cluster_ips_in_use();
        if !asked.is_empty() {
            // what was asked is kept (a dual-stack Service's `clusterIPs` too); IPv4
            // addresses are checked against the (IPv4) service range, others kept
            let invalid = |why: String| {
                ApiError::invalid(
                    "Service",
                    name,
                    "spec.clusterIPs",
                    format!("Invalid value: [\"{asked}\"]: {why}"),
                )
            };
            match asked.parse::<std::net::IpAddr>() {
                Err(_) => return Err(invalid("must be a valid IP address".into())),
                Ok(std::net::IpAddr::V4(ip)) if !range.contains(ip) => {
                    return Err(invalid(format!(
                        "failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}"
                    )))
                }
                Ok(std::net::IpAddr::V4(ip)) if used.contains(&ip) => {
                    return Err(invalid(format!(
                        "failed to allocate IP {ip}: provided IP is already allocated"
                    )))
                }
                Ok(_) => {}
            }
            spec["clusterIP"] = json!(asked);
            if spec["clusterIPs"].as_array().is_none_or(Vec::is_empty) {
                spec["clusterIPs"] = json!([asked]);
            }
            if spec["type"].is_null() {
                spec["type"] = json!("ClusterIP");
            }
            return Ok(());
        }
        let first = range.base + 10;
        let last = range.base + range.size() - 2;
        let ip = (first..=last)
            .map(Ipv4Addr::from)
            .find(|ip| !used.contains(ip))
            .ok_or_else(|| {
                ApiError::invalid(
                    "Service",
                    name,
                    "spec.clusterIPs",
                    format!("failed to allocate a serviceIP: range is full ({range})"),
                )
            })?;
        spec["clusterIP"] = json!(ip.to_string());
        spec["clusterIPs"] = json!([ip.to_string()]);
        if spec["ipFamilies"].is_null() {
            spec["ipFamilies"] = json!(["IPv4"]);
        }
        if spec["ipFamilyPolicy"].is_null() {
            spec["ipFamilyPolicy"] = json!("SingleStack");
        }
        if spec["type"].is_null() {
            spec["type"] = json!("ClusterIP");
        }
        Ok(())
    }

    /// The range new Services' ClusterIPs come from ([`ServiceRange::DEFAULT`] unless set).
    pub fn set_service_range(&mut self, range: ServiceRange) {
        self.service_range = range;
    }
}
