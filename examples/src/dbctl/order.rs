//! String-map (`smap`) order as the C tools print it: an OVS `hmap` keyed by
//! `hash_string(key, 0)`, replayed with the `ovsdb` crate's OVS hash-table order (which
//! also gives rows their C IDL order, see [`ovsdb::cache::order`]).

use ovsdb::cache::order::{hash_bytes, hmap_order};

/// Iteration order of an OVS `smap` (string map, an `hmap` keyed by `hash_string(key, 0)`)
/// filled with `keys` in the given order: indexes into `keys`.
pub fn smap_order(keys: &[&str]) -> Vec<usize> {
    hmap_order(keys.iter().map(|k| hash_bytes(k.as_bytes(), 0)))
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
    fn sorted_keeps_duplicate_keys_in_iteration_order() {
        let keys = ["b", "a", "b"];
        let sorted = smap_sorted(&keys);
        let names: Vec<&str> = sorted.iter().map(|&i| keys[i]).collect();
        assert_eq!(names, ["a", "b", "b"]);
        let dups: Vec<usize> = sorted.into_iter().filter(|&i| keys[i] == "b").collect();
        let iter: Vec<usize> = smap_order(&keys)
            .into_iter()
            .filter(|&i| keys[i] == "b")
            .collect();
        assert_eq!(dups, iter);
    }
}
