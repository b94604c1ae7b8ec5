//! CNI ADD: build the pod interface step by step, undo everything on failure.
//!
//! The order follows Kube-OVN's daemon (`configureContainerNic`):
//!
//! | step | `ip` equivalent |
//! |---|---|
//! | create pair | `ip link add H mtu M type veth peer name eth0 mtu M netns NS` |
//! | host end | `ip link set H master BR up` |
//! | sysctls | `sysctl -w net.ipv6.conf.{all,default,eth0}.{disable_ipv6,accept_ra}=0` (and `net.ipv6.conf.eth0.addr_gen_mode=1` without a link-local address) |
//! | up | `ip -n NS link set lo up; ip -n NS link set eth0 up` |
//! | IPv4 probe | `arping -D` |
//! | addresses | `ip -n NS addr add A/P dev eth0 [nodad]` |
//! | announce | `arping -U` / IPv6 DAD wait |
//! | routes | `ip -n NS route add default via GW`, extra routes |
//! | offload | `ethtool -K eth0 tx off` |
//! | gateway | `arping GW` / neighbour solicitation |
//!
//! The pod end is created inside the pod's namespace under its final name, not created
//! on the host and moved: moving a link waits for an RCU grace period under the RTNL
//! lock (20-30 ms here, and concurrent ADDs queue behind it).
//!
//! Once the pair exists, any failure (or panic) deletes the host end, which
//! takes the peer with it wherever it is, so no half-made pod remains.

use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::time::Instant;

use futures::FutureExt;
use ipnet::IpNet;

use crate::error::{Error, Step};
use crate::nl::{LinkInfo, Nl, VethSettings};
use crate::probe::{self, Link};
use crate::route::{default_route, to_message};
use crate::worker::{self, Netns, HOST_NAMESPACE};
use crate::{sys, sysctl, GatewayCheck, Ipv4Dad, Ipv6Dad, MacAddr, PodInterface};

/// What [`crate::setup`] built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetupReport {
    /// Host end's interface index.
    pub host_index: u32,
    /// Host end's MAC.
    pub host_mac: Option<MacAddr>,
    /// Pod end's interface index inside the namespace.
    pub container_index: u32,
    /// Pod end's MAC (given or kernel-chosen).
    pub container_mac: MacAddr,
    /// Gateways that answered the gateway check, with their MACs.
    pub gateways: Vec<(IpAddr, MacAddr)>,
}

/// Logs (at debug) how long setup has run when `step` is done.
fn mark(start: Instant, step: &'static str) {
    tracing::debug!(
        step,
        elapsed_us = start.elapsed().as_micros() as u64,
        "setup step done"
    );
}

pub(crate) async fn run(pod: PodInterface) -> Result<SetupReport, Error> {
    let start = Instant::now();
    let ns = Netns::open(&pod.container.netns, &pod.container.name)?;
    let host = Nl::new(
        worker::connect(HOST_NAMESPACE, &pod.host.name)?,
        HOST_NAMESPACE,
    );
    let settings = VethSettings {
        mtu: pod.mtu,
        txqueuelen: pod.txqueuelen,
        host_mac: pod.host.mac,
        peer_mac: pod.container.mac,
    };
    // the pod end is born in the pod's namespace under its final name
    if let Err(err) = host
        .create_veth(&pod.host.name, &pod.container.name, Some(&ns), &settings)
        .await
    {
        return Err(name_the_clash(err, &host, &ns, &pod).await);
    }
    mark(start, "create veth");
    let outcome = AssertUnwindSafe(configure(&host, &ns, &pod, start))
        .catch_unwind()
        .await;
    match outcome {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, host = %pod.host.name, "setup failed; removing the veth pair");
            rollback(&host, &pod.host.name).await;
            Err(err)
        }
        Err(panic) => {
            rollback(&host, &pod.host.name).await;
            std::panic::resume_unwind(panic)
        }
    }
}

/// The kernel's EEXIST does not say which of the two names is taken: when the host
/// end's name is free, it is the pod end's, inside the pod's namespace; say so.
async fn name_the_clash(err: Error, host: &Nl, ns: &Netns, pod: &PodInterface) -> Error {
    if err.errno() != Some(nix::errno::Errno::EEXIST) {
        return err;
    }
    match host.find(&pod.host.name).await {
        Ok(None) => Error::step(
            Step::CreateVeth,
            &pod.container.name,
            ns.label(),
            crate::error::Cause::Kernel {
                errno: nix::errno::Errno::EEXIST,
            },
        ),
        _ => err,
    }
}

async fn rollback(host: &Nl, name: &str) {
    if let Err(e) = host.delete(name).await {
        tracing::error!(error = %e, host = name, "could not remove veth pair after failed setup");
    }
}

async fn configure(
    host: &Nl,
    ns: &Netns,
    pod: &PodInterface,
    start: Instant,
) -> Result<SetupReport, Error> {
    let host_link = prepare_host_end(host, pod).await?;
    mark(start, "host end up");
    ns.enter(&pod.container.name)?;
    let pod_nl = Nl::new(
        worker::connect(ns.label(), &pod.container.name)?,
        ns.label(),
    );
    let link = bring_up(&pod_nl, pod).await?;
    mark(start, "pod end up");
    let container_mac = link.mac.ok_or_else(|| {
        Error::step(
            Step::FindLink,
            &link.name,
            ns.label(),
            crate::error::Cause::Missing("MAC address".into()),
        )
    })?;
    let target = Link {
        index: link.index,
        name: &pod.container.name,
        namespace: &pod_nl.namespace,
        mac: container_mac,
    };
    add_addresses(&pod_nl, &target, pod).await?;
    mark(start, "addresses");
    add_routes(&pod_nl, &target, pod).await?;
    mark(start, "routes");
    if pod.container.disable_tx_checksum {
        sys::set_tx_checksum(&pod.container.name, false).map_err(|e| {
            Error::step(Step::DisableTxChecksum, &pod.container.name, ns.label(), e)
        })?;
    }
    mark(start, "tx checksum");
    let gateways = match pod.container.gateway_check {
        Some(check) => check_gateways(&pod_nl, &target, pod, check).await?,
        None => Vec::new(),
    };
    Ok(SetupReport {
        host_index: host_link.index,
        host_mac: host_link.mac,
        container_index: link.index,
        container_mac,
        gateways,
    })
}

/// Enslave the host end to the bridge (if any) and bring it up.
async fn prepare_host_end(host: &Nl, pod: &PodInterface) -> Result<LinkInfo, Error> {
    let name = &pod.host.name;
    let link = host.require(name, Step::FindLink).await?;
    if let Some(bridge) = &pod.host.bridge {
        let br = host.require(bridge, Step::AttachToBridge).await?;
        host.set(link.index, name, Step::AttachToBridge, |b| {
            b.controller(br.index)
        })
        .await?;
    }
    host.set(link.index, name, Step::SetLink, |b| b.up())
        .await?;
    Ok(link)
}

/// Write sysctls, bring `lo` and the pod end up.
async fn bring_up(nl: &Nl, pod: &PodInterface) -> Result<LinkInfo, Error> {
    let c = &pod.container;
    let moved = nl.require(&c.name, Step::FindLink).await?;
    let needs_ipv6 = c.addresses.iter().any(|a| a.addr().is_ipv6());
    sysctl::apply(
        &c.sysctls,
        &c.name,
        &nl.namespace,
        needs_ipv6,
        c.ipv6_link_local,
    )?;
    let lo = nl.require("lo", Step::SetLink).await?;
    nl.set(lo.index, "lo", Step::SetLink, |b| b.up()).await?;
    nl.set(moved.index, &c.name, Step::SetLink, |b| b.up())
        .await?;
    nl.require(&c.name, Step::SetLink).await
}

async fn add_addresses(nl: &Nl, link: &Link<'_>, pod: &PodInterface) -> Result<(), Error> {
    let c = &pod.container;
    let v4 = || {
        c.addresses.iter().filter_map(|a| match a {
            IpNet::V4(v4) => Some(v4.addr()),
            IpNet::V6(_) => None,
        })
    };
    if let Ipv4Dad::Probe { wait } = c.ipv4_dad {
        for ip in v4() {
            link.probe(ip, wait)?;
        }
    }
    let nodad = matches!(c.ipv6_dad, Ipv6Dad::Skip);
    for addr in &c.addresses {
        nl.add_address(link.index, &c.name, *addr, nodad).await?;
    }
    if !matches!(c.ipv4_dad, Ipv4Dad::Off) {
        for ip in v4() {
            link.announce(ip)?;
        }
    }
    if let Ipv6Dad::Wait { timeout } = c.ipv6_dad {
        if c.addresses.iter().any(|a| a.addr().is_ipv6()) {
            probe::wait_ipv6_dad(nl, link.index, &c.name, timeout).await?;
        }
    }
    Ok(())
}

async fn add_routes(nl: &Nl, link: &Link<'_>, pod: &PodInterface) -> Result<(), Error> {
    let c = &pod.container;
    let defaults = c.gateways.iter().map(|gw| default_route(*gw));
    for spec in defaults.chain(c.routes.iter().cloned()) {
        let msg = to_message(&spec, link.index, &c.name, &nl.namespace)?;
        nl.add_route(msg, &c.name, &spec.destination.to_string())
            .await?;
    }
    Ok(())
}

async fn check_gateways(
    nl: &Nl,
    link: &Link<'_>,
    pod: &PodInterface,
    check: GatewayCheck,
) -> Result<Vec<(IpAddr, MacAddr)>, Error> {
    let mut found = Vec::new();
    for gw in &pod.container.gateways {
        let mac = match gw {
            IpAddr::V4(gw4) => {
                let ours = pod.container.addresses.iter().find_map(|a| match a {
                    IpNet::V4(v4) => Some(v4.addr()),
                    IpNet::V6(_) => None,
                });
                // validate() guarantees an address of the gateway's family.
                let ours = ours.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED);
                link.arp_resolve(ours, *gw4, check)?
            }
            IpAddr::V6(gw6) => link.nd_resolve(nl, *gw6, check).await?,
        };
        found.push((*gw, mac));
    }
    Ok(found)
}
