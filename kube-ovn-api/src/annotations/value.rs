//! The value types of Kube-OVN's annotations and their exact text formats.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipam::Mac;
use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::{Deserialize, Serialize};

use super::fields::AnnotationValue;

impl AnnotationValue for bool {
    /// Kube-OVN writes and compares `"true"`; `"false"` is accepted, nothing else.
    fn parse(text: &str) -> Result<Self, String> {
        match text {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err("expected \"true\" or \"false\"".into()),
        }
    }
    fn render(&self) -> String {
        self.to_string()
    }
}

/// Unsigned decimal integers (rates in Mbit/s, VLAN ids, MTUs, milliseconds).
macro_rules! unsigned_value {
    ($($t:ty),*) => {$(
        impl AnnotationValue for $t {
            fn parse(text: &str) -> Result<Self, String> {
                if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                    return Err("expected an unsigned decimal integer".into());
                }
                text.parse().map_err(|_| format!("out of range (at most {})", <$t>::MAX))
            }
            fn render(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
unsigned_value!(u16, u32, u64);

impl AnnotationValue for String {
    /// Names (switches, routers, provider networks, chassis): any non-empty text.
    fn parse(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("expected a non-empty name".into());
        }
        Ok(text.to_string())
    }
    fn render(&self) -> String {
        self.clone()
    }
}

impl AnnotationValue for IpAddr {
    fn parse(text: &str) -> Result<Self, String> {
        text.parse()
            .map_err(|_| "expected an IPv4 or IPv6 address".into())
    }
    fn render(&self) -> String {
        self.to_string()
    }
}

impl AnnotationValue for Mac {
    /// `00:00:00:53:6b:b6`; upper-case input is accepted and written back lower-case.
    fn parse(text: &str) -> Result<Self, String> {
        Mac::parse_unicast(text).map_err(|e| e.to_string())
    }
    fn render(&self) -> String {
        self.to_string()
    }
}

impl AnnotationValue for Vec<IpAddr> {
    /// Comma-separated addresses (`port_vips`).
    fn parse(text: &str) -> Result<Self, String> {
        split_list(text, ',')?
            .into_iter()
            .map(|s| s.parse().map_err(|_| format!("{s:?} is not an IP address")))
            .collect()
    }
    fn render(&self) -> String {
        join(self, ",")
    }
}

/// The pieces of a `sep`-separated list, none empty.
pub(crate) fn split_list(text: &str, sep: char) -> Result<Vec<&str>, String> {
    let parts: Vec<&str> = text.split(sep).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("empty element in {sep:?}-separated list"));
    }
    Ok(parts)
}

pub(crate) fn join<T: fmt::Display>(items: &[T], sep: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(sep)
}

/// At most one IPv4 and one IPv6 value, written `v4,v6` (Kube-OVN's dual-stack form:
/// `ip_address` `10.16.0.5,fd00::5`, `gateway` `10.16.0.1,fd00::1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pair<V4, V6> {
    /// The IPv4 value.
    pub v4: Option<V4>,
    /// The IPv6 value.
    pub v6: Option<V6>,
}

/// Addresses of one NIC, one per family (`ip_address`, `gateway`).
pub type IpPair = Pair<Ipv4Addr, Ipv6Addr>;
/// Networks of one subnet, one per family (`cidr`).
pub type CidrPair = Pair<Ipv4Net, Ipv6Net>;

impl<V4, V6> Pair<V4, V6> {
    /// A single-stack IPv4 value.
    pub fn v4(v4: V4) -> Self {
        Pair {
            v4: Some(v4),
            v6: None,
        }
    }
    /// A single-stack IPv6 value.
    pub fn v6(v6: V6) -> Self {
        Pair {
            v4: None,
            v6: Some(v6),
        }
    }
    /// Both families.
    pub fn dual(v4: V4, v6: V6) -> Self {
        Pair {
            v4: Some(v4),
            v6: Some(v6),
        }
    }
}

impl IpPair {
    /// The addresses, IPv4 first.
    pub fn addrs(&self) -> Vec<IpAddr> {
        let v4 = self.v4.map(IpAddr::V4);
        v4.into_iter().chain(self.v6.map(IpAddr::V6)).collect()
    }
}

impl CidrPair {
    /// The networks, IPv4 first.
    pub fn nets(&self) -> Vec<IpNet> {
        let v4 = self.v4.map(IpNet::V4);
        v4.into_iter().chain(self.v6.map(IpNet::V6)).collect()
    }
}

/// A value that is either IPv4 or IPv6.
trait Family: Sized {
    type V4;
    type V6;
    fn parse_one(text: &str) -> Option<Result<Self::V4, Self::V6>>;
    const WHAT: &'static str;
}

struct Addr;
impl Family for Addr {
    type V4 = Ipv4Addr;
    type V6 = Ipv6Addr;
    fn parse_one(text: &str) -> Option<Result<Ipv4Addr, Ipv6Addr>> {
        match text.parse::<IpAddr>().ok()? {
            IpAddr::V4(a) => Some(Ok(a)),
            IpAddr::V6(a) => Some(Err(a)),
        }
    }
    const WHAT: &'static str = "an IP address";
}

struct Cidr;
impl Family for Cidr {
    type V4 = Ipv4Net;
    type V6 = Ipv6Net;
    fn parse_one(text: &str) -> Option<Result<Ipv4Net, Ipv6Net>> {
        match text.parse::<IpNet>().ok()? {
            IpNet::V4(n) => Some(Ok(n)),
            IpNet::V6(n) => Some(Err(n)),
        }
    }
    const WHAT: &'static str = "a CIDR";
}

fn parse_pair<F: Family>(text: &str) -> Result<Pair<F::V4, F::V6>, String> {
    let parts = split_list(text, ',')?;
    if parts.len() > 2 {
        return Err(format!("more than two values ({} given)", parts.len()));
    }
    let mut pair = Pair { v4: None, v6: None };
    for part in parts {
        match F::parse_one(part) {
            None => return Err(format!("{part:?} is not {}", F::WHAT)),
            Some(Ok(v4)) if pair.v4.is_none() => pair.v4 = Some(v4),
            Some(Err(v6)) if pair.v6.is_none() => pair.v6 = Some(v6),
            Some(_) => return Err("two values of the same IP family".into()),
        }
    }
    Ok(pair)
}

fn render_pair<A: fmt::Display, B: fmt::Display>(pair: &Pair<A, B>) -> String {
    let v4 = pair.v4.as_ref().map(ToString::to_string);
    let v6 = pair.v6.as_ref().map(ToString::to_string);
    v4.into_iter().chain(v6).collect::<Vec<_>>().join(",")
}

impl AnnotationValue for IpPair {
    fn parse(text: &str) -> Result<Self, String> {
        parse_pair::<Addr>(text)
    }
    fn render(&self) -> String {
        render_pair(self)
    }
}

impl AnnotationValue for CidrPair {
    /// Networks are taken as written (`10.16.0.0/16`); host bits are kept.
    fn parse(text: &str) -> Result<Self, String> {
        parse_pair::<Cidr>(text)
    }
    fn render(&self) -> String {
        render_pair(self)
    }
}

/// A comma-separated list of names (`security_groups`, `vip`, `aaps`, a namespace's
/// `logical_switch`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Names(pub Vec<String>);

impl AnnotationValue for Names {
    fn parse(text: &str) -> Result<Self, String> {
        Ok(Names(
            split_list(text, ',')?
                .into_iter()
                .map(String::from)
                .collect(),
        ))
    }
    fn render(&self) -> String {
        self.0.join(",")
    }
}

/// One route of the `routes` annotation: Kube-OVN's JSON `{"dst":"..","gw":".."}`, both
/// optional (no `dst` is the default route).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Destination network.
    #[serde(rename = "dst", default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<IpNet>,
    /// Next hop.
    #[serde(rename = "gw", default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
}

/// The `routes` annotation: a JSON array of [`Route`]s.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Routes(pub Vec<Route>);

impl AnnotationValue for Routes {
    fn parse(text: &str) -> Result<Self, String> {
        serde_json::from_str(text)
            .map(Routes)
            .map_err(|e| format!("expected a JSON array of {{\"dst\",\"gw\"}} routes: {e}"))
    }
    fn render(&self) -> String {
        serde_json::to_string(&self.0).unwrap_or_default()
    }
}

/// Packet loss of the netem QoS (`loss`), a percentage in 0..=100.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossPercent(pub f64);

impl AnnotationValue for LossPercent {
    fn parse(text: &str) -> Result<Self, String> {
        let value: f64 = text
            .parse()
            .map_err(|_| "expected a percentage (a number)".to_string())?;
        if !(0.0..=100.0).contains(&value) {
            return Err("percentage out of 0..=100".into());
        }
        Ok(LossPercent(value))
    }
    fn render(&self) -> String {
        self.0.to_string()
    }
}

/// Kube-OVN's closed vocabularies: each variant with its exact text.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vmeta])* $variant,)* }

        impl $name {
            /// The value as Kube-OVN writes it.
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }
        }

        impl AnnotationValue for $name {
            fn parse(text: &str) -> Result<Self, String> {
                match text {
                    $($text => Ok($name::$variant),)*
                    _ => Err(format!("expected one of {:?}", [$($text),*])),
                }
            }
            fn render(&self) -> String {
                self.as_str().to_string()
            }
        }
    };
}

text_enum! {
    /// The one family to allocate from a dual-stack subnet (`ip_family`).
    IpFamily {
        /// `ipv4`.
        V4 => "ipv4",
        /// `ipv6`.
        V6 => "ipv6",
    }
}

text_enum! {
    /// How a pod's NIC is plugged (`pod_nic_type`).
    NicType {
        /// `veth-pair` (the default).
        VethPair => "veth-pair",
        /// `internal-port`: an OVS internal port moved into the pod.
        InternalPort => "internal-port",
        /// `offload-port`: an SR-IOV VF representor.
        OffloadPort => "offload-port",
        /// `dpdk-port`: a vhost-user port.
        DpdkPort => "dpdk-port",
    }
}

text_enum! {
    /// Whether and how the BGP speaker announces the pod's address (`bgp`).
    BgpAnnouncement {
        /// `true`: announce.
        Enabled => "true",
        /// `false`: do not announce.
        Disabled => "false",
        /// `local`: announce from the pod's node only.
        Local => "local",
        /// `cluster`: announce from every speaker.
        Cluster => "cluster",
    }
}

/// One entry of an exclusion list: an address or an inclusive range `a..b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExcludeIp {
    /// One address.
    Addr(IpAddr),
    /// `start..end`, both of one family, `start <= end`.
    Range(IpAddr, IpAddr),
}

impl ExcludeIp {
    /// Parses `10.16.0.1` or `10.16.0.10..10.16.0.20`.
    pub fn parse(text: &str) -> Result<ExcludeIp, String> {
        let ip = |s: &str| {
            s.parse::<IpAddr>()
                .map_err(|_| format!("{s:?} is not an IP address"))
        };
        let Some((start, end)) = text.split_once("..") else {
            return ip(text).map(ExcludeIp::Addr);
        };
        let (start, end) = (ip(start)?, ip(end)?);
        if start.is_ipv4() != end.is_ipv4() {
            return Err(format!("range {text:?} mixes IPv4 and IPv6"));
        }
        if start > end {
            return Err(format!("range {text:?} ends before it starts"));
        }
        Ok(ExcludeIp::Range(start, end))
    }
}

impl fmt::Display for ExcludeIp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExcludeIp::Addr(a) => write!(f, "{a}"),
            ExcludeIp::Range(a, b) => write!(f, "{a}..{b}"),
        }
    }
}

/// The `ip_pool` annotation: fixed addresses for a workload's pods, or an IPPool name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpPool {
    /// The name of an `IPPool` object.
    Named(String),
    /// Single-stack addresses, `10.16.0.15,10.16.0.16`.
    Addresses(Vec<IpAddr>),
    /// Dual-stack entries, `10.16.0.15,fd00::e;10.16.0.16,fd00::f`.
    DualStack(Vec<IpPair>),
}

impl AnnotationValue for IpPool {
    fn parse(text: &str) -> Result<Self, String> {
        if text.contains(';') {
            let entries = split_list(text, ';')?;
            return entries
                .into_iter()
                .map(IpPair::parse)
                .collect::<Result<_, _>>()
                .map(IpPool::DualStack);
        }
        let parts = split_list(text, ',')?;
        let ips: Vec<Option<IpAddr>> = parts.iter().map(|p| p.parse().ok()).collect();
        if let [None] = ips.as_slice() {
            return Ok(IpPool::Named(text.to_string()));
        }
        let Some(ips) = ips.into_iter().collect::<Option<Vec<IpAddr>>>() else {
            return Err("expected IP addresses or one IPPool name".into());
        };
        match ips.iter().filter(|ip| ip.is_ipv4()).count() {
            0 => Ok(IpPool::Addresses(ips)),
            n if n == ips.len() => Ok(IpPool::Addresses(ips)),
            // one address of each family without ';' is one dual-stack entry
            1 if ips.len() == 2 => IpPair::parse(text).map(|p| IpPool::DualStack(vec![p])),
            _ => Err("mixes IPv4 and IPv6 without ';' between dual-stack entries".into()),
        }
    }
    fn render(&self) -> String {
        match self {
            IpPool::Named(name) => name.clone(),
            IpPool::Addresses(ips) => join(ips, ","),
            IpPool::DualStack(pairs) => pairs.iter().map(render_pair).collect::<Vec<_>>().join(";"),
        }
    }
}
