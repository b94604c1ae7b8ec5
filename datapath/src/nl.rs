//! Thin layer over rtnetlink that turns every failure into an [`Error`]
//! naming the step, the interface and the namespace.

use std::net::IpAddr;
use std::os::fd::AsRawFd;

use futures::TryStreamExt;
use ipnet::IpNet;
use nix::errno::Errno;
use rtnetlink::packet_route::address::{AddressAttribute, AddressFlags, AddressMessage};
use rtnetlink::packet_route::link::{InfoData, InfoVeth, LinkAttribute, LinkFlags, LinkMessage};
use rtnetlink::packet_route::route::RouteMessage;
use rtnetlink::{Handle, LinkMessageBuilder, LinkUnspec, LinkVeth};

use crate::error::{Cause, Error, Step};
use crate::worker::Netns;
use crate::MacAddr;

/// A netlink handle plus the namespace label for errors.
#[derive(Debug, Clone)]
pub(crate) struct Nl {
    pub(crate) handle: Handle,
    pub(crate) namespace: String,
}

/// What we read from a link message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkInfo {
    pub(crate) index: u32,
    pub(crate) name: String,
    pub(crate) mtu: Option<u32>,
    pub(crate) mac: Option<MacAddr>,
    pub(crate) txqueuelen: Option<u32>,
    pub(crate) up: bool,
    pub(crate) controller: Option<u32>,
}

impl LinkInfo {
    fn from_message(msg: &LinkMessage) -> Self {
        let mut info = LinkInfo {
            index: msg.header.index,
            name: String::new(),
            mtu: None,
            mac: None,
            txqueuelen: None,
            up: msg.header.flags.contains(LinkFlags::Up),
            controller: None,
        };
        for attr in &msg.attributes {
            match attr {
                LinkAttribute::IfName(n) => info.name = n.clone(),
                LinkAttribute::Mtu(m) => info.mtu = Some(*m),
                LinkAttribute::Address(a) => info.mac = MacAddr::from_slice(a),
                LinkAttribute::TxQueueLen(q) => info.txqueuelen = Some(*q),
                LinkAttribute::Controller(c) => info.controller = Some(*c),
                _ => {}
            }
        }
        info
    }
}

fn is_errno(err: &rtnetlink::Error, errno: Errno) -> bool {
    matches!(err, rtnetlink::Error::NetlinkError(m) if m.raw_code().abs() == errno as i32)
}

impl Nl {
    pub(crate) fn new(handle: Handle, namespace: impl Into<String>) -> Self {
        Nl {
            handle,
            namespace: namespace.into(),
        }
    }

    fn fail(&self, step: Step, interface: &str, cause: impl Into<Cause>) -> Error {
        Error::step(step, interface, &self.namespace, cause)
    }

    /// The link called `name`, or `None` when there is none.
    pub(crate) async fn find(&self, name: &str) -> Result<Option<LinkInfo>, Error> {
        let mut stream = self
            .handle
            .link()
            .get()
            .match_name(name.to_string())
            .execute();
        match stream.try_next().await {
            Ok(msg) => Ok(msg.as_ref().map(LinkInfo::from_message)),
            Err(e) if is_errno(&e, Errno::ENODEV) => Ok(None),
            Err(e) => Err(self.fail(Step::FindLink, name, e)),
        }
    }

    /// Like [`Nl::find`] but a missing link is an error of `step`.
    pub(crate) async fn require(&self, name: &str, step: Step) -> Result<LinkInfo, Error> {
        self.find(name)
            .await?
            .ok_or_else(|| self.fail(step, name, Cause::Missing(format!("link {name}"))))
    }

    /// `ip link add HOST [mtu] [address] [txqueuelen] type veth peer name
    /// PEER [mtu] [address] [txqueuelen] [netns NS]`.
    ///
    /// With `peer_netns` the kernel creates the peer inside that namespace: no move
    /// afterwards, whose `synchronize_net` under the RTNL lock costs tens of
    /// milliseconds and serialises concurrent ADDs.
    pub(crate) async fn create_veth(
        &self,
        host: &str,
        peer: &str,
        peer_netns: Option<&Netns>,
        settings: &VethSettings,
    ) -> Result<(), Error> {
        let mut peer_msg = LinkMessageBuilder::<LinkUnspec>::new().name(peer.to_string());
        if let Some(ns) = peer_netns {
            peer_msg = peer_msg.setns_by_fd(ns.file().as_raw_fd());
        }
        let mut host_msg = LinkVeth::new(host, peer);
        if let Some(mtu) = settings.mtu {
            host_msg = host_msg.mtu(mtu);
            peer_msg = peer_msg.mtu(mtu);
        }
        if let Some(q) = settings.txqueuelen {
            host_msg = host_msg.txqueuelen(q);
            peer_msg = peer_msg.txqueuelen(q);
        }
        if let Some(mac) = settings.host_mac {
            host_msg = host_msg.address(mac.0.to_vec());
        }
        if let Some(mac) = settings.peer_mac {
            peer_msg = peer_msg.address(mac.0.to_vec());
        }
        let host_msg = host_msg
            .set_info_data(InfoData::Veth(InfoVeth::Peer(peer_msg.build())))
            .build();
        self.handle
            .link()
            .add(host_msg)
            .execute()
            .await
            .map_err(|e| self.fail(Step::CreateVeth, host, e))
    }

    /// Send a `RTM_SETLINK` built on the link's index.
    pub(crate) async fn set(
        &self,
        index: u32,
        name: &str,
        step: Step,
        build: impl FnOnce(LinkMessageBuilder<LinkUnspec>) -> LinkMessageBuilder<LinkUnspec>,
    ) -> Result<(), Error> {
        let msg = build(LinkUnspec::new_with_index(index)).build();
        self.handle
            .link()
            .set(msg)
            .execute()
            .await
            .map_err(|e| self.fail(step, name, e))
    }

    /// `ip link del NAME`; `Ok(false)` when it did not exist.
    pub(crate) async fn delete(&self, name: &str) -> Result<bool, Error> {
        let Some(link) = self.find(name).await? else {
            return Ok(false);
        };
        match self.handle.link().del(link.index).execute().await {
            Ok(()) => Ok(true),
            // Gone in between (its peer was deleted): the goal is reached.
            Err(e) if is_errno(&e, Errno::ENODEV) => Ok(false),
            Err(e) => Err(self.fail(Step::DeleteLink, name, e)),
        }
    }

    /// `ip addr add ADDR dev IF [nodad]`.
    pub(crate) async fn add_address(
        &self,
        index: u32,
        name: &str,
        addr: IpNet,
        nodad: bool,
    ) -> Result<(), Error> {
        let mut req = self
            .handle
            .address()
            .add(index, addr.addr(), addr.prefix_len())
            .replace();
        if nodad && addr.addr().is_ipv6() {
            req.message_mut()
                .attributes
                .push(AddressAttribute::Flags(AddressFlags::Nodad));
        }
        req.execute()
            .await
            .map_err(|e| self.fail(Step::AddAddress, &format!("{name} ({addr})"), e))
    }

    /// All addresses on link `index`.
    pub(crate) async fn addresses(
        &self,
        index: u32,
        name: &str,
    ) -> Result<Vec<AddressMessage>, Error> {
        self.handle
            .address()
            .get()
            .set_link_index_filter(index)
            .execute()
            .try_collect()
            .await
            .map_err(|e| self.fail(Step::ReadBack, name, e))
    }

    /// `ip route add ...` with a prepared message.
    pub(crate) async fn add_route(
        &self,
        msg: RouteMessage,
        name: &str,
        what: &str,
    ) -> Result<(), Error> {
        self.handle
            .route()
            .add(msg)
            .replace()
            .execute()
            .await
            .map_err(|e| self.fail(Step::AddRoute, &format!("{name} ({what})"), e))
    }

    /// All routes of one family, every table.
    pub(crate) async fn routes(
        &self,
        family: IpAddr,
        name: &str,
    ) -> Result<Vec<RouteMessage>, Error> {
        let query = match family {
            IpAddr::V4(_) => rtnetlink::RouteMessageBuilder::<std::net::Ipv4Addr>::new().build(),
            IpAddr::V6(_) => rtnetlink::RouteMessageBuilder::<std::net::Ipv6Addr>::new().build(),
        };
        self.handle
            .route()
            .get(query)
            .execute()
            .try_collect()
            .await
            .map_err(|e| self.fail(Step::ReadBack, name, e))
    }
}

/// Link attributes applied when the pair is created.
#[derive(Debug, Clone, Default)]
pub(crate) struct VethSettings {
    pub(crate) mtu: Option<u32>,
    pub(crate) txqueuelen: Option<u32>,
    pub(crate) host_mac: Option<MacAddr>,
    pub(crate) peer_mac: Option<MacAddr>,
}
