//! Who holds an allocation, what is asked for, and what is handed out.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use crate::addr::{IpFamily, Mac};
use crate::error::AllocError;

/// The holder of an allocation: a pod (or VM, node, VIP...) key plus the NIC
/// or provider it is for. Kube-OVN keys pods as `namespace/name` and NICs by
/// provider (`ovn`, `<nad>.<ns>.ovn`); one pod may hold one allocation per
/// NIC in a subnet. The names are shared strings: the IPAM keeps owners in
/// several indexes, and cloning one costs two reference-count increments.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Owner {
    /// `namespace/name` of the pod (or another unique object key).
    pub pod: Arc<str>,
    /// NIC or provider name, e.g. `ovn` or `eth1`.
    pub nic: Arc<str>,
}

impl Owner {
    /// An owner from its pod key and NIC.
    pub fn new(pod: impl Into<Arc<str>>, nic: impl Into<Arc<str>>) -> Owner {
        Owner {
            pod: pod.into(),
            nic: nic.into(),
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.pod, self.nic)
    }
}

/// How the MAC of an allocation is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum MacRequest {
    /// Keep the owner's MAC, or generate a random locally administered
    /// unicast MAC unique in the subnet.
    #[default]
    Generate,
    /// This exact MAC (rejected if another owner in the subnet has it).
    Static(Mac),
    /// No MAC (e.g. a VIP or a node join address handled elsewhere).
    None,
}

/// What an owner asks of a subnet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllocationRequest {
    /// Pool to draw automatic addresses from; `None` is the default pool.
    /// A static address must lie in this pool when one is named.
    pub pool: Option<String>,
    /// Static addresses, at most one per family. Families of the subnet not
    /// listed here get the next free address.
    pub addresses: Vec<IpAddr>,
    /// How to choose the MAC.
    pub mac: MacRequest,
    /// Allow a static address from `excludeIps` (Kube-OVN lets chosen pods
    /// use excluded addresses; the caller decides who may).
    pub allow_excluded: bool,
}

impl AllocationRequest {
    /// Next free address(es) from the default pool and a generated MAC.
    pub fn next_free() -> AllocationRequest {
        AllocationRequest::default()
    }

    /// Static addresses (at most one per family) with a generated MAC.
    pub fn with_addresses(addresses: impl IntoIterator<Item = IpAddr>) -> AllocationRequest {
        AllocationRequest {
            addresses: addresses.into_iter().collect(),
            ..AllocationRequest::default()
        }
    }

    /// Parses static addresses in Kube-OVN's annotation form: `"v4"`,
    /// `"v6"` or `"v4,v6"`.
    pub fn parse_addresses(text: &str) -> Result<Vec<IpAddr>, AllocError> {
        text.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse().map_err(|_| AllocError::InvalidAddress {
                    value: s.to_owned(),
                })
            })
            .collect()
    }
}

/// The addresses an owner holds in one subnet.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Allocation {
    /// IPv4 address, on subnets with an IPv4 CIDR.
    pub v4: Option<Ipv4Addr>,
    /// IPv6 address, on subnets with an IPv6 CIDR.
    pub v6: Option<Ipv6Addr>,
    /// MAC address, unless none was asked for.
    pub mac: Option<Mac>,
}

impl Allocation {
    /// The address of one family.
    pub fn address(&self, family: IpFamily) -> Option<IpAddr> {
        match family {
            IpFamily::V4 => self.v4.map(IpAddr::V4),
            IpFamily::V6 => self.v6.map(IpAddr::V6),
        }
    }

    /// Both addresses, v4 first.
    pub fn addresses(&self) -> impl Iterator<Item = IpAddr> + '_ {
        IpFamily::ALL.into_iter().filter_map(|f| self.address(f))
    }

    /// Kube-OVN's `ip_address` annotation form: `"v4"`, `"v6"` or `"v4,v6"`.
    pub fn ip_address_annotation(&self) -> String {
        self.addresses()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    pub(crate) fn set(&mut self, family: IpFamily, value: Option<u128>) {
        match family {
            IpFamily::V4 => self.v4 = value.map(|v| Ipv4Addr::from(v as u32)),
            IpFamily::V6 => self.v6 = value.map(Ipv6Addr::from),
        }
    }
}

/// One allocation known from outside (pod annotations, IP objects), fed to
/// [`Ipam::rebuild`](crate::Ipam::rebuild).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingAllocation {
    /// Its holder.
    pub owner: Owner,
    /// Its addresses (one per family at most).
    pub addresses: Vec<IpAddr>,
    /// Its MAC, if any.
    pub mac: Option<Mac>,
}
