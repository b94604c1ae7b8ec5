//! Load balancer VIPs, key by key: a Service's VIPs are a few keys of a balancer's
//! `vips` map shared with thousands of others, so they are read and written without
//! decoding or rewriting the whole map.
//!
//! Reads go to the replica's raw row (a sorted map: a key is a binary search, the keys
//! with one prefix a contiguous range); writes are one `mutate` per balancer that
//! deletes and inserts only the keys concerned.

use std::collections::BTreeMap;

use ovsdb::typed::{self, RowId, Table};
use ovsdb::{Atom, Map, Row, Value};

use super::NbTxn;
use crate::{LoadBalancer, NbError};

/// The `vips` map of a replicated balancer row, if it has one.
fn vips_of(row: &Row) -> Option<&Map> {
    match row.get("vips")? {
        Value::Map(map) => Some(map),
        _ => None,
    }
}

impl NbTxn<'_> {
    /// The VIPs of balancer `name` whose key starts with `prefix` (e.g. `10.96.0.10:`),
    /// as the replica holds them; empty when the balancer is not replicated yet.
    pub fn lb_vips_with_prefix(
        &self,
        name: &str,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, NbError> {
        let id = self.require::<LoadBalancer>(name)?;
        let Some(row) = self.store.get_raw(id) else {
            return Ok(Vec::new());
        };
        let Some(vips) = vips_of(&row) else {
            return Ok(Vec::new());
        };
        let pairs = vips.as_slice();
        let key_str = |atom: &Atom| atom.as_str().unwrap_or_default().to_string();
        // string keys are sorted, so the keys with `prefix` are one contiguous range
        let start = pairs.partition_point(|(k, _)| k.as_str().is_some_and(|k| k < prefix));
        Ok(pairs[start..]
            .iter()
            .take_while(|(k, _)| k.as_str().is_some_and(|k| k.starts_with(prefix)))
            .map(|(k, v)| (key_str(k), key_str(v)))
            .collect())
    }

    /// Makes balancer `name` map each key of `set` to its value and hold none of the
    /// keys of `remove` (a key in both is set), writing only the keys whose value
    /// differs from the replica: one `mutate` of `vips`, or nothing when every key
    /// already looks right. Returns how many keys it writes or removes.
    pub fn lb_ensure_vips(
        &mut self,
        name: &str,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<usize, NbError> {
        let id: RowId<LoadBalancer> = self.require::<LoadBalancer>(name)?;
        let row = self.store.get_raw(id);
        let current = |key: &str| -> Option<String> {
            let vips = vips_of(row.as_deref()?)?;
            Some(vips.get_str(key)?.as_str()?.to_string())
        };
        let changed: Vec<(String, String)> = set
            .iter()
            .filter(|(k, v)| current(k).as_ref() != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let stale: Vec<String> = remove
            .iter()
            .filter(|k| !set.contains_key(*k) && current(k).is_some())
            .cloned()
            .collect();
        if changed.is_empty() && stale.is_empty() {
            return Ok(0);
        }
        let n = changed.len() + stale.len();
        let mut doomed = stale;
        doomed.extend(changed.iter().map(|(k, _)| k.clone()));
        let mut mutations = vec![LoadBalancer::VIPS.delete_keys(doomed)];
        if !changed.is_empty() {
            self.guard_exists(id);
            mutations.push(LoadBalancer::VIPS.insert(changed));
        }
        self.push(typed::mutate(LoadBalancer::ROW_UUID_COLUMN.eq(id)).with(mutations));
        Ok(n)
    }
}
