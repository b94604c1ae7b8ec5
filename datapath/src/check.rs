//! CNI CHECK: read the pod interface back from the kernel and list every
//! way it differs from the [`PodInterface`] it was built from.

use std::net::IpAddr;

use ipnet::IpNet;
use rtnetlink::packet_route::address::AddressAttribute;
use rtnetlink::packet_route::route::RouteProtocol;

use crate::error::{Error, Step};
use crate::nl::{LinkInfo, Nl};
use crate::route::{default_route, from_message, satisfies};
use crate::worker::{self, Netns, HOST_NAMESPACE};
use crate::{sys, MacAddr, PodInterface, RouteSpec};

/// One link as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LinkState {
    /// Interface name.
    pub name: String,
    /// Interface index.
    pub index: u32,
    /// MTU.
    pub mtu: Option<u32>,
    /// MAC address.
    pub mac: Option<MacAddr>,
    /// TX queue length.
    pub txqueuelen: Option<u32>,
    /// Administratively up.
    pub up: bool,
}

impl From<LinkInfo> for LinkState {
    fn from(l: LinkInfo) -> Self {
        LinkState {
            name: l.name,
            index: l.index,
            mtu: l.mtu,
            mac: l.mac,
            txqueuelen: l.txqueuelen,
            up: l.up,
        }
    }
}

/// The pod end as read back from inside its namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InterfaceState {
    /// The link itself.
    pub link: LinkState,
    /// Addresses except IPv6 link-local ones, sorted.
    pub addresses: Vec<IpNet>,
    /// Static routes through this interface (what we install), sorted by
    /// destination; kernel-made prefix and link-local routes are left out.
    pub routes: Vec<RouteSpec>,
    /// `tx-checksumming` as `ethtool -k` shows it.
    pub tx_checksum: bool,
}

/// A way the system differs from the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Difference {
    /// A link is missing (`namespace` is `host` or the namespace path).
    MissingLink {
        /// Where it should be.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// Wrong MTU.
    Mtu {
        /// Interface.
        name: String,
        /// Asked for.
        want: u32,
        /// Found.
        have: Option<u32>,
    },
    /// Wrong MAC.
    Mac {
        /// Interface.
        name: String,
        /// Asked for.
        want: MacAddr,
        /// Found.
        have: Option<MacAddr>,
    },
    /// Wrong TX queue length.
    TxQueueLen {
        /// Interface.
        name: String,
        /// Asked for.
        want: u32,
        /// Found.
        have: Option<u32>,
    },
    /// Link is down.
    Down {
        /// Interface.
        name: String,
    },
    /// An address is missing.
    MissingAddress(IpNet),
    /// A route (default or extra) is missing.
    MissingRoute(RouteSpec),
    /// TX checksum offload should be off but is on.
    TxChecksumOn,
}

/// Result of [`crate::check`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckReport {
    /// The host end, if present.
    pub host: Option<LinkState>,
    /// The pod end, if present.
    pub container: Option<InterfaceState>,
    /// Everything that differs; empty means the pod is as asked.
    pub differences: Vec<Difference>,
}

impl CheckReport {
    /// True when nothing differs.
    pub fn is_ok(&self) -> bool {
        self.differences.is_empty()
    }
}

pub(crate) async fn run(pod: PodInterface) -> Result<CheckReport, Error> {
    let ns = Netns::open(&pod.container.netns, &pod.container.name)?;
    let host_nl = Nl::new(
        worker::connect(HOST_NAMESPACE, &pod.host.name)?,
        HOST_NAMESPACE,
    );
    let host = host_nl.find(&pod.host.name).await?.map(LinkState::from);
    ns.enter(&pod.container.name)?;
    let nl = Nl::new(
        worker::connect(ns.label(), &pod.container.name)?,
        ns.label(),
    );
    let container = match nl.find(&pod.container.name).await? {
        Some(link) => Some(read_interface(&nl, link).await?),
        None => None,
    };
    let mut differences = Vec::new();
    compare_link(
        &pod,
        HOST_NAMESPACE,
        &pod.host.name,
        host.as_ref(),
        pod.host.mac,
        &mut differences,
    );
    let pod_link = container.as_ref().map(|c| &c.link);
    compare_link(
        &pod,
        &ns.label(),
        &pod.container.name,
        pod_link,
        pod.container.mac,
        &mut differences,
    );
    if let Some(state) = &container {
        compare_config(&pod, state, &mut differences);
    }
    Ok(CheckReport {
        host,
        container,
        differences,
    })
}

async fn read_interface(nl: &Nl, link: LinkInfo) -> Result<InterfaceState, Error> {
    let name = link.name.clone();
    let mut addresses: Vec<IpNet> = Vec::new();
    for msg in nl.addresses(link.index, &name).await? {
        let ip = msg.attributes.iter().find_map(|a| match a {
            AddressAttribute::Address(ip) => Some(*ip),
            _ => None,
        });
        let Some(ip) = ip else { continue };
        if matches!(ip, IpAddr::V6(v6) if v6.is_unicast_link_local()) {
            continue;
        }
        if let Ok(net) = IpNet::new(ip, msg.header.prefix_len) {
            addresses.push(net);
        }
    }
    addresses.sort();
    let mut routes = Vec::new();
    for family in [IpAddr::from([0u8; 4]), IpAddr::from([0u16; 8])] {
        for msg in nl.routes(family, &name).await? {
            let Some(route) = from_message(&msg) else {
                continue;
            };
            if route.oif == Some(link.index) && route.protocol == RouteProtocol::Static {
                routes.push(route.spec);
            }
        }
    }
    routes.sort_by_key(|r| (r.destination, r.table));
    let tx_checksum = sys::tx_checksum(&name)
        .map_err(|e| Error::step(Step::ReadBack, &name, &nl.namespace, e))?;
    Ok(InterfaceState {
        link: link.into(),
        addresses,
        routes,
        tx_checksum,
    })
}

fn compare_link(
    pod: &PodInterface,
    namespace: &str,
    name: &str,
    have: Option<&LinkState>,
    mac: Option<MacAddr>,
    out: &mut Vec<Difference>,
) {
    let Some(link) = have else {
        out.push(Difference::MissingLink {
            namespace: namespace.to_string(),
            name: name.to_string(),
        });
        return;
    };
    let name = name.to_string();
    if let Some(want) = pod.mtu.filter(|m| link.mtu != Some(*m)) {
        out.push(Difference::Mtu {
            name: name.clone(),
            want,
            have: link.mtu,
        });
    }
    if let Some(want) = mac.filter(|m| link.mac != Some(*m)) {
        out.push(Difference::Mac {
            name: name.clone(),
            want,
            have: link.mac,
        });
    }
    if let Some(want) = pod.txqueuelen.filter(|q| link.txqueuelen != Some(*q)) {
        out.push(Difference::TxQueueLen {
            name: name.clone(),
            want,
            have: link.txqueuelen,
        });
    }
    if !link.up {
        out.push(Difference::Down { name });
    }
}

fn compare_config(pod: &PodInterface, state: &InterfaceState, out: &mut Vec<Difference>) {
    let c = &pod.container;
    for addr in &c.addresses {
        if !state.addresses.contains(addr) {
            out.push(Difference::MissingAddress(*addr));
        }
    }
    let wanted = c.gateways.iter().map(|gw| default_route(*gw));
    for route in wanted.chain(c.routes.iter().cloned()) {
        if !state.routes.iter().any(|have| satisfies(have, &route)) {
            out.push(Difference::MissingRoute(route));
        }
    }
    if c.disable_tx_checksum && state.tx_checksum {
        out.push(Difference::TxChecksumOn);
    }
}
