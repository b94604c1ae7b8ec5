//! A fast hasher for the maps on the allocation path.
//!
//! std's SipHash costs more than the rest of an allocation put together
//! (owner keys are short strings hashed on every call). Integers go through
//! the multiply-rotate scheme rustc uses (FxHash); byte strings through a
//! folded 64x64->128 multiply per 16 bytes (as foldhash and wyhash do), so a
//! pod name costs one or two multiplies instead of one per 8 bytes. Seeded
//! per map builder from std's random keys so that colliding pod names
//! cannot be computed offline. It is not a cryptographic hash; owner names
//! come from cluster users, who can already create pods at will.

use std::hash::{BuildHasher, Hasher};

const MULTIPLIER: u64 = 0x51_7c_c1_b7_27_22_0a_95;
/// Odd constants (digits of pi) keeping the two multiply operands apart.
const K1: u64 = 0x243f_6a88_85a3_08d3;
const K2: u64 = 0x1319_8a2e_0370_7344;

/// The full 128-bit product of `a` and `b`, folded to 64 bits.
#[inline]
fn folded_multiply(a: u64, b: u64) -> u64 {
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

#[inline]
fn read_u64(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(word)
}

#[inline]
fn read_u32(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[..4]);
    u64::from(u32::from_le_bytes(word))
}

/// Two words covering every byte of a 1..=16-byte input (overlapping
/// reads; the caller mixes in the length).
#[inline]
fn read_small(bytes: &[u8]) -> (u64, u64) {
    let len = bytes.len();
    if len >= 8 {
        (read_u64(bytes), read_u64(&bytes[len - 8..]))
    } else if len >= 4 {
        (read_u32(bytes), read_u32(&bytes[len - 4..]))
    } else if len > 0 {
        let (a, b, c) = (bytes[0], bytes[len / 2], bytes[len - 1]);
        (u64::from(a) << 16 | u64::from(b) << 8 | u64::from(c), 0)
    } else {
        (0, 0)
    }
}

/// Builds [`FxHasher`]s starting from a random seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FxBuildHasher {
    seed: u64,
}

impl Default for FxBuildHasher {
    fn default() -> FxBuildHasher {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x6970_616d);
        FxBuildHasher { seed: h.finish() }
    }
}

impl BuildHasher for FxBuildHasher {
    type Hasher = FxHasher;

    fn build_hasher(&self) -> FxHasher {
        FxHasher { hash: self.seed }
    }
}

impl FxBuildHasher {
    /// Hash of a string; unlike `hash_one` of a `str`, it inlines whole (std's `Hasher::write_str`, which adds a separator
    /// byte, cannot be overridden on stable Rust).
    #[inline]
    pub(crate) fn hash_str(&self, a: &str) -> u64 {
        let mut h = self.build_hasher();
        h.write(a.as_bytes());
        h.finish()
    }

    /// Hash of two strings in turn (see [`FxBuildHasher::hash_str`]).
    /// Each `write` mixes in its length, so `("ab", "c")` and `("a", "bc")`
    /// differ.
    #[inline]
    pub(crate) fn hash_str_pair(&self, a: &str, b: &str) -> u64 {
        let mut h = self.build_hasher();
        h.write(a.as_bytes());
        h.write(b.as_bytes());
        h.finish()
    }
}

/// FxHash state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut state = self.hash;
        let mut rest = bytes;
        while rest.len() > 16 {
            state = folded_multiply(read_u64(rest) ^ state, read_u64(&rest[8..]) ^ K1);
            rest = &rest[16..];
        }
        let (a, b) = read_small(rest);
        // The length tells "a" from "a\0" (the short reads overlap or pad).
        self.hash = folded_multiply(a ^ state ^ K1, b ^ K2 ^ bytes.len() as u64);
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.hash = folded_multiply((i as u64) ^ self.hash ^ K1, ((i >> 64) as u64) ^ K2 ^ 16);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// The multiply leaves the low bits weak, and hashbrown picks buckets
    /// by the low bits: without this finaliser (murmur3's fmix64 half)
    /// similar pod names pile into a few buckets.
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

/// A `HashMap` with [`FxBuildHasher`].
pub(crate) type FxHashMap<K, V> = std::collections::HashMap<K, V, FxBuildHasher>;

/// A `HashSet` with [`FxBuildHasher`].
pub(crate) type FxHashSet<K> = std::collections::HashSet<K, FxBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn hash_of(b: &FxBuildHasher, v: impl Hash) -> u64 {
        b.hash_one(v)
    }

    #[test]
    fn distinguishes_short_and_padded_keys() {
        let b = FxBuildHasher::default();
        assert_ne!(
            hash_of(&b, [1u8].as_slice()),
            hash_of(&b, [1u8, 0].as_slice())
        );
        assert_ne!(hash_of(&b, "default/a"), hash_of(&b, "default/b"));
        assert_eq!(hash_of(&b, "default/a"), hash_of(&b, "default/a"));
    }

    #[test]
    fn every_byte_and_the_length_count() {
        let b = FxBuildHasher::default();
        let base: Vec<u8> = (0u8..40).map(|i| i.wrapping_mul(37)).collect();
        let mut seen = std::collections::HashSet::new();
        for len in 0..=base.len() {
            let text = &base[..len];
            assert!(seen.insert(hash_of(&b, text)), "length {len} collides");
            for i in 0..len {
                let mut flipped = text.to_vec();
                flipped[i] ^= 0x10;
                assert_ne!(
                    hash_of(&b, text),
                    hash_of(&b, &flipped),
                    "byte {i} of {len}"
                );
            }
        }
    }

    #[test]
    fn string_pairs_split_differently_hash_differently() {
        let b = FxBuildHasher::default();
        assert_ne!(b.hash_str_pair("ab", "c"), b.hash_str_pair("a", "bc"));
        assert_ne!(b.hash_str_pair("", "ab"), b.hash_str_pair("ab", ""));
        assert_eq!(
            b.hash_str_pair("ns/p", "ovn"),
            b.hash_str_pair("ns/p", "ovn")
        );
    }

    #[test]
    fn low_bits_spread_over_similar_names() {
        let b = FxBuildHasher::default();
        let buckets: std::collections::HashSet<u64> = (0..4096)
            .map(|i| hash_of(&b, format!("ns-{}/pod-{i}", i % 100)) & 0xfff)
            .collect();
        // A uniform hash fills about 63% of 4096 buckets with 4096 keys.
        assert!(buckets.len() > 2000, "only {} buckets used", buckets.len());
    }
}
