//! Conversion between result versions, as the reference's converter registry does it:
//!
//! - within a layout only the version string changes (1.1 attributes survive 1.1 -> 1.0);
//! - 0.1/0.2 -> 0.3/0.4: `ip4` and `ip6` become `ips` entries tagged `"4"`/`"6"`, their
//!   routes are concatenated (only `dst`/`gw`), there are no interfaces;
//! - 0.3/0.4 -> 0.1/0.2: the first address of each family becomes `ip4`/`ip6`, a route goes
//!   to the family of its `dst` if that family has an address, interfaces are dropped;
//!   fails with "no valid IP addresses" when there is no address at all;
//! - 0.3/0.4 -> 1.x drops `ips[].version`; 1.x -> 0.3/0.4 recomputes it from the address and
//!   drops interface `mtu`/`socketPath`/`pciID` (route attributes are kept);
//! - 0.1/0.2 <-> 1.x goes through 0.4.0.

use super::{
    CniResult, Interface, IpConfig, IpFamily, LegacyIpConfig, LegacyResult, RichInterface,
    RichIpConfig, RichResult, V1Result,
};
use crate::version::{CniVersion, ResultLayout};

/// A result that cannot be expressed in the requested version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// A 0.1.0/0.2.0 result needs at least one address.
    #[error("cannot convert CNI result from {from} to {to}: no valid IP addresses")]
    NoValidIpAddresses {
        /// The version converted from.
        from: CniVersion,
        /// The version converted to.
        to: CniVersion,
    },
}

impl CniResult {
    /// Converts this result to `to`.
    pub fn convert_to(&self, to: CniVersion) -> Result<CniResult, ConversionError> {
        let from = self.version();
        Ok(match (self, to.result_layout()) {
            (CniResult::Legacy(r), ResultLayout::Legacy) => CniResult::Legacy(LegacyResult {
                cni_version: to,
                ..r.clone()
            }),
            (CniResult::Rich(r), ResultLayout::Rich) => CniResult::Rich(RichResult {
                cni_version: to,
                ..r.clone()
            }),
            (CniResult::V1(r), ResultLayout::V1) => CniResult::V1(V1Result {
                cni_version: to,
                ..r.clone()
            }),
            (CniResult::Legacy(r), ResultLayout::Rich) => CniResult::Rich(legacy_to_rich(r, to)),
            (CniResult::Legacy(r), ResultLayout::V1) => {
                CniResult::V1(rich_to_v1(&legacy_to_rich(r, CniVersion::V0_4_0), to))
            }
            (CniResult::Rich(r), ResultLayout::Legacy) => {
                CniResult::Legacy(rich_to_legacy(r, from, to)?)
            }
            (CniResult::Rich(r), ResultLayout::V1) => CniResult::V1(rich_to_v1(r, to)),
            (CniResult::V1(r), ResultLayout::Rich) => CniResult::Rich(v1_to_rich(r, to)),
            (CniResult::V1(r), ResultLayout::Legacy) => {
                let rich = v1_to_rich(r, CniVersion::V0_4_0);
                CniResult::Legacy(rich_to_legacy(&rich, from, to)?)
            }
        })
    }
}

fn legacy_to_rich(r: &LegacyResult, to: CniVersion) -> RichResult {
    let mut ips = Vec::new();
    let mut routes = Vec::new();
    for (family, cfg) in [(IpFamily::V4, &r.ip4), (IpFamily::V6, &r.ip6)] {
        if let Some(cfg) = cfg {
            ips.push(RichIpConfig {
                version: Some(family),
                interface: None,
                address: cfg.ip,
                gateway: cfg.gateway,
            });
            routes.extend(cfg.routes.iter().map(|route| route.without_attributes()));
        }
    }
    RichResult {
        cni_version: to,
        interfaces: Vec::new(),
        ips,
        routes,
        dns: r.dns.clone(),
    }
}

fn rich_to_legacy(
    r: &RichResult,
    from: CniVersion,
    to: CniVersion,
) -> Result<LegacyResult, ConversionError> {
    let first = |family: IpFamily| {
        r.ips
            .iter()
            .find(|ip| ip.family() == family)
            .map(|ip| LegacyIpConfig {
                ip: ip.address,
                gateway: ip.gateway,
                routes: Vec::new(),
            })
    };
    let mut ip4 = first(IpFamily::V4);
    let mut ip6 = first(IpFamily::V6);
    if ip4.is_none() && ip6.is_none() {
        return Err(ConversionError::NoValidIpAddresses { from, to });
    }
    for route in &r.routes {
        let target = match IpFamily::of(route.dst.addr()) {
            IpFamily::V4 => ip4.as_mut(),
            IpFamily::V6 => ip6.as_mut(),
        };
        if let Some(cfg) = target {
            cfg.routes.push(route.without_attributes());
        }
    }
    Ok(LegacyResult {
        cni_version: to,
        ip4,
        ip6,
        dns: r.dns.clone(),
    })
}

fn rich_to_v1(r: &RichResult, to: CniVersion) -> V1Result {
    V1Result {
        cni_version: to,
        interfaces: r
            .interfaces
            .iter()
            .map(|i| Interface {
                name: i.name.clone(),
                mac: i.mac.clone(),
                sandbox: i.sandbox.clone(),
                ..Interface::default()
            })
            .collect(),
        ips: r
            .ips
            .iter()
            .map(|ip| IpConfig {
                interface: ip.interface,
                address: ip.address,
                gateway: ip.gateway,
            })
            .collect(),
        routes: r.routes.clone(),
        dns: r.dns.clone(),
    }
}

fn v1_to_rich(r: &V1Result, to: CniVersion) -> RichResult {
    RichResult {
        cni_version: to,
        interfaces: r
            .interfaces
            .iter()
            .map(|i| RichInterface {
                name: i.name.clone(),
                mac: i.mac.clone(),
                sandbox: i.sandbox.clone(),
            })
            .collect(),
        ips: r
            .ips
            .iter()
            .map(|ip| RichIpConfig {
                version: Some(IpFamily::of(ip.address.addr())),
                interface: ip.interface,
                address: ip.address,
                gateway: ip.gateway,
            })
            .collect(),
        routes: r.routes.clone(),
        dns: r.dns.clone(),
    }
}
