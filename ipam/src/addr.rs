//! Address families, the `u128` encoding of addresses, and MAC addresses.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

use crate::error::AllocError;

/// IP address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpFamily {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl IpFamily {
    /// Both families, in the order Kube-OVN lists them ("v4,v6").
    pub const ALL: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

    /// Index 0 for v4, 1 for v6 (used for per-family arrays).
    pub(crate) fn index(self) -> usize {
        match self {
            IpFamily::V4 => 0,
            IpFamily::V6 => 1,
        }
    }

    /// Family of an address.
    pub fn of(addr: IpAddr) -> IpFamily {
        match addr {
            IpAddr::V4(_) => IpFamily::V4,
            IpAddr::V6(_) => IpFamily::V6,
        }
    }

    /// Address bit width.
    pub fn bits(self) -> u32 {
        match self {
            IpFamily::V4 => 32,
            IpFamily::V6 => 128,
        }
    }

    /// Decodes the `u128` form of an address of this family.
    pub(crate) fn addr(self, value: u128) -> IpAddr {
        match self {
            // Values of the v4 family never exceed u32::MAX by construction.
            IpFamily::V4 => IpAddr::V4(Ipv4Addr::from(value as u32)),
            IpFamily::V6 => IpAddr::V6(Ipv6Addr::from(value)),
        }
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        })
    }
}

/// The `u128` value of an address (IPv4 addresses are their 32-bit value).
pub(crate) fn addr_value(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// A 48-bit Ethernet MAC address, written `aa:bb:cc:dd:ee:ff`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

/// Hashes as one 48-bit integer (the derived impl would hash a length and
/// a byte slice): MACs are looked up on every allocation and release.
impl std::hash::Hash for Mac {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.key());
    }
}

impl Mac {
    /// True for a group (multicast/broadcast) address: bit 0 of the first octet.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// True for a locally administered address: bit 1 of the first octet.
    pub fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }

    /// A locally administered unicast MAC from 48 random bits: the
    /// multicast bit is cleared and the local bit set, as Kube-OVN does.
    #[cfg(test)]
    pub(crate) fn local_unicast(random: u64) -> Mac {
        Mac::from_key(Mac::local_unicast_key(random))
    }

    /// The [`Mac::key`] of [`Mac::local_unicast`]`(random)`, computed
    /// without building the byte array.
    pub(crate) fn local_unicast_key(random: u64) -> u64 {
        // The first octet is bits 40..48: bit 40 is the group bit, 41 the
        // local bit.
        (random & 0xffff_ffff_ffff & !(1 << 40)) | (1 << 41)
    }

    /// The MAC as a 48-bit integer, first octet highest: the form the
    /// IPAM's MAC index keys on (one word to hash and compare).
    pub(crate) fn key(self) -> u64 {
        let [a, b, c, d, e, f] = self.0;
        u64::from_be_bytes([0, 0, a, b, c, d, e, f])
    }

    /// The MAC of a [`Mac::key`].
    pub(crate) fn from_key(key: u64) -> Mac {
        let [_, _, a, b, c, d, e, f] = key.to_be_bytes();
        Mac([a, b, c, d, e, f])
    }

    /// Parses and checks a MAC a NIC can carry (unicast, not all zero).
    pub fn parse_unicast(text: &str) -> Result<Mac, AllocError> {
        let mac: Mac = text.parse()?;
        if mac.is_multicast() || mac.0 == [0; 6] {
            return Err(AllocError::InvalidMac {
                mac: text.to_owned(),
                reason: "not a unicast address",
            });
        }
        Ok(mac)
    }
}

impl FromStr for Mac {
    type Err = AllocError;

    fn from_str(text: &str) -> Result<Mac, AllocError> {
        let bad = |reason| AllocError::InvalidMac {
            mac: text.to_owned(),
            reason,
        };
        let mut out = [0u8; 6];
        let mut parts = text.split([':', '-']);
        for octet in out.iter_mut() {
            let part = parts.next().ok_or_else(|| bad("fewer than 6 octets"))?;
            if part.len() != 2 {
                return Err(bad("octet is not two hex digits"));
            }
            *octet = u8::from_str_radix(part, 16).map_err(|_| bad("octet is not hex"))?;
        }
        if parts.next().is_some() {
            return Err(bad("more than 6 octets"));
        }
        Ok(Mac(out))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mac({self})")
    }
}

impl serde::Serialize for Mac {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Mac {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Mac, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// SplitMix64: a small, fast generator for MAC addresses. MACs only need to
/// be spread out and unique within a subnet (uniqueness is checked), not
/// unpredictable, so a cryptographic generator would only cost time.
#[derive(Debug, Clone)]
pub(crate) struct MacRng(u64);

impl MacRng {
    /// Seeds from std's per-process random hasher keys.
    pub(crate) fn from_entropy() -> MacRng {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x6b75_6265_6f76_6e00);
        MacRng(h.finish())
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_round_trip_and_errors() {
        let mac: Mac = "0A:58:0a:10:00:05".parse().unwrap();
        assert_eq!(mac.to_string(), "0a:58:0a:10:00:05");
        assert!(matches!(
            "0a:58:0a:10:00".parse::<Mac>(),
            Err(AllocError::InvalidMac { mac, .. }) if mac == "0a:58:0a:10:00"
        ));
        assert!("0a:58:0a:10:00:05:06".parse::<Mac>().is_err());
        assert!("0a:58:0a:10:00:zz".parse::<Mac>().is_err());
        assert!(Mac::parse_unicast("01:00:5e:00:00:01").is_err());
        assert!(Mac::parse_unicast("00:00:00:00:00:00").is_err());
    }

    #[test]
    fn generated_macs_are_local_unicast() {
        let mut rng = MacRng::from_entropy();
        for _ in 0..1000 {
            let random = rng.next_u64();
            let mac = Mac::local_unicast(random);
            assert!(mac.is_local() && !mac.is_multicast(), "{mac}");
            assert_eq!(mac.key(), Mac::local_unicast_key(random));
            // The five low octets are the random ones.
            assert_eq!(mac.key() & 0xff_ffff_ffff, random & 0xff_ffff_ffff);
        }
        let all = Mac::local_unicast(u64::MAX);
        assert_eq!(all.to_string(), "fe:ff:ff:ff:ff:ff");
        assert_eq!(Mac::local_unicast(0).to_string(), "02:00:00:00:00:00");
    }

    #[test]
    fn key_round_trips() {
        let mac: Mac = "0a:58:0a:10:00:05".parse().unwrap();
        assert_eq!(mac.key(), 0x0a58_0a10_0005);
        assert_eq!(Mac::from_key(mac.key()), mac);
    }
}
