//! Subnet and IP pool specifications, in Kube-OVN's field formats, and
//! their validation into per-family configurations.
//!
//! * `cidrBlock`: one CIDR, or `"v4cidr,v6cidr"` for dual stack. Host bits
//!   are cleared (`10.0.0.5/24` is `10.0.0.0/24`), as Kube-OVN normalises.
//! * `gateway`: empty for the default (first usable address per family), or
//!   one address per family, comma separated. It must lie in its CIDR.
//! * `excludeIps`: entries `a` or `a..b` (inclusive), in any family mix. An
//!   entry partly outside the CIDR of its family is clipped to it; one fully
//!   outside is an error naming it.
//! * IPPool `ips`: entries `a`, `a..b` or a CIDR, checked the same way.
//!
//! Usable range: IPv4 `network+1 ..= broadcast-1`; IPv6 `network+1 ..=
//! last-1` (Kube-OVN keeps the all-ones address out too). Point-to-point
//! prefixes are real two-address links (RFC 3021 for /31, RFC 6164 for
//! /127), so both addresses are usable; a /32 or /128 is the one host.

use std::net::IpAddr;

use ipnet::IpNet;

use crate::addr::{addr_value, IpFamily};
use crate::error::SpecError;
use crate::range_set::RangeSet;

/// The address fields of a Kube-OVN `Subnet` spec.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubnetSpec {
    /// `"10.16.0.0/16"`, `"fd00::/112"` or `"10.16.0.0/16,fd00::/112"`.
    pub cidr_block: String,
    /// Empty for the default gateway, else one address per family.
    #[serde(default)]
    pub gateway: String,
    /// Addresses and `a..b` ranges never handed out automatically.
    #[serde(default)]
    pub exclude_ips: Vec<String>,
}

impl SubnetSpec {
    /// A spec with the default gateway and no exclusions.
    pub fn new(cidr_block: impl Into<String>) -> SubnetSpec {
        SubnetSpec {
            cidr_block: cidr_block.into(),
            ..SubnetSpec::default()
        }
    }
}

/// The address fields of a Kube-OVN `IPPool` spec: a named part of a subnet.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PoolSpec {
    /// Addresses, `a..b` ranges and CIDRs.
    pub ips: Vec<String>,
}

/// One family of a validated subnet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FamilyConfig {
    pub(crate) family: IpFamily,
    pub(crate) cidr: IpNet,
    pub(crate) gateway: u128,
    /// First and last usable address (inclusive).
    pub(crate) first: u128,
    pub(crate) last: u128,
    /// `excludeIps` of this family, clipped to the CIDR.
    pub(crate) excluded: RangeSet,
    /// Usable range minus excluded addresses minus the gateway.
    pub(crate) allocatable: RangeSet,
}

impl FamilyConfig {
    /// True when `addr` may be handed out (automatically).
    pub(crate) fn in_usable_range(&self, addr: u128) -> bool {
        (self.first..=self.last).contains(&addr)
    }
}

/// A validated subnet: one config per family present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SubnetConfig {
    pub(crate) families: [Option<FamilyConfig>; 2],
}

/// First and last usable address of a network.
pub(crate) fn usable_range(net: &IpNet) -> (u128, u128) {
    let family = IpFamily::of(net.addr());
    let network = addr_value(net.network());
    let last = addr_value(net.broadcast());
    let host_bits = family.bits() - u32::from(net.prefix_len());
    match host_bits {
        0 | 1 => (network, last),
        _ => (network + 1, last - 1),
    }
}

/// The network of an address range entry: `(family, start, end)`.
type Entry = (IpFamily, u128, u128);

/// Parses `a`, `a..b` and (when `allow_cidr`) `a/n`.
fn parse_entry(entry: &str, allow_cidr: bool) -> Result<Entry, &'static str> {
    let entry = entry.trim();
    if let Some((a, b)) = entry.split_once("..") {
        let a: IpAddr = a
            .trim()
            .parse()
            .map_err(|_| "range start is not an IP address")?;
        let b: IpAddr = b
            .trim()
            .parse()
            .map_err(|_| "range end is not an IP address")?;
        if IpFamily::of(a) != IpFamily::of(b) {
            return Err("range mixes IPv4 and IPv6");
        }
        let (s, e) = (addr_value(a), addr_value(b));
        if s > e {
            return Err("range start is after its end");
        }
        return Ok((IpFamily::of(a), s, e));
    }
    if entry.contains('/') {
        if !allow_cidr {
            return Err("CIDRs are not accepted here, use a..b");
        }
        let net: IpNet = entry.parse().map_err(|_| "not a CIDR")?;
        let family = IpFamily::of(net.addr());
        return Ok((
            family,
            addr_value(net.network()),
            addr_value(net.broadcast()),
        ));
    }
    let a: IpAddr = entry
        .parse()
        .map_err(|_| "not an IP address or a..b range")?;
    Ok((IpFamily::of(a), addr_value(a), addr_value(a)))
}

/// Why an address-set entry was rejected.
pub(crate) enum EntryError {
    Invalid(&'static str),
    Outside,
}

/// Parses address-set entries and clips each to the CIDR of its family.
pub(crate) fn parse_address_set(
    entries: &[String],
    cidrs: &[Option<IpNet>; 2],
    allow_cidr: bool,
) -> Result<[RangeSet; 2], (String, EntryError)> {
    let mut out = [RangeSet::new(), RangeSet::new()];
    for entry in entries {
        let (family, s, e) =
            parse_entry(entry, allow_cidr).map_err(|r| (entry.clone(), EntryError::Invalid(r)))?;
        let Some(cidr) = &cidrs[family.index()] else {
            return Err((entry.clone(), EntryError::Outside));
        };
        let (lo, hi) = (addr_value(cidr.network()), addr_value(cidr.broadcast()));
        let (s, e) = (s.max(lo), e.min(hi));
        if s > e {
            return Err((entry.clone(), EntryError::Outside));
        }
        out[family.index()].insert_range(s, e);
    }
    Ok(out)
}

fn parse_cidrs(name: &str, spec: &SubnetSpec) -> Result<[Option<IpNet>; 2], SpecError> {
    let mut cidrs: [Option<IpNet>; 2] = [None, None];
    let parts: Vec<&str> = spec
        .cidr_block
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        return Err(SpecError::EmptyCidrBlock {
            subnet: name.to_owned(),
        });
    }
    for part in parts {
        let net: IpNet = part.parse().map_err(|_| SpecError::InvalidCidr {
            subnet: name.to_owned(),
            cidr: part.to_owned(),
        })?;
        let family = IpFamily::of(net.addr());
        if cidrs[family.index()].replace(net.trunc()).is_some() {
            return Err(SpecError::DuplicateFamily {
                subnet: name.to_owned(),
                cidr_block: spec.cidr_block.clone(),
                family,
            });
        }
    }
    Ok(cidrs)
}

fn parse_gateways(
    name: &str,
    spec: &SubnetSpec,
    cidrs: &[Option<IpNet>; 2],
) -> Result<[Option<u128>; 2], SpecError> {
    let mut gateways = [None, None];
    for part in spec
        .gateway
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let bad = |reason| SpecError::InvalidGateway {
            subnet: name.to_owned(),
            gateway: part.to_owned(),
            reason,
        };
        let addr: IpAddr = part.parse().map_err(|_| bad("not an IP address"))?;
        let family = IpFamily::of(addr);
        let cidr =
            cidrs[family.index()].ok_or_else(|| bad("the subnet has no CIDR of its family"))?;
        if !cidr.contains(&addr) {
            return Err(bad("outside the subnet's CIDR"));
        }
        if gateways[family.index()].replace(addr_value(addr)).is_some() {
            return Err(bad("more than one gateway of one family"));
        }
    }
    Ok(gateways)
}

impl SubnetConfig {
    /// Validates a spec; errors name the subnet and the offending entry.
    pub(crate) fn parse(name: &str, spec: &SubnetSpec) -> Result<SubnetConfig, SpecError> {
        let cidrs = parse_cidrs(name, spec)?;
        let gateways = parse_gateways(name, spec, &cidrs)?;
        let excluded =
            parse_address_set(&spec.exclude_ips, &cidrs, false).map_err(|(entry, e)| match e {
                EntryError::Invalid(reason) => SpecError::InvalidExclude {
                    subnet: name.to_owned(),
                    entry,
                    reason,
                },
                EntryError::Outside => SpecError::ExcludeOutsideCidr {
                    subnet: name.to_owned(),
                    entry,
                },
            })?;
        let mut families: [Option<FamilyConfig>; 2] = [None, None];
        for (i, (cidr, excluded)) in cidrs.iter().zip(excluded).enumerate() {
            let Some(cidr) = cidr else { continue };
            let (first, last) = usable_range(cidr);
            let gateway = gateways[i].unwrap_or(first);
            let mut allocatable = RangeSet::from_range(first, last);
            allocatable.subtract(&excluded);
            allocatable.remove(gateway);
            families[i] = Some(FamilyConfig {
                family: IpFamily::of(cidr.addr()),
                cidr: *cidr,
                gateway,
                first,
                last,
                excluded,
                allocatable,
            });
        }
        Ok(SubnetConfig { families })
    }

    /// The CIDR of each family.
    pub(crate) fn cidrs(&self) -> [Option<IpNet>; 2] {
        [0, 1].map(|i| self.families[i].as_ref().map(|f| f.cidr))
    }
}

/// Validates a pool spec against its subnet's CIDRs. The result is not yet
/// clipped to the allocatable addresses: that happens whenever the subnet or
/// its pools change, so a pool follows its subnet's updates.
pub(crate) fn parse_pool(
    subnet: &str,
    pool: &str,
    spec: &PoolSpec,
    config: &SubnetConfig,
) -> Result<[RangeSet; 2], SpecError> {
    if pool.is_empty() {
        return Err(SpecError::EmptyPoolName {
            subnet: subnet.to_owned(),
        });
    }
    parse_address_set(&spec.ips, &config.cidrs(), true).map_err(|(entry, e)| match e {
        EntryError::Invalid(reason) => SpecError::InvalidPoolEntry {
            subnet: subnet.to_owned(),
            pool: pool.to_owned(),
            entry,
            reason,
        },
        EntryError::Outside => SpecError::PoolEntryOutsideCidr {
            subnet: subnet.to_owned(),
            pool: pool.to_owned(),
            entry,
        },
    })
}
