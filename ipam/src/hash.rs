//! The hasher for the maps on the allocation path: foldhash's fast hasher.
//!
//! std's SipHash costs more than the rest of an allocation put together
//! (owner keys are short strings hashed on every call). foldhash hashes a
//! pod name with one or two folded multiplies and is seeded per map from a
//! random source, so colliding pod names cannot be computed offline. It is
//! not a cryptographic hash; owner names come from cluster users, who can
//! already create pods at will.

use std::hash::{BuildHasher, Hasher};

/// Builds foldhash hashers from a per-map random seed, plus string hashing
/// without the separator byte std's `Hasher::write_str` adds.
#[derive(Debug, Clone, Default)]
pub(crate) struct FastBuildHasher(foldhash::fast::RandomState);

impl BuildHasher for FastBuildHasher {
    type Hasher = foldhash::fast::FoldHasher<'static>;

    #[inline]
    fn build_hasher(&self) -> Self::Hasher {
        self.0.build_hasher()
    }
}

impl FastBuildHasher {
    /// Hash of a string; unlike `hash_one` of a `str`, it inlines whole (std's
    /// `Hasher::write_str`, which adds a separator byte, cannot be overridden on
    /// stable Rust).
    #[inline]
    pub(crate) fn hash_str(&self, a: &str) -> u64 {
        let mut h = self.build_hasher();
        h.write(a.as_bytes());
        h.finish()
    }

    /// Hash of two strings in turn (see [`FastBuildHasher::hash_str`]).
    /// The first one's length goes in between, so `("ab", "c")` and
    /// `("a", "bc")` differ.
    #[inline]
    pub(crate) fn hash_str_pair(&self, a: &str, b: &str) -> u64 {
        let mut h = self.build_hasher();
        h.write(a.as_bytes());
        h.write_usize(a.len());
        h.write(b.as_bytes());
        h.finish()
    }
}

/// A `HashMap` with [`FastBuildHasher`].
pub(crate) type FastHashMap<K, V> = std::collections::HashMap<K, V, FastBuildHasher>;

/// A `HashSet` with [`FastBuildHasher`].
pub(crate) type FastHashSet<K> = std::collections::HashSet<K, FastBuildHasher>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn hash_of(b: &FastBuildHasher, v: impl Hash) -> u64 {
        b.hash_one(v)
    }

    #[test]
    fn distinguishes_short_and_padded_keys() {
        let b = FastBuildHasher::default();
        assert_ne!(
            hash_of(&b, [1u8].as_slice()),
            hash_of(&b, [1u8, 0].as_slice())
        );
        assert_ne!(hash_of(&b, "default/a"), hash_of(&b, "default/b"));
        assert_eq!(hash_of(&b, "default/a"), hash_of(&b, "default/a"));
    }

    #[test]
    fn every_byte_and_the_length_count() {
        let b = FastBuildHasher::default();
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
        let b = FastBuildHasher::default();
        assert_ne!(b.hash_str_pair("ab", "c"), b.hash_str_pair("a", "bc"));
        assert_ne!(b.hash_str_pair("", "ab"), b.hash_str_pair("ab", ""));
        assert_eq!(
            b.hash_str_pair("ns/p", "ovn"),
            b.hash_str_pair("ns/p", "ovn")
        );
    }

    #[test]
    fn low_bits_spread_over_similar_names() {
        let b = FastBuildHasher::default();
        let buckets: std::collections::HashSet<u64> = (0..4096)
            .map(|i| hash_of(&b, format!("ns-{}/pod-{i}", i % 100)) & 0xfff)
            .collect();
        // A uniform hash fills about 63% of 4096 buckets with 4096 keys.
        assert!(buckets.len() > 2000, "only {} buckets used", buckets.len());
    }
}
