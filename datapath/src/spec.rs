//! What a pod interface should look like: plain data, validated before any
//! system call so that a bad request never leaves half a pod behind.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use ipnet::IpNet;

use crate::error::SpecError;

/// Longest Linux interface name (`IFNAMSIZ` - 1).
pub const MAX_IFNAME_LEN: usize = 15;

/// An Ethernet MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// The six bytes.
    pub fn octets(&self) -> [u8; 6] {
        self.0
    }

    /// True for an address a NIC may own: not multicast, not all zero.
    pub fn is_unicast(&self) -> bool {
        self.0[0] & 0x01 == 0 && self.0 != [0; 6]
    }

    pub(crate) fn from_slice(bytes: &[u8]) -> Option<MacAddr> {
        <[u8; 6]>::try_from(bytes).ok().map(MacAddr)
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MacAddr({self})")
    }
}

impl FromStr for MacAddr {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || SpecError::MacSyntax(s.to_string());
        let mut out = [0u8; 6];
        let mut parts = s.split(':');
        for byte in out.iter_mut() {
            let part = parts.next().ok_or_else(bad)?;
            if part.len() != 2 {
                return Err(bad());
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(MacAddr(out))
    }
}

/// Kube-OVN's veth names for a container: `<id[..12]>_h` on the host and
/// `<id[..12]>_c` for the end that moves into the pod, as `(host, peer)`.
///
/// For an interface other than `eth0` the id is cut shorter so the name
/// still fits 15 bytes: `<id[..12 - len(ifname)]>_<ifname>_h`.
pub fn veth_names(container_id: &str, ifname: &str) -> Result<(String, String), SpecError> {
    let valid_id = !container_id.is_empty()
        && container_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !valid_id {
        return Err(SpecError::ContainerId(container_id.to_string()));
    }
    let (prefix, middle) = if ifname == "eth0" {
        (
            container_id.get(..12).unwrap_or(container_id),
            String::new(),
        )
    } else {
        let keep = 12usize.saturating_sub(ifname.len()).max(1);
        let keep = keep.min(container_id.len());
        (&container_id[..keep], format!("_{ifname}"))
    };
    let host = format!("{prefix}{middle}_h");
    let peer = format!("{prefix}{middle}_c");
    validate_ifname(&host)?;
    validate_ifname(&peer)?;
    Ok((host, peer))
}

pub(crate) fn validate_ifname(name: &str) -> Result<(), SpecError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_IFNAME_LEN
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(SpecError::InterfaceName(name.to_string()))
    }
}

/// An extra route inside the pod: `ip route add DST [via GW] dev IF
/// [metric M] [table T]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    /// Destination prefix.
    pub destination: IpNet,
    /// Next hop; `None` makes a link-scope route.
    pub gateway: Option<IpAddr>,
    /// Route metric (`RTA_PRIORITY`); `None` leaves the kernel default.
    pub metric: Option<u32>,
    /// Routing table; `None` is the main table (254).
    pub table: Option<u32>,
}

impl RouteSpec {
    /// A route to `destination` via `gateway` in the main table.
    pub fn via(destination: IpNet, gateway: IpAddr) -> Self {
        RouteSpec {
            destination,
            gateway: Some(gateway),
            metric: None,
            table: None,
        }
    }
}

/// How IPv4 addresses are announced / checked after they are added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ipv4Dad {
    /// Do nothing.
    Off,
    /// Send one gratuitous ARP per address so neighbours update their caches.
    Announce,
    /// RFC 5227: ARP-probe each address (sender IP 0.0.0.0) and fail with
    /// [`crate::Error::AddressConflict`] when anyone answers within `wait`;
    /// then announce.
    Probe {
        /// How long to listen for an answer.
        wait: Duration,
    },
}

/// How long to wait for IPv6 DAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ipv6Dad {
    /// Add addresses with `nodad`: usable at once, never checked.
    Skip,
    /// Run DAD and poll the address flags until no address is tentative,
    /// failing on `dadfailed` or when `timeout` passes.
    Wait {
        /// Upper bound on the wait.
        timeout: Duration,
    },
}

/// Bounded gateway resolution after the interface is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatewayCheck {
    /// How many ARP requests / neighbour solicitations to send.
    pub attempts: u32,
    /// How long to wait for an answer after each.
    pub interval: Duration,
}

impl Default for GatewayCheck {
    /// Kube-OVN tries 200 times about a second apart; we wait 200 ms per try.
    fn default() -> Self {
        GatewayCheck {
            attempts: 200,
            interval: Duration::from_millis(200),
        }
    }
}

/// The host end of the pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEnd {
    /// Name on the host, `<id>_h`.
    pub name: String,
    /// MAC of the host end; `None` lets the kernel pick.
    pub mac: Option<MacAddr>,
    /// A Linux bridge to enslave the host end to (plain-bridge plugins and
    /// tests; Kube-OVN plugs the host end into OVS instead).
    pub bridge: Option<String>,
}

/// The end that goes into the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerEnd {
    /// Namespace file: `/var/run/netns/NAME` or `/proc/PID/ns/net`.
    pub netns: PathBuf,
    /// `<id>_c`: the name the pod end had on the host while it was created there and
    /// then moved (older releases); DEL still removes a stray one by this name. Setup
    /// now creates the pod end inside the namespace directly.
    pub temp_name: String,
    /// Final name inside the pod, usually `eth0`.
    pub name: String,
    /// MAC inside the pod (must equal the logical switch port's MAC).
    pub mac: Option<MacAddr>,
    /// Addresses with prefix length.
    pub addresses: Vec<IpNet>,
    /// Default route per family via these gateways (at most one per family).
    pub gateways: Vec<IpAddr>,
    /// Extra routes.
    pub routes: Vec<RouteSpec>,
    /// Turn TX checksum offload off (OVS userspace datapath).
    pub disable_tx_checksum: bool,
    /// IPv4 announce / conflict detection.
    pub ipv4_dad: Ipv4Dad,
    /// IPv6 DAD handling.
    pub ipv6_dad: Ipv6Dad,
    /// Resolve each gateway after setup.
    pub gateway_check: Option<GatewayCheck>,
    /// Extra sysctls below `net.` written inside the namespace, `IFNAME` in a
    /// name is replaced by the interface name.
    pub sysctls: Vec<(String, String)>,
    /// Whether the kernel gives the interface its IPv6 link-local address (its
    /// default). Off (`addr_gen_mode=1`, only for an interface without IPv6
    /// addresses), the interface stays IPv6-capable but sends no DAD, router
    /// solicitation or MLD report of its own: on a switch of many ports each of
    /// those is flooded to all of them.
    pub ipv6_link_local: bool,
}

/// A pod's veth interface: both ends and the configuration inside the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInterface {
    /// Host side.
    pub host: HostEnd,
    /// Pod side.
    pub container: ContainerEnd,
    /// MTU of both ends.
    pub mtu: Option<u32>,
    /// TX queue length of both ends.
    pub txqueuelen: Option<u32>,
}

impl PodInterface {
    /// A spec with Kube-OVN's names for `container_id`, no addresses yet,
    /// gratuitous ARP on, IPv6 DAD waited for (up to 10 s), no gateway check.
    pub fn new(
        container_id: &str,
        netns: impl Into<PathBuf>,
        ifname: &str,
    ) -> Result<Self, SpecError> {
        let (host, peer) = veth_names(container_id, ifname)?;
        validate_ifname(ifname)?;
        Ok(PodInterface {
            host: HostEnd {
                name: host,
                mac: None,
                bridge: None,
            },
            container: ContainerEnd {
                netns: netns.into(),
                temp_name: peer,
                name: ifname.to_string(),
                mac: None,
                addresses: Vec::new(),
                gateways: Vec::new(),
                routes: Vec::new(),
                disable_tx_checksum: false,
                ipv4_dad: Ipv4Dad::Announce,
                ipv6_dad: Ipv6Dad::Wait {
                    timeout: Duration::from_secs(10),
                },
                gateway_check: None,
                sysctls: Vec::new(),
                ipv6_link_local: true,
            },
            mtu: None,
            txqueuelen: None,
        })
    }

    /// Check everything that can be checked without the kernel.
    pub fn validate(&self) -> Result<(), SpecError> {
        validate_ifname(&self.host.name)?;
        validate_ifname(&self.container.temp_name)?;
        validate_ifname(&self.container.name)?;
        if let Some(bridge) = &self.host.bridge {
            validate_ifname(bridge)?;
        }
        if let Some(mtu) = self.mtu {
            if !(68..=65535).contains(&mtu) {
                return Err(SpecError::Mtu(mtu));
            }
        }
        for mac in [self.host.mac, self.container.mac].into_iter().flatten() {
            if !mac.is_unicast() {
                return Err(SpecError::Mac(mac));
            }
        }
        if !self.container.netns.is_absolute() {
            return Err(SpecError::NamespacePath(
                self.container.netns.display().to_string(),
            ));
        }
        self.validate_routing()?;
        if !self.container.ipv6_link_local {
            if let Some(v6) = self.container.addresses.iter().find(|a| a.addr().is_ipv6()) {
                return Err(SpecError::Ipv6WithoutLinkLocal(*v6));
            }
        }
        for (name, _) in &self.container.sysctls {
            validate_sysctl_name(name)?;
        }
        Ok(())
    }

    /// Check what CNI DEL needs: the two link names it deletes on the
    /// host. The namespace path is not looked at: runtimes send DEL with an
    /// empty `CNI_NETNS` once the sandbox is gone, and DEL must succeed then.
    pub fn validate_for_teardown(&self) -> Result<(), SpecError> {
        validate_ifname(&self.host.name)?;
        validate_ifname(&self.container.temp_name)
    }

    fn validate_routing(&self) -> Result<(), SpecError> {
        let c = &self.container;
        for (family, is_v4) in [(4u8, true), (6u8, false)] {
            let count = c.gateways.iter().filter(|g| g.is_ipv4() == is_v4).count();
            if count > 1 {
                return Err(SpecError::DuplicateGateway(family));
            }
        }
        for gw in &c.gateways {
            if !c
                .addresses
                .iter()
                .any(|a| a.addr().is_ipv4() == gw.is_ipv4())
            {
                return Err(SpecError::GatewayWithoutAddress(*gw));
            }
        }
        for route in &c.routes {
            if let Some(gw) = route.gateway {
                if gw.is_ipv4() != route.destination.addr().is_ipv4() {
                    return Err(SpecError::RouteFamilyMismatch {
                        destination: route.destination.to_string(),
                        gateway: gw,
                    });
                }
            }
        }
        Ok(())
    }
}

pub(crate) fn validate_sysctl_name(name: &str) -> Result<(), SpecError> {
    let ok = name.starts_with("net.")
        && !name.contains('/')
        && name.split('.').all(|part| !part.is_empty() && part != "..");
    if ok {
        Ok(())
    } else {
        Err(SpecError::Sysctl(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_ovn_names() {
        let (h, c) = veth_names("0123456789abcdef0123", "eth0").unwrap();
        assert_eq!(
            (h.as_str(), c.as_str()),
            ("0123456789ab_h", "0123456789ab_c")
        );
        let (h, c) = veth_names("0123456789abcdef", "net1").unwrap();
        assert_eq!(
            (h.as_str(), c.as_str()),
            ("01234567_net1_h", "01234567_net1_c")
        );
        assert_eq!(
            veth_names("", "eth0"),
            Err(SpecError::ContainerId(String::new()))
        );
        assert!(matches!(
            veth_names("a/b", "eth0"),
            Err(SpecError::ContainerId(_))
        ));
    }

    #[test]
    fn mac_round_trip_and_errors() {
        let mac: MacAddr = "0a:58:0a:10:00:05".parse().unwrap();
        assert_eq!(mac.0, [0x0a, 0x58, 0x0a, 0x10, 0x00, 0x05]);
        assert_eq!(mac.to_string(), "0a:58:0a:10:00:05");
        assert!(mac.is_unicast());
        for bad in [
            "",
            "0a:58",
            "0a:58:0a:10:00:05:06",
            "zz:58:0a:10:00:05",
            "0a5:8:0a:10:00:05",
        ] {
            assert_eq!(
                bad.parse::<MacAddr>(),
                Err(SpecError::MacSyntax(bad.into()))
            );
        }
        assert!(!MacAddr::BROADCAST.is_unicast());
    }

    #[test]
    fn validation_names_the_offender() {
        let mut pod = PodInterface::new("abc", "/var/run/netns/x", "eth0").unwrap();
        pod.validate().unwrap();
        pod.mtu = Some(10);
        assert_eq!(pod.validate(), Err(SpecError::Mtu(10)));
        pod.mtu = None;
        pod.container.name = "much-too-long-name".into();
        assert_eq!(
            pod.validate(),
            Err(SpecError::InterfaceName("much-too-long-name".into()))
        );
        pod.container.name = "eth0".into();
        pod.container.gateways = vec!["10.0.0.1".parse().unwrap()];
        assert_eq!(
            pod.validate(),
            Err(SpecError::GatewayWithoutAddress(
                "10.0.0.1".parse().unwrap()
            ))
        );
        pod.container.addresses = vec!["10.0.0.2/24".parse().unwrap()];
        pod.validate().unwrap();
        pod.container.routes = vec![RouteSpec::via(
            "fd00::/64".parse().unwrap(),
            "10.0.0.1".parse().unwrap(),
        )];
        assert!(matches!(
            pod.validate(),
            Err(SpecError::RouteFamilyMismatch { .. })
        ));
        pod.container.routes.clear();
        pod.container.sysctls = vec![("net.ipv4/../../kernel".into(), "1".into())];
        assert!(matches!(pod.validate(), Err(SpecError::Sysctl(_))));
        pod.container.sysctls.clear();
        pod.container.ipv6_link_local = false;
        pod.validate().unwrap();
        pod.container.addresses.push("fd00::2/64".parse().unwrap());
        assert_eq!(
            pod.validate(),
            Err(SpecError::Ipv6WithoutLinkLocal(
                "fd00::2/64".parse().unwrap()
            ))
        );
        pod.container.addresses.pop();
        pod.container.netns = "relative/ns".into();
        assert!(matches!(pod.validate(), Err(SpecError::NamespacePath(_))));
    }
}
