//! Talking to the link after addresses are configured: IPv4 conflict
//! detection and announcement (ARP, RFC 5227), IPv6 DAD (the kernel runs
//! it; we poll the address flags) and gateway resolution.
//!
//! Gateway resolution uses ARP directly for IPv4. For IPv6 it lets the
//! kernel do neighbour discovery: a UDP datagram to the gateway's discard
//! port makes the kernel solicit the gateway, and the answer shows up in
//! the neighbour table (`ip -6 neigh`), which we poll.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use rtnetlink::packet_route::address::{AddressAttribute, AddressFlags, AddressHeaderFlags};
use rtnetlink::packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourState};
use rtnetlink::packet_route::AddressFamily;

use crate::arp::{ArpOp, ArpPacket, ARP_LEN};
use crate::error::{Cause, Error, Step};
use crate::nl::Nl;
use crate::sys::ArpSocket;
use crate::{GatewayCheck, MacAddr};

/// Where ARP traffic goes: one interface in the current thread's namespace.
#[derive(Debug)]
pub(crate) struct Link<'a> {
    pub(crate) index: u32,
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) mac: MacAddr,
}

impl Link<'_> {
    fn fail(&self, step: Step, cause: impl Into<Cause>) -> Error {
        Error::step(step, self.name, self.namespace, cause)
    }

    fn socket(&self, step: Step) -> Result<ArpSocket, Error> {
        ArpSocket::open(self.index).map_err(|e| self.fail(step, e))
    }

    /// Listen until `deadline` for a packet matching `pick`.
    fn listen<T>(
        &self,
        sock: &ArpSocket,
        step: Step,
        deadline: Instant,
        pick: impl Fn(&ArpPacket) -> Option<T>,
    ) -> Result<Option<T>, Error> {
        let mut buf = [0u8; 128];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let Some(n) = sock.recv(&mut buf, left).map_err(|e| self.fail(step, e))? else {
                continue;
            };
            if let Some(found) = ArpPacket::parse(&buf[..n]).as_ref().and_then(&pick) {
                return Ok(Some(found));
            }
        }
    }

    /// RFC 5227 probe: two probes over `wait`; anyone answering for `ip`
    /// owns it already.
    pub(crate) fn probe(&self, ip: Ipv4Addr, wait: Duration) -> Result<(), Error> {
        let sock = self.socket(Step::Ipv4Dad)?;
        let probe = ArpPacket::probe(self.mac, ip).emit();
        let half = wait / 2;
        for _ in 0..2 {
            sock.send(&probe, MacAddr::BROADCAST)
                .map_err(|e| self.fail(Step::Ipv4Dad, e))?;
            let owner = self.listen(&sock, Step::Ipv4Dad, Instant::now() + half, |p| {
                p.claims(ip, self.mac).then_some(p.sender_mac)
            })?;
            if let Some(owner) = owner {
                return Err(Error::AddressConflict {
                    address: ip.into(),
                    interface: self.name.to_string(),
                    namespace: self.namespace.to_string(),
                    owner,
                });
            }
        }
        Ok(())
    }

    /// Gratuitous ARP for `ip`.
    pub(crate) fn announce(&self, ip: Ipv4Addr) -> Result<(), Error> {
        let sock = self.socket(Step::Ipv4Dad)?;
        sock.send(
            &ArpPacket::announce(self.mac, ip).emit(),
            MacAddr::BROADCAST,
        )
        .map_err(|e| self.fail(Step::Ipv4Dad, e))
    }

    /// Resolve `gateway` by ARP requests from `ours`.
    pub(crate) fn arp_resolve(
        &self,
        ours: Ipv4Addr,
        gateway: Ipv4Addr,
        check: GatewayCheck,
    ) -> Result<MacAddr, Error> {
        let sock = self.socket(Step::GatewayCheck)?;
        let request = ArpPacket::request(self.mac, ours, gateway).emit();
        debug_assert_eq!(request.len(), ARP_LEN);
        for attempt in 1..=check.attempts {
            sock.send(&request, MacAddr::BROADCAST)
                .map_err(|e| self.fail(Step::GatewayCheck, e))?;
            let deadline = Instant::now() + check.interval;
            let answer = self.listen(&sock, Step::GatewayCheck, deadline, |p| {
                (p.op == ArpOp::Reply && p.sender_ip == gateway).then_some(p.sender_mac)
            })?;
            if let Some(mac) = answer {
                tracing::debug!(%gateway, %mac, attempt, "gateway answered ARP");
                return Ok(mac);
            }
        }
        Err(self.unreachable(gateway.into(), check.attempts))
    }

    fn unreachable(&self, gateway: IpAddr, attempts: u32) -> Error {
        Error::GatewayUnreachable {
            gateway,
            interface: self.name.to_string(),
            namespace: self.namespace.to_string(),
            attempts,
        }
    }

    /// Resolve an IPv6 `gateway` through the kernel's neighbour discovery.
    pub(crate) async fn nd_resolve(
        &self,
        nl: &Nl,
        gateway: Ipv6Addr,
        check: GatewayCheck,
    ) -> Result<MacAddr, Error> {
        let sock = UdpSocket::bind("[::]:0").map_err(|e| self.fail(Step::GatewayCheck, e))?;
        let target = SocketAddr::new(gateway.into(), 9);
        for attempt in 1..=check.attempts {
            // The datagram only triggers a solicitation; its fate does not matter.
            if let Err(e) = sock.send_to(&[0], target) {
                tracing::debug!(%gateway, error = %e, "trigger datagram not sent");
            }
            let deadline = Instant::now() + check.interval;
            while Instant::now() < deadline {
                if let Some(mac) = self.neighbour_mac(nl, gateway).await? {
                    tracing::debug!(%gateway, %mac, attempt, "gateway answered ND");
                    return Ok(mac);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        Err(self.unreachable(gateway.into(), check.attempts))
    }

    async fn neighbour_mac(&self, nl: &Nl, gateway: Ipv6Addr) -> Result<Option<MacAddr>, Error> {
        let entries: Vec<_> = nl
            .handle
            .neighbours()
            .get()
            .set_address_family(AddressFamily::Inet6)
            .execute()
            .try_collect()
            .await
            .map_err(|e| self.fail(Step::GatewayCheck, e))?;
        let resolved = entries.iter().find_map(|n| {
            let usable = matches!(
                n.header.state,
                NeighbourState::Reachable
                    | NeighbourState::Stale
                    | NeighbourState::Delay
                    | NeighbourState::Probe
                    | NeighbourState::Permanent
            );
            let ours = n.header.ifindex == self.index
                && n.attributes.iter().any(|a| {
                    matches!(a, NeighbourAttribute::Destination(NeighbourAddress::Inet6(ip)) if *ip == gateway)
                });
            if !(usable && ours) {
                return None;
            }
            n.attributes.iter().find_map(|a| match a {
                NeighbourAttribute::LinkLayerAddress(mac) => MacAddr::from_slice(mac),
                _ => None,
            })
        });
        Ok(resolved)
    }
}

/// Poll the addresses of `index` until none is tentative.
pub(crate) async fn wait_ipv6_dad(
    nl: &Nl,
    index: u32,
    name: &str,
    timeout: Duration,
) -> Result<(), Error> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut tentative = None;
        for msg in nl.addresses(index, name).await? {
            let flags = msg.attributes.iter().find_map(|a| match a {
                AddressAttribute::Flags(f) => Some(*f),
                _ => None,
            });
            let header = msg.header.flags;
            let addr = msg.attributes.iter().find_map(|a| match a {
                AddressAttribute::Address(ip) => Some(*ip),
                _ => None,
            });
            let failed = header.contains(AddressHeaderFlags::Dadfailed)
                || flags.is_some_and(|f| f.contains(AddressFlags::Dadfailed));
            if failed {
                let what = addr.map(|a| format!("{name} ({a})")).unwrap_or(name.into());
                return Err(Error::step(
                    Step::Ipv6Dad,
                    what,
                    &nl.namespace,
                    nix::errno::Errno::EADDRINUSE,
                ));
            }
            if header.contains(AddressHeaderFlags::Tentative)
                || flags.is_some_and(|f| f.contains(AddressFlags::Tentative))
            {
                tentative = addr;
            }
        }
        let Some(addr) = tentative else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            let cause = std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{addr} still tentative after {timeout:?}"),
            );
            return Err(Error::step(Step::Ipv6Dad, name, &nl.namespace, cause));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
