//! The gateway check on its own, for callers that configure the pod first and can only
//! reach the gateway later: Kube-OVN plugs the host end into OVS and waits for
//! `ovn-installed` between configuring the pod's interface and checking its gateway.

use std::net::IpAddr;
use std::path::PathBuf;

use ipnet::IpNet;

use crate::error::{Error, Step};
use crate::nl::Nl;
use crate::probe::Link;
use crate::worker::{self, Netns};
use crate::{GatewayCheck, MacAddr};

/// Resolves each gateway from interface `ifname` inside `netns` (ARP for IPv4, neighbour
/// discovery for IPv6), `check.attempts` times at most; the IPv4 request carries the
/// interface's IPv4 address from `addresses`. Returns each gateway with its MAC.
pub(crate) async fn run(
    netns: PathBuf,
    ifname: String,
    addresses: Vec<IpNet>,
    gateways: Vec<IpAddr>,
    check: GatewayCheck,
) -> Result<Vec<(IpAddr, MacAddr)>, Error> {
    let ns = Netns::open(&netns, &ifname)?;
    ns.enter(&ifname)?;
    let nl = Nl::new(worker::connect(ns.label(), &ifname)?, ns.label());
    let info = nl.require(&ifname, Step::GatewayCheck).await?;
    let mac = info.mac.ok_or_else(|| {
        Error::step(
            Step::GatewayCheck,
            &ifname,
            ns.label(),
            crate::error::Cause::Missing("MAC address".into()),
        )
    })?;
    let link = Link {
        index: info.index,
        name: &ifname,
        namespace: &nl.namespace,
        mac,
    };
    let mut found = Vec::new();
    for gw in gateways {
        let answer = match gw {
            IpAddr::V4(gw4) => {
                let ours = addresses.iter().find_map(|a| match a {
                    IpNet::V4(v4) => Some(v4.addr()),
                    IpNet::V6(_) => None,
                });
                let ours = ours.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
                link.arp_resolve(ours, gw4, check)?
            }
            IpAddr::V6(gw6) => link.nd_resolve(&nl, gw6, check).await?,
        };
        found.push((gw, answer));
    }
    Ok(found)
}
