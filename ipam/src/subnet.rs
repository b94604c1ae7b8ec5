//! One subnet's state: configuration, pools, live allocations and MACs.
//!
//! Per family, every allocatable address is in exactly one pool (the
//! default pool `""` holds what no named pool claims). Each pool keeps two
//! interval sets of free addresses: `fresh` (never handed out since the last
//! reconfiguration) and `released` (given back since). Automatic allocation
//! takes the lowest fresh address and only swaps in the released set when
//! fresh is empty: Kube-OVN's delayed reuse, which keeps a just-deleted
//! pod's address from going straight to a new pod while stale ARP/conntrack
//! entries may still point at it.
//!
//! # Lazy static allocation
//! Carving a requested address out of a fragmented interval set, and
//! putting it back on release, costs several B-tree descents. So a static
//! allocation leaves the free sets alone: its [`Holder`] is marked `parked`
//! (its address may still sit in `fresh` or `released`), and on release the
//! address goes to the pool's `pending` hash set (released, but maybe not
//! yet in `released`) instead of the interval sets. The sets are then
//! supersets of the free space, and every reader corrects for it:
//! * automatic allocation drops, from the front of `fresh`, addresses that
//!   are live or pending (neither is fresh);
//! * once `fresh` runs out, the pending addresses that are not live are
//!   inserted into `released` (`pending` is emptied), and live addresses
//!   are dropped from its front before it is swapped in;
//! * a `pending` set grown past [`pending_fold_at`] is folded into the
//!   interval sets exactly (each address out of `fresh`, into `released`);
//! * usage subtracts the live addresses from `fresh ∪ released ∪ pending`.
//!
//! Invariant: an allocatable address that is neither live nor pending is in
//! exactly one of `fresh` (never used) and `released` (released); a pending
//! address that is not live is released; a live holder not `parked` has
//! its address in neither set.

use std::net::IpAddr;

use crate::addr::{addr_value, IpFamily, MacRng};
use crate::error::{AllocError, SpecError};
use crate::hash::{FastHashMap, FastHashSet};
use crate::owner::{Allocation, ExistingAllocation};
use crate::owner_table::{OwnerTable, Slot};
use crate::range_set::RangeSet;
use crate::report::{InvalidReason, Invalidated, RebuildProblem, RebuildReport, Rejected};
use crate::spec::{FamilyConfig, SubnetConfig};
use crate::usage::{FamilyUsage, Usage};

/// Size beyond which a pool's `pending` set is folded into its interval
/// sets: a constant, or the number of live addresses when larger, so its
/// memory stays within a constant of the live addresses'. Tiny under unit
/// tests, so that folding gets exercised.
fn pending_fold_at(live: usize) -> usize {
    if cfg!(test) {
        2
    } else {
        live.max(1 << 14)
    }
}

/// Who holds a live address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Holder {
    /// The owner's slot in [`Subnet::owners`].
    pub(crate) slot: Slot,
    /// Set for static allocations allowed to use excluded addresses; such an
    /// address stays valid when the exclusions change.
    pub(crate) excluded_ok: bool,
    /// Set for static allocations: the address may still be in the pool's
    /// `fresh` or `released` set (see the module docs), so its release goes
    /// to `pending`. Unset, the address is in neither set.
    pub(crate) parked: bool,
}

/// Free space of one pool in one family.
#[derive(Debug, Clone, Default)]
pub(crate) struct PoolState {
    /// Every allocatable address of the pool, free or not.
    pub(crate) universe: RangeSet,
    pub(crate) fresh: RangeSet,
    pub(crate) released: RangeSet,
    /// Released addresses of parked holders, maybe not (yet) in `released`;
    /// may also hold addresses taken again since (see the module docs).
    pub(crate) pending: FastHashSet<u128>,
}

impl PoolState {
    fn new(universe: RangeSet, using: &RangeSet) -> PoolState {
        let mut fresh = universe.clone();
        fresh.subtract(using);
        PoolState {
            universe,
            fresh,
            released: RangeSet::new(),
            pending: FastHashSet::default(),
        }
    }

    /// The free addresses, given the live ones: `fresh`, `released` and
    /// `pending` without the live addresses.
    fn free(&self, using: &RangeSet) -> RangeSet {
        let mut free = self.fresh.clone();
        free.union_with(&self.released);
        if !self.pending.is_empty() {
            let mut pending: Vec<u128> = self.pending.iter().copied().collect();
            pending.sort_unstable();
            free.union_with(&RangeSet::from_sorted(pending));
        }
        free.subtract(using);
        free
    }
}

/// One family of a subnet.
#[derive(Debug, Clone)]
pub(crate) struct FamilyState {
    pub(crate) cfg: FamilyConfig,
    /// Live addresses. A hash map: allocation and release cost `O(1)`
    /// whatever the number of live addresses; the rare ordered views
    /// (usage, pool rebuilds) sort the keys.
    pub(crate) using: FastHashMap<u128, Holder>,
    /// Indexed like [`Subnet::pool_names`].
    pub(crate) pools: Vec<PoolState>,
    /// Number of `parked` holders in `using`.
    pub(crate) parked: usize,
}

impl FamilyState {
    /// The address [`FamilyState::take_next`] would return. Drops stale
    /// entries (live or pending addresses) from the front of the pool's
    /// sets and, once fresh ones run out, puts the pending addresses in
    /// `released`: neither changes which addresses are free, fresh or
    /// released, so a request failing afterwards changes nothing.
    pub(crate) fn peek_next(&mut self, pool: usize) -> Option<u128> {
        let p = &mut self.pools[pool];
        let lazy = self.parked > 0;
        while let Some(first) = p.fresh.first() {
            let stale = (lazy || !p.pending.is_empty())
                && (self.using.contains_key(&first) || p.pending.contains(&first));
            if !stale {
                return Some(first);
            }
            p.fresh.pop_first();
        }
        for addr in p.pending.drain() {
            if !self.using.contains_key(&addr) {
                p.released.insert(addr);
            }
        }
        while let Some(first) = p.released.first() {
            if !(lazy && self.using.contains_key(&first)) {
                return Some(first);
            }
            p.released.pop_first();
        }
        None
    }

    /// Takes the lowest fresh address of the pool; released ones only once
    /// fresh ones run out (delayed reuse).
    pub(crate) fn take_next(&mut self, pool: usize) -> Option<u128> {
        self.peek_next(pool)?;
        self.take_peeked(pool)
    }

    /// [`FamilyState::take_next`] right after a [`FamilyState::peek_next`]
    /// of the same pool that found an address.
    pub(crate) fn take_peeked(&mut self, pool: usize) -> Option<u128> {
        let p = &mut self.pools[pool];
        if p.fresh.is_empty() {
            std::mem::swap(&mut p.fresh, &mut p.released);
        }
        p.fresh.pop_first()
    }

    /// Records `addr`, just taken from the pool's free sets, as held by
    /// `slot` (an automatic allocation).
    pub(crate) fn hold_automatic(&mut self, addr: u128, slot: Slot) {
        let holder = Holder {
            slot,
            excluded_ok: false,
            parked: false,
        };
        self.using.insert(addr, holder);
    }

    /// Records a static allocation of `addr` (not live): the free sets are
    /// left as they are (see the module docs).
    pub(crate) fn take_static(&mut self, addr: u128, slot: Slot, excluded_ok: bool) {
        let holder = Holder {
            slot,
            excluded_ok,
            parked: true,
        };
        self.using.insert(addr, holder);
        self.parked += 1;
    }

    /// Releases a live address: back to its pool as released; excluded or
    /// out-of-pool addresses (static ones) are simply forgotten.
    pub(crate) fn release(&mut self, addr: u128) {
        let Some(holder) = self.using.remove(&addr) else {
            return;
        };
        if holder.parked {
            self.parked -= 1;
        }
        let Some(pool) = self.pools.iter_mut().find(|p| p.universe.contains(addr)) else {
            return;
        };
        if !holder.parked {
            pool.released.insert(addr);
            return;
        }
        pool.pending.insert(addr);
        if pool.pending.len() > pending_fold_at(self.using.len()) {
            // Exact placement of every pending address, in address order.
            let mut released: Vec<u128> = pool
                .pending
                .drain()
                .filter(|a| !self.using.contains_key(a))
                .collect();
            released.sort_unstable();
            for a in released {
                pool.fresh.remove(a);
                pool.released.insert(a);
            }
        }
    }

    /// Live addresses as a set; `O(n log n)`.
    fn using_set(&self) -> RangeSet {
        let mut addrs: Vec<u128> = self.using.keys().copied().collect();
        addrs.sort_unstable();
        RangeSet::from_sorted(addrs)
    }
}

/// A subnet: the unit of locking in [`Ipam`](crate::Ipam).
#[derive(Debug)]
pub(crate) struct Subnet {
    pub(crate) name: String,
    pub(crate) families: [Option<FamilyState>; 2],
    /// Pool names; index 0 is the default pool `""`.
    pub(crate) pool_names: Vec<String>,
    /// Raw (unclipped) addresses of each named pool, indexed like
    /// `pool_names` (index 0 unused).
    pool_specs: Vec<[RangeSet; 2]>,
    pub(crate) owners: OwnerTable,
    /// MACs by their key (`Mac::key`).
    pub(crate) macs: FastHashMap<u64, Slot>,
    pub(crate) rng: MacRng,
    /// Set when the subnet is deleted from its [`Ipam`](crate::Ipam), for
    /// the [`SubnetHandle`](crate::SubnetHandle)s that outlive it.
    pub(crate) deleted: bool,
}

/// Checks a live address against a (new) family configuration.
fn validity(cfg: &FamilyConfig, addr: u128, excluded_ok: bool) -> Result<(), InvalidReason> {
    if !cfg.in_usable_range(addr) {
        Err(InvalidReason::OutOfRange)
    } else if addr == cfg.gateway {
        Err(InvalidReason::Gateway)
    } else if !excluded_ok && cfg.excluded.contains(addr) {
        Err(InvalidReason::Excluded)
    } else {
        Ok(())
    }
}

impl Subnet {
    pub(crate) fn new(name: &str, config: SubnetConfig) -> Subnet {
        let mut subnet = Subnet {
            name: name.to_owned(),
            families: [None, None],
            pool_names: vec![String::new()],
            pool_specs: vec![[RangeSet::new(), RangeSet::new()]],
            owners: OwnerTable::default(),
            macs: FastHashMap::default(),
            rng: MacRng::from_entropy(),
            deleted: false,
        };
        subnet.reconfigure(config);
        subnet
    }

    /// The configuration currently in force.
    pub(crate) fn config(&self) -> SubnetConfig {
        SubnetConfig {
            families: [0, 1].map(|i| self.families[i].as_ref().map(|f| f.cfg.clone())),
        }
    }

    /// Applies a new configuration, keeping every live address it still
    /// allows and returning the others (dropped from their owners).
    pub(crate) fn reconfigure(&mut self, config: SubnetConfig) -> Vec<Invalidated> {
        let mut invalid = Vec::new();
        let mut dropped = Vec::new();
        for (i, new_cfg) in config.families.into_iter().enumerate() {
            let family = IpFamily::ALL[i];
            let old_using = self.families[i].take().map(|f| f.using).unwrap_or_default();
            let mut using = FastHashMap::default();
            using.reserve(old_using.len());
            let mut lost = Vec::new();
            for (addr, holder) in old_using {
                let verdict = match &new_cfg {
                    None => Err(InvalidReason::FamilyRemoved),
                    Some(cfg) => validity(cfg, addr, holder.excluded_ok),
                };
                match verdict {
                    Ok(()) => {
                        using.insert(addr, holder);
                    }
                    Err(reason) => lost.push((addr, holder.slot, reason)),
                }
            }
            // Reported in address order, whatever the map's order.
            lost.sort_unstable_by_key(|(addr, _, _)| *addr);
            for (addr, slot, reason) in lost {
                invalid.push(Invalidated {
                    owner: self.owners.get(slot).owner().clone(),
                    address: family.addr(addr),
                    reason,
                });
                dropped.push((slot, family));
            }
            self.families[i] = new_cfg.map(|cfg| FamilyState {
                cfg,
                using,
                pools: Vec::new(),
                parked: 0,
            });
        }
        for (slot, family) in dropped {
            self.drop_address(slot, family);
        }
        self.rebuild_pools();
        invalid
    }

    /// Removes one family's address from an owner's record (the address is
    /// already out of `using`); forgets the owner once it holds nothing.
    fn drop_address(&mut self, slot: Slot, family: IpFamily) {
        let alloc = &mut self.owners.get_mut(slot).alloc;
        alloc.set(family, None);
        if alloc.v4.is_none() && alloc.v6.is_none() {
            if let Some(mac) = alloc.mac {
                self.macs.remove(&mac.key());
            }
            self.owners.remove_slot(slot);
        }
    }

    /// Recomputes every pool's free space from the configuration, the pool
    /// specs and the live addresses. Released addresses become fresh again,
    /// as in Kube-OVN after a subnet update.
    fn rebuild_pools(&mut self) {
        for (i, fam) in self.families.iter_mut().enumerate() {
            let Some(fam) = fam else { continue };
            let using = fam.using_set();
            let mut default_universe = fam.cfg.allocatable.clone();
            let mut pools = vec![PoolState::default()];
            for spec in &self.pool_specs[1..] {
                let universe = spec[i].intersection(&fam.cfg.allocatable);
                default_universe.subtract(&universe);
                pools.push(PoolState::new(universe, &using));
            }
            pools[0] = PoolState::new(default_universe, &using);
            fam.pools = pools;
            // Every live address is now out of the free sets.
            for holder in fam.using.values_mut() {
                holder.parked = false;
            }
            fam.parked = 0;
        }
    }

    /// Index of a pool; `None` is the default pool.
    pub(crate) fn pool_index(&self, pool: Option<&str>) -> Option<usize> {
        match pool {
            None | Some("") => Some(0),
            Some(name) => self.pool_names.iter().position(|p| p == name),
        }
    }

    /// Adds or replaces a named pool. Named pools may not overlap.
    pub(crate) fn set_pool(&mut self, name: &str, ranges: [RangeSet; 2]) -> Result<(), SpecError> {
        let existing = self.pool_index(Some(name));
        for (idx, other) in self.pool_specs.iter().enumerate().skip(1) {
            if Some(idx) == existing {
                continue;
            }
            let overlaps = (0..2).any(|i| !ranges[i].intersection(&other[i]).is_empty());
            if overlaps {
                return Err(SpecError::PoolOverlap {
                    subnet: self.name.clone(),
                    pool: name.to_owned(),
                    other: self.pool_names[idx].clone(),
                });
            }
        }
        match existing {
            Some(idx) => self.pool_specs[idx] = ranges,
            None => {
                self.pool_names.push(name.to_owned());
                self.pool_specs.push(ranges);
            }
        }
        self.rebuild_pools();
        Ok(())
    }

    /// Removes a named pool; its addresses go back to the default pool.
    pub(crate) fn remove_pool(&mut self, name: &str) -> bool {
        match self.pool_index(Some(name)) {
            Some(idx) if idx > 0 => {
                self.pool_names.remove(idx);
                self.pool_specs.remove(idx);
                self.rebuild_pools();
                true
            }
            _ => false,
        }
    }

    /// Replaces every allocation with `entries`, refusing (whole) each entry
    /// that is invalid or that claims an address or MAC an earlier entry
    /// holds. Excluded addresses are accepted: they were handed out.
    pub(crate) fn rebuild(
        &mut self,
        entries: impl IntoIterator<Item = ExistingAllocation>,
    ) -> RebuildReport {
        self.owners.clear();
        self.macs.clear();
        for fam in self.families.iter_mut().flatten() {
            fam.using.clear();
        }
        let mut report = RebuildReport::default();
        for entry in entries {
            match self.check_existing(&entry) {
                Ok(addrs) => {
                    self.load(entry, addrs);
                    report.loaded += 1;
                }
                Err(problem) => report.rejected.push(Rejected {
                    owner: entry.owner,
                    problem,
                }),
            }
        }
        self.rebuild_pools();
        report
    }

    fn check_existing(
        &self,
        entry: &ExistingAllocation,
    ) -> Result<[Option<u128>; 2], RebuildProblem> {
        if self.owners.find(&entry.owner).is_some() {
            return Err(RebuildProblem::DuplicateOwner);
        }
        if entry.addresses.is_empty() {
            return Err(RebuildProblem::NoAddress);
        }
        let addrs = self
            .by_family(&entry.addresses)
            .map_err(RebuildProblem::Invalid)?;
        for (i, addr) in addrs.iter().enumerate() {
            let (Some(addr), Some(fam)) = (addr, &self.families[i]) else {
                continue;
            };
            let address = fam.cfg.family.addr(*addr);
            match validity(&fam.cfg, *addr, true) {
                Err(InvalidReason::Gateway) => {
                    return Err(RebuildProblem::Invalid(AllocError::AddressIsGateway {
                        subnet: self.name.clone(),
                        address,
                    }))
                }
                Err(_) => {
                    return Err(RebuildProblem::Invalid(AllocError::AddressOutOfRange {
                        subnet: self.name.clone(),
                        address,
                    }))
                }
                Ok(()) => {}
            }
            if let Some(holder) = fam.using.get(addr) {
                return Err(RebuildProblem::AddressConflict {
                    address,
                    kept: self.owners.get(holder.slot).owner().clone(),
                });
            }
        }
        if let Some(mac) = entry.mac {
            if let Some(&kept) = self.macs.get(&mac.key()) {
                return Err(RebuildProblem::MacConflict {
                    mac,
                    kept: self.owners.get(kept).owner().clone(),
                });
            }
        }
        Ok(addrs)
    }

    fn load(&mut self, entry: ExistingAllocation, addrs: [Option<u128>; 2]) {
        let mut alloc = Allocation {
            mac: entry.mac,
            ..Allocation::default()
        };
        for (i, addr) in addrs.into_iter().enumerate() {
            if let (Some(addr), Some(fam)) = (addr, &self.families[i]) {
                alloc.set(fam.cfg.family, Some(addr));
            }
        }
        let slot = self.owners.insert(entry.owner, alloc);
        for (i, addr) in addrs.into_iter().enumerate() {
            let (Some(addr), Some(fam)) = (addr, self.families[i].as_mut()) else {
                continue;
            };
            let holder = Holder {
                slot,
                excluded_ok: true,
                parked: false,
            };
            fam.using.insert(addr, holder);
        }
        if let Some(mac) = entry.mac {
            self.macs.insert(mac.key(), slot);
        }
    }

    /// Splits requested addresses by family: at most one per family, and
    /// only families the subnet has.
    pub(crate) fn by_family(&self, addresses: &[IpAddr]) -> Result<[Option<u128>; 2], AllocError> {
        let mut out = [None, None];
        for &address in addresses {
            let family = IpFamily::of(address);
            if self.families[family.index()].is_none() {
                return Err(AllocError::AddressOutOfRange {
                    subnet: self.name.clone(),
                    address,
                });
            }
            if out[family.index()].replace(addr_value(address)).is_some() {
                return Err(AllocError::DuplicateFamily {
                    subnet: self.name.clone(),
                    family,
                });
            }
        }
        Ok(out)
    }

    /// Usage of the whole subnet (`pool == 0` not special) or of one pool.
    pub(crate) fn usage(&self, pool: Option<usize>) -> Usage {
        let mut usage = Usage::default();
        for fam in self.families.iter().flatten() {
            let all_using = fam.using_set();
            let (available, using) = match pool {
                None => {
                    let mut free = RangeSet::new();
                    for p in &fam.pools {
                        free.union_with(&p.free(&all_using));
                    }
                    (free, all_using)
                }
                Some(idx) => {
                    let p = &fam.pools[idx];
                    (p.free(&all_using), all_using.intersection(&p.universe))
                }
            };
            let figures = FamilyUsage::new(fam.cfg.family, &available, &using);
            match fam.cfg.family {
                IpFamily::V4 => usage.v4 = figures,
                IpFamily::V6 => usage.v6 = figures,
            }
        }
        usage
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::net::{IpAddr, Ipv4Addr};

    use proptest::prelude::*;

    use crate::usage::format_ranges;
    use crate::{AllocError, SubnetSpec};
    use crate::{AllocationRequest, IpFamily, Ipam, MacRequest, Owner, PoolSpec, RangeSet};

    const BASE: u32 = 0x0a00_0000;
    /// Addresses of the named pool `p`.
    const POOL: std::ops::RangeInclusive<u32> = 20..=25;
    const EXCLUDED: u32 = 29;

    #[derive(Debug, Clone)]
    enum Op {
        Alloc(usize, bool),
        Static(usize, u32, bool),
        Release(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0usize..8, any::<bool>()).prop_map(|(o, p)| Op::Alloc(o, p)),
            (0usize..8, 0u32..32, proptest::bool::weighted(0.2))
                .prop_map(|(o, a, x)| Op::Static(o, a, x)),
            (0usize..8).prop_map(Op::Release),
        ]
    }

    fn ip(a: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(BASE + a))
    }

    /// Naive model: per pool (0 default, 1 `p`), fresh and released sets.
    #[derive(Default)]
    struct Model {
        fresh: [BTreeSet<u32>; 2],
        released: [BTreeSet<u32>; 2],
        owners: BTreeMap<usize, u32>,
    }

    impl Model {
        fn pool_of(a: u32) -> Option<usize> {
            match a {
                2..=30 if a != EXCLUDED => Some(usize::from(POOL.contains(&a))),
                _ => None,
            }
        }

        fn free(&mut self, a: u32) {
            if let Some(p) = Model::pool_of(a) {
                self.released[p].insert(a);
            }
        }

        fn step(&mut self, op: &Op) -> Result<Option<u32>, &'static str> {
            match *op {
                Op::Alloc(o, pool) => {
                    if let Some(&a) = self.owners.get(&o) {
                        return Ok(Some(a));
                    }
                    let p = usize::from(pool);
                    if self.fresh[p].is_empty() {
                        std::mem::swap(&mut self.fresh[p], &mut self.released[p]);
                    }
                    let a = self.fresh[p].pop_first().ok_or("exhausted")?;
                    self.owners.insert(o, a);
                    Ok(Some(a))
                }
                Op::Static(o, a, allow) => {
                    if self.owners.get(&o) == Some(&a) {
                        return Ok(Some(a));
                    }
                    if !(1..=30).contains(&a) {
                        return Err("out of range");
                    }
                    if a == 1 {
                        return Err("gateway");
                    }
                    if self.owners.values().any(|&h| h == a) {
                        return Err("taken");
                    }
                    if a == EXCLUDED && !allow {
                        return Err("excluded");
                    }
                    if let Some(old) = self.owners.insert(o, a) {
                        self.free(old);
                    }
                    for p in 0..2 {
                        self.fresh[p].remove(&a);
                        self.released[p].remove(&a);
                    }
                    Ok(Some(a))
                }
                Op::Release(o) => {
                    if let Some(a) = self.owners.remove(&o) {
                        self.free(a);
                    }
                    Ok(None)
                }
            }
        }
    }

    fn kind(e: &AllocError) -> &'static str {
        match e {
            AllocError::Exhausted { .. } => "exhausted",
            AllocError::AddressOutOfRange { .. } => "out of range",
            AllocError::AddressIsGateway { .. } => "gateway",
            AllocError::AddressTaken { .. } => "taken",
            AllocError::AddressExcluded { .. } => "excluded",
            other => panic!("unexpected {other}"),
        }
    }

    fn text(set: &BTreeSet<u32>) -> String {
        let addrs = set.iter().map(|&a| u128::from(BASE + a));
        format_ranges(IpFamily::V4, &RangeSet::from_sorted(addrs))
    }

    proptest! {
        /// Static and automatic allocations interleaved on a subnet with a
        /// named pool and an exclusion, the pending set folded as soon as it
        /// holds 3 addresses: the lazy free sets must match exact ones.
        #[test]
        fn lazy_static_allocation_matches_exact_sets(ops in proptest::collection::vec(op(), 1..200)) {
            let ipam = Ipam::new();
            let mut spec = SubnetSpec::new("10.0.0.0/27");
            spec.exclude_ips = vec!["10.0.0.29".into()];
            ipam.add_or_update_subnet("s", &spec).unwrap();
            let pool = PoolSpec { ips: vec!["10.0.0.20..10.0.0.25".into()] };
            ipam.add_or_update_pool("s", "p", &pool).unwrap();
            let mut model = Model::default();
            model.fresh[0] = (2..=30).filter(|a| !POOL.contains(a) && *a != EXCLUDED).collect();
            model.fresh[1] = POOL.collect();
            for op in &ops {
                let owner = |o: usize| Owner::new(format!("ns/p{o}"), "ovn");
                let got = match *op {
                    Op::Alloc(o, pool) => {
                        let req = AllocationRequest {
                            pool: pool.then(|| "p".to_owned()),
                            mac: MacRequest::None,
                            ..AllocationRequest::default()
                        };
                        ipam.allocate("s", &owner(o), &req).map(|a| a.v4.map(|v| u32::from(v) - BASE))
                    }
                    Op::Static(o, a, allow) => {
                        let req = AllocationRequest {
                            mac: MacRequest::None,
                            allow_excluded: allow,
                            ..AllocationRequest::with_addresses([ip(a)])
                        };
                        ipam.allocate("s", &owner(o), &req).map(|a| a.v4.map(|v| u32::from(v) - BASE))
                    }
                    Op::Release(o) => ipam.release("s", &owner(o)).map(|_| None),
                };
                let want = model.step(op);
                prop_assert_eq!(got.map_err(|e| kind(&e)), want, "{:?}", op);
                for (name, p) in [("", 0), ("p", 1)] {
                    let usage = ipam.pool_usage("s", name).unwrap().v4;
                    let free: BTreeSet<u32> = model.fresh[p].union(&model.released[p]).copied().collect();
                    prop_assert_eq!(usage.available, free.len() as u128);
                    prop_assert_eq!(usage.available_range, text(&free));
                    let used: BTreeSet<u32> = model
                        .owners
                        .values()
                        .copied()
                        .filter(|&a| Model::pool_of(a) == Some(p))
                        .collect();
                    prop_assert_eq!(usage.using_range, text(&used));
                }
                let usage = ipam.subnet_usage("s").unwrap().v4;
                prop_assert_eq!(usage.using, model.owners.len() as u128);
            }
        }
    }
}
