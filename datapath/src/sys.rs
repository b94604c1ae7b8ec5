//! The only module with `unsafe`: raw system calls that neither `std` nor
//! `nix` wrap safely.
//!
//! * An `AF_PACKET` / `SOCK_DGRAM` socket for ARP. Binding and sending need a
//!   `sockaddr_ll`, for which nix 0.31 has no safe constructor.
//! * The `SIOCETHTOOL` ioctl with `ETHTOOL_GTXCSUM` / `ETHTOOL_STXCSUM`,
//!   which passes a pointer to a `struct ethtool_value` inside `struct ifreq`.
//!
//! Every `unsafe` block is a single libc call on buffers owned by the
//! enclosing function, with the sizes the kernel expects.
#![allow(unsafe_code)]

use std::io;
use std::net::UdpSocket;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use crate::MacAddr;

/// `ETH_P_ARP` in network byte order, as `sll_protocol` wants it.
fn arp_protocol_be() -> u16 {
    (libc::ETH_P_ARP as u16).to_be()
}

fn sockaddr_ll(ifindex: u32, dest: Option<MacAddr>) -> libc::sockaddr_ll {
    let mut addr = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as u16,
        sll_protocol: arp_protocol_be(),
        sll_ifindex: ifindex as i32,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    if let Some(mac) = dest {
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&mac.0);
    }
    addr
}

/// A packet socket bound to one interface that sends and receives ARP
/// payloads (the kernel adds/strips the Ethernet header). It lives in the
/// network namespace of the thread that opened it.
///
/// Closing a packet socket waits for an RCU grace period (`packet_release` calls
/// `synchronize_net`): 10-30 ms on a busy machine. The last close is done on a thread
/// of its own so ADD does not wait for it.
#[derive(Debug)]
pub(crate) struct ArpSocket {
    /// Always `Some` until dropped.
    fd: Option<OwnedFd>,
    ifindex: u32,
}

impl Drop for ArpSocket {
    fn drop(&mut self) {
        let Some(fd) = self.fd.take() else { return };
        let closer = std::thread::Builder::new().name("arp-close".into());
        // if no thread can be started the closure (and the fd) is dropped right here
        let _ = closer.spawn(move || drop(fd));
    }
}

impl ArpSocket {
    pub(crate) fn open(ifindex: u32) -> io::Result<Self> {
        // Protocol 0 here, ETH_P_ARP at bind: a socket created with a protocol is
        // already hooked in, and binding it to an interface unhooks it first with an
        // RCU wait (`synchronize_net`), 10-30 ms on a busy machine.
        // SAFETY: plain socket(2) call; the returned fd is checked and owned.
        let raw =
            unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh, valid descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let addr = sockaddr_ll(ifindex, None);
        // SAFETY: `addr` is a fully initialised sockaddr_ll and we pass its size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(ArpSocket {
            fd: Some(fd),
            ifindex,
        })
    }

    fn fd(&self) -> &OwnedFd {
        self.fd.as_ref().expect("ArpSocket used after drop")
    }

    /// Send one ARP payload to `dest` (usually broadcast).
    pub(crate) fn send(&self, payload: &[u8], dest: MacAddr) -> io::Result<()> {
        let addr = sockaddr_ll(self.ifindex, Some(dest));
        // SAFETY: `payload` and `addr` are valid for the lengths passed.
        let rc = unsafe {
            libc::sendto(
                self.fd().as_raw_fd(),
                payload.as_ptr().cast(),
                payload.len(),
                0,
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Receive one payload, waiting at most `timeout`; `Ok(None)` on timeout.
    pub(crate) fn recv(&self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        let millis = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
        let mut fds = [PollFd::new(self.fd().as_fd(), PollFlags::POLLIN)];
        let ready = poll(&mut fds, PollTimeout::from(millis)).map_err(io::Error::from)?;
        if ready == 0 {
            return Ok(None);
        }
        let n = nix::sys::socket::recv(
            self.fd().as_raw_fd(),
            buf,
            nix::sys::socket::MsgFlags::MSG_DONTWAIT,
        );
        match n {
            Ok(n) => Ok(Some(n)),
            Err(nix::errno::Errno::EAGAIN) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

/// `struct ethtool_value` from `<linux/ethtool.h>`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_STXCSUM: u32 = 0x17;

fn ethtool_value(ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    // Any socket in the current namespace serves as the ioctl handle.
    let sock = UdpSocket::bind("0.0.0.0:0").or_else(|_| UdpSocket::bind("[::]:0"))?;
    let mut value = EthtoolValue { cmd, data };
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req
        .ifr_name
        .iter_mut()
        .zip(ifname.bytes().take(libc::IFNAMSIZ - 1))
    {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
    // SAFETY: `req` points at `value`, both live until the call returns.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL as _, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(value.data)
}

/// `ethtool -K IF tx on|off` in the calling thread's namespace.
pub(crate) fn set_tx_checksum(ifname: &str, on: bool) -> io::Result<()> {
    ethtool_value(ifname, ETHTOOL_STXCSUM, u32::from(on)).map(drop)
}

/// Is TX checksumming on? (`ethtool -k IF`, `tx-checksumming`).
pub(crate) fn tx_checksum(ifname: &str) -> io::Result<bool> {
    ethtool_value(ifname, ETHTOOL_GTXCSUM, 0).map(|v| v != 0)
}
