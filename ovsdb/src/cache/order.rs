//! The row order of OVS's C IDL, which `ovn-nbctl`/`ovs-vsctl` `list`, `find` and `show`
//! print in: the [`Store`](super::Store) keeps rows sorted by uuid, so a tool that must
//! print byte for byte like the C tools asks this module for the order instead.
//!
//! The C IDL's row table is an OVS `hmap` keyed by the first 32 bits of each row's UUID.
//! Its iteration order is bucket order (`hash & mask`, the mask growing with the row
//! count) and, inside a bucket, insertion order reversed at every resize. The IDL inserts
//! rows in the iteration order of the parsed monitor reply, itself an OVS `shash` (an
//! `hmap` keyed by a murmur-style hash of the row's UUID string) filled in the order of
//! the reply's text (which [`TableUpdate::rows`](crate::update::TableUpdate) keeps).
//! [`idl_order`] replays both hash tables; [`hmap_order`] and [`hash_bytes`] serve other
//! OVS hash containers (e.g. an `smap` keyed by `hash_string(key, 0)`).

use crate::value::Uuid;

/// One multiply-rotate round of OVS's `mhash_add()` (lib/hash.h).
fn mhash_add(hash: u32, data: u32) -> u32 {
    let mut hash = hash;
    if data != 0 {
        let data = data
            .wrapping_mul(0xcc9e_2d51)
            .rotate_left(15)
            .wrapping_mul(0x1b87_3593);
        hash ^= data;
    }
    hash.rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

/// OVS's `mhash_finish()` avalanche.
fn mhash_finish(hash: u32) -> u32 {
    let mut hash = hash;
    hash ^= hash >> 16;
    hash = hash.wrapping_mul(0x85eb_ca6b);
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(0xc2b2_ae35);
    hash ^ (hash >> 16)
}

/// OVS's `hash_bytes()` (lib/hash.c), which `shash` uses (via `hash_string`) for names.
pub fn hash_bytes(data: &[u8], basis: u32) -> u32 {
    let mut hash = basis;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        hash = mhash_add(
            hash,
            u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]),
        );
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut tmp = [0u8; 4];
        tmp[..rest.len()].copy_from_slice(rest);
        hash = mhash_add(hash, u32::from_le_bytes(tmp));
    }
    mhash_finish(hash ^ data.len() as u32)
}

/// OVS's `uuid_hash()`: the first 32 bits of the UUID (its first 8 hex digits).
pub fn uuid_hash(uuid: &Uuid) -> u32 {
    let b = uuid.as_bytes();
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// OVS's `calc_mask()`: bucket mask for a given number of nodes.
fn calc_mask(capacity: usize) -> usize {
    let mut mask = capacity / 2;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    mask | ((mask & 1) << 1)
}

/// A replay of an OVS `hmap`: only the order of items matters, so nodes are indexes.
#[derive(Debug)]
struct HmapReplay {
    /// Each bucket lists its nodes head first, as `(hash, item)`.
    buckets: Vec<Vec<(u32, usize)>>,
    mask: usize,
    n: usize,
}

impl HmapReplay {
    fn new() -> Self {
        HmapReplay {
            buckets: vec![Vec::new()],
            mask: 0,
            n: 0,
        }
    }

    /// `hmap_insert()`: push at the bucket head, then grow if over-full.
    fn insert(&mut self, hash: u32, item: usize) {
        self.buckets[hash as usize & self.mask].insert(0, (hash, item));
        self.n += 1;
        if self.n / 2 > self.mask {
            let new_mask = calc_mask(self.n);
            if new_mask > self.mask {
                self.resize(new_mask);
            }
        }
    }

    /// `resize()`: walk old buckets in order, pushing each node at its new bucket's head.
    fn resize(&mut self, new_mask: usize) {
        let mut buckets = vec![Vec::new(); new_mask + 1];
        for bucket in std::mem::take(&mut self.buckets) {
            for (hash, item) in bucket {
                let b: &mut Vec<(u32, usize)> = &mut buckets[hash as usize & new_mask];
                b.insert(0, (hash, item));
            }
        }
        self.buckets = buckets;
        self.mask = new_mask;
    }

    fn order(&self) -> Vec<usize> {
        self.buckets
            .iter()
            .flat_map(|b| b.iter().map(|&(_, i)| i))
            .collect()
    }
}

/// Iteration order of an OVS `hmap` filled with items of the given hashes, in order:
/// indexes into `hashes`.
pub fn hmap_order(hashes: impl IntoIterator<Item = u32>) -> Vec<usize> {
    let mut map = HmapReplay::new();
    for (i, hash) in hashes.into_iter().enumerate() {
        map.insert(hash, i);
    }
    map.order()
}

/// Given row UUIDs in the order they appear in a monitor reply's text, returns the indexes
/// of those rows in the order the C IDL iterates them.
pub fn idl_order(uuids_in_text_order: &[Uuid]) -> Vec<usize> {
    let by_name = hmap_order(
        uuids_in_text_order
            .iter()
            .map(|u| hash_bytes(u.to_string().as_bytes(), 0)),
    );
    let mut rows = HmapReplay::new();
    for i in by_name {
        rows.insert(uuid_hash(&uuids_in_text_order[i]), i);
    }
    rows.order()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uuid(s: &str) -> Uuid {
        s.parse().unwrap()
    }

    #[test]
    fn mask_grows_like_ovs() {
        assert_eq!(calc_mask(2), 3);
        assert_eq!(calc_mask(8), 7);
        assert_eq!(calc_mask(16), 15);
    }

    #[test]
    fn uuid_hash_is_the_first_32_bits() {
        assert_eq!(
            uuid_hash(&uuid("0000abcd-0000-0000-0000-000000000001")),
            0xabcd
        );
    }

    #[test]
    fn bucket_order_follows_low_bits() {
        let uuids = [
            uuid("00000002-0000-0000-0000-000000000000"),
            uuid("00000001-0000-0000-0000-000000000000"),
        ];
        assert_eq!(idl_order(&uuids), vec![1, 0]);
    }

    #[test]
    fn a_resize_reverses_a_bucket() {
        // 4 then 8 share the single bucket (mask 0), 8 at its head; the second insert
        // grows the mask to 3 and the resize walk pushes 8 then 4 at the head of bucket 0,
        // so 4 comes first again; 1 goes to bucket 1, after bucket 0.
        assert_eq!(hmap_order([4, 8, 1]), vec![0, 1, 2]);
        // Without a resize in between, the later insert into a bucket comes first:
        // 4, 8 (resize to mask 3), then 12 and 16 join bucket 0 at its head.
        assert_eq!(hmap_order([4, 8, 12, 16]), vec![3, 2, 0, 1]);
    }
}
