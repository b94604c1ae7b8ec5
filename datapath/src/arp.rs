//! ARP for Ethernet/IPv4 (RFC 826), the 28-byte payload only: the packet
//! socket we send it on (`AF_PACKET`, `SOCK_DGRAM`) adds and strips the
//! Ethernet header itself.
//!
//! ```text
//!  0      2      4    5    6      8          14         18         24         28
//!  +------+------+----+----+------+----------+----------+----------+----------+
//!  | htype| ptype|hlen|plen|  op  | sender hw| sender ip| target hw| target ip|
//!  |   1  |0x0800|  6 |  4 | 1/2  |  6 bytes |  4 bytes |  6 bytes |  4 bytes |
//!  +------+------+----+----+------+----------+----------+----------+----------+
//! ```
//!
//! Three shapes matter for a pod interface:
//! * request: "who has `target_ip`, tell `sender_ip`" (gateway resolution);
//! * probe (RFC 5227): a request with sender IP 0.0.0.0, asking whether
//!   anyone already owns an address we are about to use;
//! * gratuitous ARP / announcement: a request with sender IP = target IP =
//!   our address, so neighbours refresh their caches.

use std::net::Ipv4Addr;

use crate::MacAddr;

/// Length of an Ethernet/IPv4 ARP payload.
pub const ARP_LEN: usize = 28;

/// ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpOp {
    /// 1: request.
    Request,
    /// 2: reply.
    Reply,
    /// Any other value.
    Other(u16),
}

impl From<u16> for ArpOp {
    fn from(v: u16) -> Self {
        match v {
            1 => ArpOp::Request,
            2 => ArpOp::Reply,
            other => ArpOp::Other(other),
        }
    }
}

impl From<ArpOp> for u16 {
    fn from(op: ArpOp) -> u16 {
        match op {
            ArpOp::Request => 1,
            ArpOp::Reply => 2,
            ArpOp::Other(v) => v,
        }
    }
}

/// A parsed Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpPacket {
    /// Request or reply.
    pub op: ArpOp,
    /// Sender hardware address.
    pub sender_mac: MacAddr,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (zero in requests).
    pub target_mac: MacAddr,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

impl ArpPacket {
    /// "Who has `target`? Tell `sender_ip`."
    pub fn request(sender_mac: MacAddr, sender_ip: Ipv4Addr, target: Ipv4Addr) -> Self {
        ArpPacket {
            op: ArpOp::Request,
            sender_mac,
            sender_ip,
            target_mac: MacAddr([0; 6]),
            target_ip: target,
        }
    }

    /// RFC 5227 probe for `candidate`.
    pub fn probe(sender_mac: MacAddr, candidate: Ipv4Addr) -> Self {
        Self::request(sender_mac, Ipv4Addr::UNSPECIFIED, candidate)
    }

    /// Gratuitous ARP announcing `ours`.
    pub fn announce(sender_mac: MacAddr, ours: Ipv4Addr) -> Self {
        Self::request(sender_mac, ours, ours)
    }

    /// Parse; `None` unless it is Ethernet (1) / IPv4 (0x0800) / 6 / 4.
    pub fn parse(buf: &[u8]) -> Option<Self> {
        if buf.len() < ARP_LEN || buf[0..6] != [0, 1, 0x08, 0x00, 6, 4] {
            return None;
        }
        let ip = |at: usize| Ipv4Addr::new(buf[at], buf[at + 1], buf[at + 2], buf[at + 3]);
        Some(ArpPacket {
            op: ArpOp::from(u16::from_be_bytes([buf[6], buf[7]])),
            sender_mac: MacAddr::from_slice(&buf[8..14])?,
            sender_ip: ip(14),
            target_mac: MacAddr::from_slice(&buf[18..24])?,
            target_ip: ip(24),
        })
    }

    /// Serialize.
    pub fn emit(&self) -> [u8; ARP_LEN] {
        let mut out = [0u8; ARP_LEN];
        out[0..6].copy_from_slice(&[0, 1, 0x08, 0x00, 6, 4]);
        out[6..8].copy_from_slice(&u16::from(self.op).to_be_bytes());
        out[8..14].copy_from_slice(&self.sender_mac.0);
        out[14..18].copy_from_slice(&self.sender_ip.octets());
        out[18..24].copy_from_slice(&self.target_mac.0);
        out[24..28].copy_from_slice(&self.target_ip.octets());
        out
    }

    /// Does this packet show someone other than `our_mac` using `ip`?
    /// Both a reply from the owner and the owner's own probe/announce count.
    pub fn claims(&self, ip: Ipv4Addr, our_mac: MacAddr) -> bool {
        self.sender_mac != our_mac
            && (self.sender_ip == ip
                || (self.op == ArpOp::Request
                    && self.sender_ip.is_unspecified()
                    && self.target_ip == ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAC: MacAddr = MacAddr([0x0a, 0x58, 0x0a, 0x10, 0x00, 0x05]);

    #[test]
    fn probe_bytes() {
        let bytes = ArpPacket::probe(MAC, Ipv4Addr::new(10, 16, 0, 5)).emit();
        #[rustfmt::skip]
        let want = [
            0x00, 0x01,             // htype: Ethernet
            0x08, 0x00,             // ptype: IPv4
            6, 4,                   // hlen, plen
            0x00, 0x01,             // op: request
            0x0a, 0x58, 0x0a, 0x10, 0x00, 0x05, // sender mac
            0, 0, 0, 0,             // sender ip: unspecified (probe)
            0, 0, 0, 0, 0, 0,       // target mac: unknown
            10, 16, 0, 5,           // target ip: the candidate
        ];
        assert_eq!(bytes, want);
        assert_eq!(
            ArpPacket::parse(&bytes),
            Some(ArpPacket::probe(MAC, Ipv4Addr::new(10, 16, 0, 5)))
        );
    }

    #[test]
    fn reply_round_trip_and_claims() {
        let other = MacAddr([2, 0, 0, 0, 0, 1]);
        let reply = ArpPacket {
            op: ArpOp::Reply,
            sender_mac: other,
            sender_ip: Ipv4Addr::new(10, 0, 0, 1),
            target_mac: MAC,
            target_ip: Ipv4Addr::new(10, 0, 0, 2),
        };
        let parsed = ArpPacket::parse(&reply.emit()).unwrap();
        assert_eq!(parsed, reply);
        assert!(parsed.claims(Ipv4Addr::new(10, 0, 0, 1), MAC));
        assert!(!parsed.claims(Ipv4Addr::new(10, 0, 0, 1), other));
        assert!(!parsed.claims(Ipv4Addr::new(10, 0, 0, 2), MAC));
    }

    #[test]
    fn rejects_short_and_foreign() {
        let bytes = ArpPacket::announce(MAC, Ipv4Addr::new(1, 2, 3, 4)).emit();
        assert_eq!(ArpPacket::parse(&bytes[..27]), None);
        let mut ipv6ish = bytes;
        ipv6ish[2] = 0x86;
        assert_eq!(ArpPacket::parse(&ipv6ish), None);
        let mut odd_op = bytes;
        odd_op[7] = 9;
        assert_eq!(ArpPacket::parse(&odd_op).unwrap().op, ArpOp::Other(9));
    }
}
