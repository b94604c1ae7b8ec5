//! Pieces shared by several result layouts: DNS settings, routes and the IP family tag.

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// DNS settings, in results and in plugin configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dns {
    /// Name servers, in priority order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    /// The local domain for short host names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Search domains, in priority order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    /// Resolver options.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl Dns {
    /// True when no field is set; empty DNS objects are left out of results (as Go does).
    pub fn is_empty(&self) -> bool {
        self.nameservers.is_empty()
            && self.domain.is_none()
            && self.search.is_empty()
            && self.options.is_empty()
    }
}

/// Reads an empty DNS object as absent, so parsing what we emit gives the same value.
pub(crate) fn non_empty_dns<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Dns>, D::Error> {
    Ok(Option::<Dns>::deserialize(deserializer)?.filter(|d| !d.is_empty()))
}

/// Skips an absent or empty DNS object when serializing.
pub(crate) fn dns_is_empty(dns: &Option<Dns>) -> bool {
    dns.as_ref().is_none_or(Dns::is_empty)
}

/// A route. 0.x layouts use only `dst` and `gw`; 1.1.0 adds the other attributes. As in the
/// reference (whose Go type is shared by all versions) they survive conversion to 0.3/0.4.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// Destination prefix, e.g. `0.0.0.0/0`.
    pub dst: IpNet,
    /// Next hop; absent means the default gateway of the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    /// 1.1.0: route MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// 1.1.0: advertised MSS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advmss: Option<u32>,
    /// 1.1.0: route priority (metric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// 1.1.0: routing table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    /// 1.1.0: route scope (e.g. 0 universe, 253 link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<u8>,
}

impl Route {
    /// A route to `dst` via `gw` with no 1.1 attributes.
    pub fn new(dst: IpNet, gw: Option<IpAddr>) -> Self {
        Route {
            dst,
            gw,
            mtu: None,
            advmss: None,
            priority: None,
            table: None,
            scope: None,
        }
    }

    /// The same route with only `dst` and `gw`, as 0.1.0/0.2.0 carry it.
    pub fn without_attributes(&self) -> Self {
        Route::new(self.dst, self.gw)
    }
}

/// The `version` tag of a 0.3.x/0.4.0 IP entry: `"4"` or `"6"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpFamily {
    /// `"4"`.
    V4,
    /// `"6"`.
    V6,
}

impl IpFamily {
    /// The family of an address (an IPv4-mapped IPv6 address counts as IPv4, as Go's `To4`).
    pub fn of(addr: IpAddr) -> Self {
        match addr {
            IpAddr::V4(_) => IpFamily::V4,
            IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => IpFamily::V4,
            IpAddr::V6(_) => IpFamily::V6,
        }
    }
}

impl Serialize for IpFamily {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(match self {
            IpFamily::V4 => "4",
            IpFamily::V6 => "6",
        })
    }
}

impl<'de> Deserialize<'de> for IpFamily {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match String::deserialize(deserializer)?.as_str() {
            "4" => Ok(IpFamily::V4),
            "6" => Ok(IpFamily::V6),
            other => Err(serde::de::Error::custom(format!(
                "invalid IP version {other:?}, expected \"4\" or \"6\""
            ))),
        }
    }
}
