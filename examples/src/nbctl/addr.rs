//! Address parsing and normalization as `ovn-nbctl` does it (`ip_parse_cidr()`,
//! `normalize_prefix_str()`, `eth_addr_from_string()`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `IP[/LEN]` or `IP/MASK` (IPv4 only); host bits may be set.
pub fn parse_cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (ip, len) = match s.split_once('/') {
        Some((ip, len)) => (ip, Some(len)),
        None => (s, None),
    };
    let ip: IpAddr = ip.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let plen = match len {
        None => max,
        Some(l) => match l.parse::<u8>() {
            Ok(n) if n <= max => n,
            _ => {
                let mask: Ipv4Addr = l.parse().ok()?;
                let m = u32::from(mask);
                if !ip.is_ipv4() || m.leading_ones() + m.trailing_zeros() != 32 {
                    return None;
                }
                m.leading_ones() as u8
            }
        },
    };
    Some((ip, plen))
}

fn masked(ip: IpAddr, plen: u8) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let mask = if plen == 0 {
                0
            } else {
                u32::MAX << (32 - plen as u32)
            };
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
        }
        IpAddr::V6(a) => {
            let mask = if plen == 0 {
                0
            } else {
                u128::MAX << (128 - plen as u32)
            };
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
        }
    }
}

/// `normalize_ipv4_prefix()`/`normalize_ipv6_prefix()`: host addresses bare, networks
/// as `net/len` with host bits cleared.
pub fn normalize(ip: IpAddr, plen: u8) -> String {
    let max = if ip.is_ipv4() { 32 } else { 128 };
    if plen == max {
        ip.to_string()
    } else {
        format!("{}/{plen}", masked(ip, plen))
    }
}

pub fn normalize_prefix(s: &str) -> Option<String> {
    parse_cidr(s).map(|(ip, plen)| normalize(ip, plen))
}

/// A single address (no prefix length) of the given family.
pub fn normalize_addr(s: &str, v6: bool) -> Option<String> {
    let ip: IpAddr = s.parse().ok()?;
    (ip.is_ipv6() == v6).then(|| ip.to_string())
}

/// `eth_addr_from_string()`: six colon-separated groups of one or two hex digits.
pub fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| (1..=2).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_hexdigit()))
}
