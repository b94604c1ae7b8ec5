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

use std::net::IpAddr;

use crate::addr::{addr_value, IpFamily, Mac, MacRng};
use crate::error::{AllocError, SpecError};
use crate::hash::FxHashMap;
use crate::owner::{Allocation, ExistingAllocation};
use crate::owner_table::{OwnerTable, Slot};
use crate::range_set::RangeSet;
use crate::report::{InvalidReason, Invalidated, RebuildProblem, RebuildReport, Rejected};
use crate::spec::{FamilyConfig, SubnetConfig};
use crate::usage::{FamilyUsage, Usage};

/// Who holds a live address.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Holder {
    /// The owner's slot in [`Subnet::owners`].
    pub(crate) slot: Slot,
    /// Set for static allocations allowed to use excluded addresses; such an
    /// address stays valid when the exclusions change.
    pub(crate) excluded_ok: bool,
}

/// Free space of one pool in one family.
#[derive(Debug, Clone, Default)]
pub(crate) struct PoolState {
    /// Every allocatable address of the pool, free or not.
    pub(crate) universe: RangeSet,
    pub(crate) fresh: RangeSet,
    pub(crate) released: RangeSet,
}

impl PoolState {
    fn new(universe: RangeSet, using: &RangeSet) -> PoolState {
        let mut fresh = universe.clone();
        fresh.subtract(using);
        PoolState {
            universe,
            fresh,
            released: RangeSet::new(),
        }
    }

    /// The address [`PoolState::take_next`] would return.
    pub(crate) fn peek(&self) -> Option<u128> {
        self.fresh.first().or_else(|| self.released.first())
    }

    /// Lowest fresh address; released ones only once fresh ones run out.
    pub(crate) fn take_next(&mut self) -> Option<u128> {
        if self.fresh.is_empty() {
            std::mem::swap(&mut self.fresh, &mut self.released);
        }
        self.fresh.pop_first()
    }

    fn free(&self) -> RangeSet {
        let mut free = self.fresh.clone();
        free.union_with(&self.released);
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
    pub(crate) using: FxHashMap<u128, Holder>,
    /// Indexed like [`Subnet::pool_names`].
    pub(crate) pools: Vec<PoolState>,
}

impl FamilyState {
    /// Live addresses as a set; `O(n log n)`.
    fn using_set(&self) -> RangeSet {
        self.using_set_in(|_| true)
    }

    /// Live addresses for which `keep` holds, as a set.
    fn using_set_in(&self, keep: impl Fn(u128) -> bool) -> RangeSet {
        let mut addrs: Vec<u128> = self.using.keys().copied().filter(|a| keep(*a)).collect();
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
    pub(crate) macs: FxHashMap<Mac, Slot>,
    pub(crate) rng: MacRng,
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
            macs: FxHashMap::default(),
            rng: MacRng::from_entropy(),
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
            let mut using = FxHashMap::default();
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
                    owner: self.owners.get(slot).owner.clone(),
                    address: family.addr(addr),
                    reason,
                });
                dropped.push((slot, family));
            }
            self.families[i] = new_cfg.map(|cfg| FamilyState {
                cfg,
                using,
                pools: Vec::new(),
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
                self.macs.remove(&mac);
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
                    kept: self.owners.get(holder.slot).owner.clone(),
                });
            }
        }
        if let Some(mac) = entry.mac {
            if let Some(&kept) = self.macs.get(&mac) {
                return Err(RebuildProblem::MacConflict {
                    mac,
                    kept: self.owners.get(kept).owner.clone(),
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
            };
            fam.using.insert(addr, holder);
        }
        if let Some(mac) = entry.mac {
            self.macs.insert(mac, slot);
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
            let (available, using) = match pool {
                None => {
                    let mut free = RangeSet::new();
                    for p in &fam.pools {
                        free.union_with(&p.free());
                    }
                    (free, fam.using_set())
                }
                Some(idx) => {
                    let p = &fam.pools[idx];
                    (p.free(), fam.using_set_in(|a| p.universe.contains(a)))
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
