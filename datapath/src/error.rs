//! Errors: every failure names the step, the interface and the namespace.
//!
//! A CNI runtime shows our error text to a human who has to find out which
//! of a dozen netlink calls went wrong, on which device, in which of many
//! pod namespaces. So the main variant, [`Error::Step`], always carries all
//! three plus the kernel's own answer (`errno`), and callers can match on
//! [`Step`] and [`Error::errno`] instead of parsing text.

use std::fmt;
use std::net::IpAddr;

use nix::errno::Errno;

use crate::MacAddr;

/// A stage of setting up, checking or removing a pod interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Step {
    /// Opening the namespace file (`/var/run/netns/NAME`, `/proc/PID/ns/net`).
    OpenNamespace,
    /// Entering the namespace with `setns(2)`.
    EnterNamespace,
    /// Opening a route netlink socket.
    OpenNetlink,
    /// `ip link add H type veth peer name C`.
    CreateVeth,
    /// Looking a link up by name.
    FindLink,
    /// `ip link set H master BR`.
    AttachToBridge,
    /// `ip link set C netns NS`.
    MoveToNamespace,
    /// `ip link set C name eth0`.
    RenameLink,
    /// `ip link set X up` / MTU / MAC / txqueuelen.
    SetLink,
    /// Writing `/proc/sys/net/...` inside the namespace.
    Sysctl,
    /// `ip addr add`.
    AddAddress,
    /// ARP probe / gratuitous ARP for IPv4 addresses.
    Ipv4Dad,
    /// Waiting for IPv6 duplicate address detection to finish.
    Ipv6Dad,
    /// `ip route add`.
    AddRoute,
    /// `ethtool -K IF tx off`.
    DisableTxChecksum,
    /// Resolving the gateway's MAC address.
    GatewayCheck,
    /// Reading links, addresses and routes back.
    ReadBack,
    /// `ip link del H`.
    DeleteLink,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Step::OpenNamespace => "open network namespace",
            Step::EnterNamespace => "enter network namespace",
            Step::OpenNetlink => "open netlink socket",
            Step::CreateVeth => "create veth pair",
            Step::FindLink => "find link",
            Step::AttachToBridge => "attach link to bridge",
            Step::MoveToNamespace => "move link to namespace",
            Step::RenameLink => "rename link",
            Step::SetLink => "set link attributes",
            Step::Sysctl => "write sysctl",
            Step::AddAddress => "add address",
            Step::Ipv4Dad => "IPv4 duplicate address detection",
            Step::Ipv6Dad => "IPv6 duplicate address detection",
            Step::AddRoute => "add route",
            Step::DisableTxChecksum => "disable tx checksum offload",
            Step::GatewayCheck => "gateway check",
            Step::ReadBack => "read back configuration",
            Step::DeleteLink => "delete link",
        };
        f.write_str(text)
    }
}

/// What the kernel (or the OS) answered when a step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Cause {
    /// A netlink request was refused with this errno.
    #[error("kernel said: {errno} ({})", errno.desc())]
    Kernel {
        /// The errno from the netlink error message.
        errno: Errno,
    },
    /// The netlink layer failed without an errno (decode error, closed socket).
    #[error("netlink: {0}")]
    Netlink(String),
    /// A system call or file operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Something we expected to find was not there.
    #[error("{0} not found")]
    Missing(String),
}

impl From<rtnetlink::Error> for Cause {
    fn from(err: rtnetlink::Error) -> Self {
        match err {
            rtnetlink::Error::NetlinkError(msg) if msg.raw_code() != 0 => Cause::Kernel {
                errno: Errno::from_raw(msg.raw_code().abs()),
            },
            other => Cause::Netlink(other.to_string()),
        }
    }
}

impl From<Errno> for Cause {
    fn from(errno: Errno) -> Self {
        Cause::Kernel { errno }
    }
}

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The request itself is invalid; nothing was touched.
    #[error("invalid pod interface spec: {0}")]
    InvalidSpec(#[from] SpecError),
    /// A step failed; anything created before it has been removed again.
    #[error("{step} failed for interface {interface} in namespace {namespace}: {cause}")]
    Step {
        /// Which step.
        step: Step,
        /// Interface the step worked on.
        interface: String,
        /// `host` or the namespace path.
        namespace: String,
        /// The kernel's or OS's answer.
        #[source]
        cause: Cause,
    },
    /// Another host on the link answered for an address we wanted to use.
    #[error(
        "address {address} on {interface} in namespace {namespace} is already used by {owner}"
    )]
    AddressConflict {
        /// The address in conflict.
        address: IpAddr,
        /// Our interface.
        interface: String,
        /// The namespace path.
        namespace: String,
        /// MAC address of the other host.
        owner: MacAddr,
    },
    /// The gateway did not answer ARP / neighbour solicitation in time.
    #[error("gateway {gateway} did not answer on {interface} in namespace {namespace} after {attempts} attempts")]
    GatewayUnreachable {
        /// The gateway address.
        gateway: IpAddr,
        /// Interface we asked on.
        interface: String,
        /// The namespace path.
        namespace: String,
        /// How many requests were sent.
        attempts: u32,
    },
    /// CNI DEL went on after a failure and still failed somewhere: every
    /// failure, in the order the steps ran. What could be removed was.
    #[error("teardown of {interface} failed: {}", list(errors))]
    Teardown {
        /// The host end the teardown was for.
        interface: String,
        /// Each failed step's error (at least one).
        errors: Vec<Error>,
    },
    /// The thread that worked inside the namespace panicked; it has exited.
    #[error("namespace worker thread for {namespace} panicked")]
    WorkerPanicked {
        /// The namespace path.
        namespace: String,
    },
}

fn list(errors: &[Error]) -> String {
    let texts: Vec<String> = errors.iter().map(Error::to_string).collect();
    texts.join("; ")
}

impl Error {
    pub(crate) fn step(
        step: Step,
        interface: impl Into<String>,
        namespace: impl fmt::Display,
        cause: impl Into<Cause>,
    ) -> Self {
        Error::Step {
            step,
            interface: interface.into(),
            namespace: namespace.to_string(),
            cause: cause.into(),
        }
    }

    /// The step that failed, for [`Error::Step`] (the first one for
    /// [`Error::Teardown`]).
    pub fn failed_step(&self) -> Option<Step> {
        match self {
            Error::Step { step, .. } => Some(*step),
            Error::Teardown { errors, .. } => errors.first().and_then(Error::failed_step),
            _ => None,
        }
    }

    /// The kernel's errno, when a netlink request or system call was refused
    /// (the first failure's for [`Error::Teardown`]).
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Teardown { errors, .. } => errors.first().and_then(Error::errno),
            Error::Step {
                cause: Cause::Kernel { errno },
                ..
            } => Some(*errno),
            Error::Step {
                cause: Cause::Io(io),
                ..
            } => io.raw_os_error().map(Errno::from_raw),
            _ => None,
        }
    }
}

/// Why a [`crate::PodInterface`] was rejected before touching the system.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// Interface names are 1..=15 bytes without `/`, `:` or whitespace.
    #[error("interface name {0:?} is invalid (1 to 15 bytes, no '/', ':' or whitespace)")]
    InterfaceName(String),
    /// The container id is empty or has characters not allowed in names.
    #[error("container id {0:?} is invalid")]
    ContainerId(String),
    /// MTU outside 68..=65535.
    #[error("MTU {0} is out of range 68..=65535")]
    Mtu(u32),
    /// A MAC address that is multicast or all zero cannot be a NIC's address.
    #[error("MAC address {0} is not a unicast address")]
    Mac(MacAddr),
    /// A MAC address string did not parse.
    #[error("MAC address {0:?} does not parse (want aa:bb:cc:dd:ee:ff)")]
    MacSyntax(String),
    /// Two gateways of one family.
    #[error("more than one default gateway for the IPv{0} family")]
    DuplicateGateway(u8),
    /// A gateway whose family has no address on the interface.
    #[error("gateway {0} has no address of its family on the interface")]
    GatewayWithoutAddress(IpAddr),
    /// A route whose gateway is of another family than its destination.
    #[error("route to {destination} has a gateway {gateway} of another family")]
    RouteFamilyMismatch {
        /// The destination prefix.
        destination: String,
        /// The gateway.
        gateway: IpAddr,
    },
    /// Sysctl names are dotted paths below `net.`, without `..` or `/`.
    #[error("sysctl {0:?} is not allowed (must be below net., no '/' or '..')")]
    Sysctl(String),
    /// The namespace path is empty or relative.
    #[error("namespace path {0:?} must be absolute")]
    NamespacePath(String),
    /// An IPv6 address asked for on an interface without a link-local address
    /// (neighbour discovery and router solicitations need one).
    #[error("IPv6 address {0} on an interface without an IPv6 link-local address")]
    Ipv6WithoutLinkLocal(ipnet::IpNet),
}
