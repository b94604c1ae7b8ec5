//! The host half of the node bootstrap over rtnetlink: `ovn0`'s MAC, MTU, txqueuelen,
//! state, addresses and routes, as Kube-OVN's `configureNodeNic` / `configureNic` set
//! them (`ip link set ovn0 address .. mtu .. txqueuelen 1000 up`, `ip addr add`,
//! `ip route replace <cidr> via <join gw> dev ovn0`).
//!
//! The `datapath` crate builds pod interfaces only (veth pairs in a pod's namespace), so
//! this host-side part lives here. Addresses other than the join addresses (link-local
//! ones excepted) are removed, and routes through `ovn0` with a gateway that are not
//! wanted are deleted, so a subnet that went away loses its route.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::TryStreamExt;
use ipnet::IpNet;
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope,
};
use rtnetlink::{Handle, LinkUnspec, RouteMessageBuilder};

use super::spec::{Plan, NODE_NIC};
use super::NodeError;

/// Kube-OVN's `ovn0` transmit queue length.
const TX_QUEUE_LEN: u32 = 1000;
/// How often the device is looked for while ovs-vswitchd creates it.
const POLL: Duration = Duration::from_millis(50);

/// A netlink connection to one network namespace's routing stack.
#[derive(Debug, Clone)]
pub struct HostNetwork {
    handle: Handle,
    namespace: String,
}

/// One change made on the host side.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkChange {
    /// MAC, MTU, txqueuelen or state set (the attributes that differed).
    Link(Vec<&'static str>),
    /// An address removed.
    AddressRemoved(IpNet),
    /// An address added.
    AddressAdded(IpNet),
    /// A route removed (destination).
    RouteRemoved(IpNet),
    /// A route added (destination).
    RouteAdded(IpNet),
}

impl HostNetwork {
    /// Netlink in the caller's own namespace (needs a tokio runtime).
    pub fn current() -> Result<HostNetwork, NodeError> {
        let namespace = "host".to_string();
        let (connection, handle, _) =
            rtnetlink::new_connection().map_err(|source| NodeError::Namespace {
                namespace: namespace.clone(),
                source,
            })?;
        tokio::spawn(connection);
        Ok(HostNetwork { handle, namespace })
    }

    /// Netlink in the namespace at `path` (`/var/run/netns/NAME`, `/proc/PID/ns/net`).
    ///
    /// `setns(2)` moves only the calling thread and a netlink socket stays in the
    /// namespace it was opened in: a new OS thread enters the namespace, opens the
    /// socket registered with the caller's runtime, and exits. No runtime thread ever
    /// changes namespace.
    pub async fn open(path: &Path) -> Result<HostNetwork, NodeError> {
        let namespace = path.display().to_string();
        let runtime = tokio::runtime::Handle::current();
        let path: PathBuf = path.to_path_buf();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let opened = (|| {
                let file = std::fs::File::open(&path)?;
                nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)?;
                let _entered = runtime.enter();
                rtnetlink::new_connection()
            })();
            let _ = tx.send(opened);
        });
        let opened = rx.await.map_err(|_| NodeError::Namespace {
            namespace: namespace.clone(),
            source: std::io::Error::other("the namespace thread panicked"),
        })?;
        let (connection, handle, _) = opened.map_err(|source| NodeError::Namespace {
            namespace: namespace.clone(),
            source,
        })?;
        tokio::spawn(connection);
        Ok(HostNetwork { handle, namespace })
    }

    /// The namespace, for errors and logs.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The netlink handle (for other host-side parts, such as a pod's tbf).
    pub(crate) fn handle(&self) -> Handle {
        self.handle.clone()
    }

    fn fail(
        &self,
        op: &'static str,
        what: impl ToString,
    ) -> impl FnOnce(rtnetlink::Error) -> NodeError {
        let namespace = self.namespace.clone();
        let what = what.to_string();
        move |source| NodeError::Netlink {
            op,
            what,
            namespace,
            source: Box::new(source),
        }
    }

    async fn find_link(&self, name: &str) -> Result<Option<LinkMessage>, NodeError> {
        let mut stream = self
            .handle
            .link()
            .get()
            .match_name(name.to_string())
            .execute();
        match stream.try_next().await {
            Ok(msg) => Ok(msg),
            Err(rtnetlink::Error::NetlinkError(e)) if e.raw_code().abs() == libc_enodev() => {
                Ok(None)
            }
            Err(e) => Err(self.fail("get link", name)(e)),
        }
    }

    /// The link `name`, waiting up to `wait` for it to appear.
    async fn wait_link(&self, name: &str, wait: Duration) -> Result<LinkMessage, NodeError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(link) = self.find_link(name).await? {
                return Ok(link);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(NodeError::LinkMissing {
                    link: name.to_string(),
                    namespace: self.namespace.clone(),
                    waited: wait,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// ENODEV, as netlink reports a missing link.
fn libc_enodev() -> i32 {
    nix::errno::Errno::ENODEV as i32
}

/// What `ovn0` should carry on the host.
#[derive(Debug, Clone)]
pub(crate) struct Ovn0 {
    pub(crate) plan: Plan,
    pub(crate) mtu: u32,
}

/// Makes `ovn0` in `net` match; returns what changed (empty: it already did).
pub(crate) async fn ensure(
    net: &HostNetwork,
    want: &Ovn0,
    wait: Duration,
) -> Result<Vec<LinkChange>, NodeError> {
    let link = net.wait_link(NODE_NIC, wait).await?;
    let index = link.header.index;
    let mut changes = Vec::new();
    if let Some(change) = ensure_link(net, &link, want).await? {
        changes.push(change);
    }
    ensure_addresses(net, index, &want.plan.addresses, &mut changes).await?;
    ensure_routes(net, index, &want.plan, &mut changes).await?;
    Ok(changes)
}

async fn ensure_link(
    net: &HostNetwork,
    link: &LinkMessage,
    want: &Ovn0,
) -> Result<Option<LinkChange>, NodeError> {
    let mac = want.plan.mac.0.to_vec();
    let (mut has_mac, mut has_mtu, mut has_qlen) = (false, false, false);
    for attr in &link.attributes {
        match attr {
            LinkAttribute::Address(a) => has_mac = *a == mac,
            LinkAttribute::Mtu(m) => has_mtu = *m == want.mtu,
            LinkAttribute::TxQueueLen(q) => has_qlen = *q == TX_QUEUE_LEN,
            _ => {}
        }
    }
    let up = link.header.flags.contains(LinkFlags::Up);
    let mut builder = LinkUnspec::new_with_index(link.header.index);
    let mut set = Vec::new();
    if !has_mac {
        builder = builder.address(mac);
        set.push("address");
    }
    if !has_mtu {
        builder = builder.mtu(want.mtu);
        set.push("mtu");
    }
    if !has_qlen {
        builder = builder.txqueuelen(TX_QUEUE_LEN);
        set.push("txqueuelen");
    }
    if !up {
        builder = builder.up();
        set.push("up");
    }
    if set.is_empty() {
        return Ok(None);
    }
    net.handle
        .link()
        .set(builder.build())
        .execute()
        .await
        .map_err(net.fail("set link", format!("{NODE_NIC} ({})", set.join(", "))))?;
    Ok(Some(LinkChange::Link(set)))
}

fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    }
}

fn address_of(msg: &AddressMessage) -> Option<IpNet> {
    // IFA_LOCAL is the interface's own IPv4 address; IPv6 only has IFA_ADDRESS
    let mut found = None;
    for attr in &msg.attributes {
        match attr {
            AddressAttribute::Local(ip) => return IpNet::new(*ip, msg.header.prefix_len).ok(),
            AddressAttribute::Address(ip) => found = IpNet::new(*ip, msg.header.prefix_len).ok(),
            _ => {}
        }
    }
    found
}

async fn ensure_addresses(
    net: &HostNetwork,
    index: u32,
    wanted: &[IpNet],
    changes: &mut Vec<LinkChange>,
) -> Result<(), NodeError> {
    let current: Vec<AddressMessage> = net
        .handle
        .address()
        .get()
        .set_link_index_filter(index)
        .execute()
        .try_collect()
        .await
        .map_err(net.fail("list addresses", NODE_NIC))?;
    let mut present = Vec::new();
    for msg in current {
        let Some(addr) = address_of(&msg) else {
            continue;
        };
        if wanted.contains(&addr) {
            present.push(addr);
        } else if !is_link_local(addr.addr()) {
            net.handle
                .address()
                .del(msg)
                .execute()
                .await
                .map_err(net.fail("delete address", format!("{addr} on {NODE_NIC}")))?;
            changes.push(LinkChange::AddressRemoved(addr));
        }
    }
    for addr in wanted.iter().filter(|a| !present.contains(a)) {
        net.handle
            .address()
            .add(index, addr.addr(), addr.prefix_len())
            .replace()
            .execute()
            .await
            .map_err(net.fail("add address", format!("{addr} on {NODE_NIC}")))?;
        changes.push(LinkChange::AddressAdded(*addr));
    }
    Ok(())
}

/// A route through `ovn0` in the main table, as far as the bootstrap looks at it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Installed {
    destination: IpNet,
    gateway: Option<IpAddr>,
}

fn ip_of(addr: &RouteAddress) -> Option<IpAddr> {
    match addr {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

/// The route if it goes out of `index` in the main table.
fn installed_on(msg: &RouteMessage, index: u32) -> Option<Installed> {
    let mut destination = None;
    let mut gateway = None;
    let mut oif = None;
    let mut table = u32::from(msg.header.table);
    for attr in &msg.attributes {
        match attr {
            RouteAttribute::Destination(a) => destination = ip_of(a),
            RouteAttribute::Gateway(a) => gateway = ip_of(a),
            RouteAttribute::Oif(i) => oif = Some(*i),
            RouteAttribute::Table(t) => table = *t,
            _ => {}
        }
    }
    if oif != Some(index) || table != u32::from(RouteHeader::RT_TABLE_MAIN) {
        return None;
    }
    let destination = destination.unwrap_or(match msg.header.address_family {
        rtnetlink::packet_route::AddressFamily::Inet6 => Ipv6Addr::UNSPECIFIED.into(),
        _ => Ipv4Addr::UNSPECIFIED.into(),
    });
    let destination = IpNet::new(destination, msg.header.destination_prefix_length).ok()?;
    Some(Installed {
        destination,
        gateway,
    })
}

async fn routes_on(
    net: &HostNetwork,
    index: u32,
) -> Result<Vec<(RouteMessage, Installed)>, NodeError> {
    let mut found = Vec::new();
    let queries = [
        RouteMessageBuilder::<Ipv4Addr>::new().build(),
        RouteMessageBuilder::<Ipv6Addr>::new().build(),
    ];
    for query in queries {
        let routes: Vec<RouteMessage> = net
            .handle
            .route()
            .get(query)
            .execute()
            .try_collect()
            .await
            .map_err(net.fail("list routes", NODE_NIC))?;
        for msg in routes {
            if let Some(installed) = installed_on(&msg, index) {
                found.push((msg, installed));
            }
        }
    }
    Ok(found)
}

fn route_message(index: u32, destination: IpNet, gateway: Option<IpAddr>) -> RouteMessage {
    let builder = RouteMessageBuilder::<IpAddr>::new()
        .destination_prefix(destination.network(), destination.prefix_len())
        .expect("the destination is an IpNet")
        .output_interface(index)
        .protocol(RouteProtocol::Static);
    match gateway {
        Some(gw) => builder.gateway(gw).expect("same family as the destination"),
        None => builder.scope(RouteScope::Link),
    }
    .build()
}

async fn ensure_routes(
    net: &HostNetwork,
    index: u32,
    plan: &Plan,
    changes: &mut Vec<LinkChange>,
) -> Result<(), NodeError> {
    let wanted: Vec<Installed> = plan
        .on_link
        .iter()
        .map(|cidr| Installed {
            destination: *cidr,
            gateway: None,
        })
        .chain(plan.routes.iter().map(|(destination, gw)| Installed {
            destination: *destination,
            gateway: Some(*gw),
        }))
        .collect();
    let current = routes_on(net, index).await?;
    for (msg, installed) in &current {
        // only routes with a gateway are the daemon's; connected and kernel ones stay
        if installed.gateway.is_some() && !wanted.contains(installed) {
            net.handle
                .route()
                .del(msg.clone())
                .execute()
                .await
                .map_err(net.fail(
                    "delete route",
                    format!("{} via {NODE_NIC}", installed.destination),
                ))?;
            changes.push(LinkChange::RouteRemoved(installed.destination));
        }
    }
    for route in wanted {
        if current.iter().any(|(_, c)| *c == route) {
            continue;
        }
        let msg = route_message(index, route.destination, route.gateway);
        net.handle
            .route()
            .add(msg)
            .replace()
            .execute()
            .await
            .map_err(net.fail("add route", format!("{} via {NODE_NIC}", route.destination)))?;
        changes.push(LinkChange::RouteAdded(route.destination));
    }
    Ok(())
}
