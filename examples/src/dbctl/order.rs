//! Row order as the C tools print it.
//!
//! `ovn-nbctl list`/`find`/`show` and `ovs-vsctl list` walk the IDL's row table, an OVS
//! `hmap` keyed by the first 32 bits of each row's UUID. That order is not sorted: it is
//! bucket order (`hash & mask`, the mask growing with the row count) and, inside a bucket,
//! the order the rows were inserted, reversed at every resize. The IDL inserts rows in the
//! iteration order of the parsed monitor reply, itself an OVS `shash` (an `hmap` keyed by a
//! murmur-style hash of the row's UUID string) filled in the order of the reply's text.
//! To print rows in the same order we replay both hash tables.

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

/// OVS's `uuid_hash()`: the first 32 bits of the UUID, i.e. its first 8 hex digits.
pub fn uuid_hash(uuid: &str) -> u32 {
    uuid.get(..8)
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .unwrap_or(0)
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

/// Given row UUIDs in the order they appear in a monitor reply's text, returns the indexes
/// of those rows in the order the C IDL iterates them.
pub fn idl_order(uuids_in_text_order: &[&str]) -> Vec<usize> {
    let mut shash = HmapReplay::new();
    for (i, uuid) in uuids_in_text_order.iter().enumerate() {
        shash.insert(hash_bytes(uuid.as_bytes(), 0), i);
    }
    let mut rows = HmapReplay::new();
    for i in shash.order() {
        rows.insert(uuid_hash(uuids_in_text_order[i]), i);
    }
    rows.order()
}

/// Iteration order of an OVS `smap` (string map, an `hmap` keyed by `hash_string(key, 0)`)
/// filled with `keys` in the given order: indexes into `keys`.
pub fn smap_order(keys: &[&str]) -> Vec<usize> {
    let mut map = HmapReplay::new();
    for (i, k) in keys.iter().enumerate() {
        map.insert(hash_bytes(k.as_bytes(), 0), i);
    }
    map.order()
}

/// `smap_sort()`: the smap's nodes sorted by key; equal keys (an smap may hold duplicates)
/// stay in iteration order, as glibc's merge-sorting `qsort()` keeps them.
pub fn smap_sorted(keys: &[&str]) -> Vec<usize> {
    let mut order = smap_order(keys);
    order.sort_by(|&a, &b| keys[a].as_bytes().cmp(keys[b].as_bytes()));
    order
}

/// Values of `(key, value)` entries added to an smap in order, printed in `smap_sort()`
/// order.
pub fn smap_sorted_values(entries: Vec<(String, String)>) -> Vec<String> {
    let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    let order = smap_sorted(&keys);
    order.into_iter().map(|i| entries[i].1.clone()).collect()
}

/// Iteration order (`SMAP_FOR_EACH`) of a string map column as the C IDL builds it: the
/// datum's pairs (sorted by key) added one by one.
pub fn smap_iter_pairs(pairs: Vec<(String, String)>) -> Vec<(String, String)> {
    let keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
    smap_order(&keys)
        .into_iter()
        .map(|i| pairs[i].clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_grows_like_ovs() {
        assert_eq!(calc_mask(2), 3);
        assert_eq!(calc_mask(8), 7);
        assert_eq!(calc_mask(16), 15);
    }

    #[test]
    fn bucket_order_follows_low_bits() {
        let uuids = [
            "00000002-0000-0000-0000-000000000000",
            "00000001-0000-0000-0000-000000000000",
        ];
        let order = idl_order(&uuids);
        assert_eq!(order, vec![1, 0]);
    }
}
