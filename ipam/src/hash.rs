//! A fast hasher for the maps on the allocation path.
//!
//! std's SipHash costs more than the rest of an allocation put together
//! (owner keys are short strings hashed several times per call). This is
//! the multiply-rotate scheme rustc uses (FxHash), seeded per map builder
//! from std's random keys so that colliding pod names cannot be computed
//! offline. It is not a cryptographic hash; owner names come from cluster
//! users, who can already create pods at will.

use std::hash::{BuildHasher, Hasher};

const MULTIPLIER: u64 = 0x51_7c_c1_b7_27_22_0a_95;

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
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // Mix in the length so "a" and "a\0" differ.
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
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
    fn low_bits_spread_over_similar_names() {
        let b = FxBuildHasher::default();
        let buckets: std::collections::HashSet<u64> = (0..4096)
            .map(|i| hash_of(&b, format!("ns-{}/pod-{i}", i % 100)) & 0xfff)
            .collect();
        // A uniform hash fills about 63% of 4096 buckets with 4096 keys.
        assert!(buckets.len() > 2000, "only {} buckets used", buckets.len());
    }
}
