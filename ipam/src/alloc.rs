//! Allocation and release on one subnet: plan every change first (where all
//! errors arise), then commit, so a failed request changes nothing and dual
//! stack gets both families or neither.

use std::collections::hash_map::Entry;
use std::net::IpAddr;

use crate::addr::{addr_value, IpFamily, Mac};
use crate::error::AllocError;
use crate::owner::{Allocation, AllocationRequest, MacRequest, Owner};
use crate::owner_table::{Slot, Tag};
use crate::subnet::Subnet;

/// What to do with one family of an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// Nothing to change (no such family, or the owner keeps its address).
    Keep,
    /// Take this requested address.
    Static(u128),
    /// Take the pool's next address (peeked, equal to this).
    Next(u128),
}

/// What to do with the MAC of an allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MacPlan {
    /// Keep what the owner holds (a MAC or none).
    Keep,
    /// Generate a fresh unique MAC (the owner holds none).
    Generate,
    /// Take this MAC (free, or already the owner's).
    Static(Mac),
}

impl Subnet {
    /// Allocates for `owner`, or returns what it already holds (filling in
    /// any missing family, and moving to newly requested static addresses
    /// or MAC).
    pub(crate) fn allocate(
        &mut self,
        owner: &Owner,
        req: &AllocationRequest,
    ) -> Result<Allocation, AllocError> {
        let pool = self
            .pool_index(req.pool.as_deref())
            .ok_or_else(|| AllocError::UnknownPool {
                subnet: self.name.clone(),
                pool: req.pool.clone().unwrap_or_default(),
            })?;
        let tag = self.owners.tag(owner);
        let slot = self.owners.lookup(owner, tag);
        if pool == 0 && req.addresses.is_empty() && !matches!(req.mac, MacRequest::Static(_)) {
            // The common requests (a new pod, or a repeated ADD) skip the
            // general plan below.
            match slot {
                None => return self.allocate_new(owner, tag, req.mac),
                Some(slot) => {
                    let held = self.owners.get(slot).alloc;
                    if self.is_complete(&held, req.mac) {
                        return Ok(held);
                    }
                }
            }
        }
        let statics = self.by_family(&req.addresses)?;
        let held = slot.map(|s| self.owners.get(s).alloc);
        let mut picks = [Pick::Keep; 2];
        for (i, pick) in picks.iter_mut().enumerate() {
            let Some(family) = self.families[i].as_ref().map(|f| f.cfg.family) else {
                continue;
            };
            let held_addr = held.and_then(|h| h.address(family)).map(addr_value);
            *pick = match (statics[i], held_addr) {
                (Some(s), Some(h)) if s == h => Pick::Keep,
                (Some(s), _) => {
                    self.check_static(i, s, pool, req)?;
                    Pick::Static(s)
                }
                (None, Some(_)) => Pick::Keep,
                (None, None) => {
                    // Only drops stale free-set entries: no visible change
                    // if the request fails later.
                    let next = self.families[i].as_mut().and_then(|f| f.peek_next(pool));
                    Pick::Next(next.ok_or_else(|| AllocError::Exhausted {
                        subnet: self.name.clone(),
                        pool: self.pool_names[pool].clone(),
                        family,
                    })?)
                }
            };
        }
        let mac = self.plan_mac(slot, held, req.mac)?;
        let slot = match slot {
            Some(slot) => slot,
            None => self.owners.insert_tagged(owner.clone(), tag),
        };
        Ok(self.commit(slot, picks, pool, mac, req.allow_excluded))
    }

    /// True when `held` has an address in every family of the subnet and
    /// the MAC that `mac` asks for: a request without static addresses
    /// leaves it as it is.
    fn is_complete(&self, held: &Allocation, mac: MacRequest) -> bool {
        let families = self
            .families
            .iter()
            .zip(IpFamily::ALL)
            .all(|(f, family)| f.is_none() || held.address(family).is_some());
        families && (mac != MacRequest::Generate || held.mac.is_some())
    }

    /// Next free addresses of the default pool (and a generated MAC) for
    /// an owner that holds nothing yet.
    fn allocate_new(
        &mut self,
        owner: &Owner,
        tag: Tag,
        mac: MacRequest,
    ) -> Result<Allocation, AllocError> {
        let mut next = [None; 2];
        for (i, family) in IpFamily::ALL.into_iter().enumerate() {
            if let Some(fam) = self.families[i].as_mut() {
                // Only drops stale free-set entries: no visible change if
                // the other family is exhausted.
                let addr = fam.peek_next(0).ok_or_else(|| AllocError::Exhausted {
                    subnet: self.name.clone(),
                    pool: self.pool_names[0].clone(),
                    family,
                })?;
                next[i] = Some(addr);
            }
        }
        // The record is filled in where it lies: building an `Allocation`
        // (byte-aligned fields) on the stack and moving it costs more than
        // the rest of this function (failed store-to-load forwarding).
        let slot = self.owners.insert_tagged(owner.clone(), tag);
        for (i, family) in IpFamily::ALL.into_iter().enumerate() {
            let (Some(addr), Some(fam)) = (next[i], self.families[i].as_mut()) else {
                continue;
            };
            let taken = fam.take_peeked(0);
            debug_assert_eq!(taken, Some(addr), "peeked address must be taken");
            fam.hold_automatic(addr, slot);
            self.owners.get_mut(slot).alloc.set(family, Some(addr));
        }
        if mac == MacRequest::Generate {
            let mac = self.claim_unique_mac(slot);
            self.owners.get_mut(slot).alloc.mac = Some(mac);
        }
        Ok(self.owners.get(slot).alloc)
    }

    /// Checks a requested address; the error says exactly why it is refused.
    fn check_static(
        &self,
        i: usize,
        addr: u128,
        pool: usize,
        req: &AllocationRequest,
    ) -> Result<(), AllocError> {
        let Some(fam) = &self.families[i] else {
            unreachable!("by_family only returns families the subnet has")
        };
        let subnet = || self.name.clone();
        let address = fam.cfg.family.addr(addr);
        if !fam.cfg.in_usable_range(addr) {
            return Err(AllocError::AddressOutOfRange {
                subnet: subnet(),
                address,
            });
        }
        if addr == fam.cfg.gateway {
            return Err(AllocError::AddressIsGateway {
                subnet: subnet(),
                address,
            });
        }
        if let Some(holder) = fam.using.get(&addr) {
            return Err(AllocError::AddressTaken {
                subnet: subnet(),
                address,
                owner: self.owners.get(holder.slot).owner().clone(),
            });
        }
        if fam.cfg.excluded.contains(addr) && !req.allow_excluded {
            return Err(AllocError::AddressExcluded {
                subnet: subnet(),
                address,
            });
        }
        if req.pool.as_deref().is_some_and(|p| !p.is_empty())
            && !fam.pools[pool].universe.contains(addr)
        {
            return Err(AllocError::AddressNotInPool {
                subnet: subnet(),
                pool: self.pool_names[pool].clone(),
                address,
            });
        }
        Ok(())
    }

    /// How the owner's MAC changes.
    fn plan_mac(
        &self,
        slot: Option<Slot>,
        held: Option<Allocation>,
        req: MacRequest,
    ) -> Result<MacPlan, AllocError> {
        let held_mac = held.and_then(|h| h.mac);
        match req {
            MacRequest::Generate if held_mac.is_none() => Ok(MacPlan::Generate),
            MacRequest::Generate | MacRequest::None => Ok(MacPlan::Keep),
            MacRequest::Static(mac) if held_mac == Some(mac) => Ok(MacPlan::Keep),
            MacRequest::Static(mac) => match self.macs.get(&mac.key()) {
                Some(&other) if Some(other) != slot => Err(AllocError::MacTaken {
                    subnet: self.name.clone(),
                    mac,
                    owner: self.owners.get(other).owner().clone(),
                }),
                _ => Ok(MacPlan::Static(mac)),
            },
        }
    }

    /// A random locally administered unicast MAC no owner here holds,
    /// recorded as `slot`'s (one hash lookup when the first draw is free).
    fn claim_unique_mac(&mut self, slot: Slot) -> Mac {
        loop {
            let key = Mac::local_unicast_key(self.rng.next_u64());
            if let Entry::Vacant(free) = self.macs.entry(key) {
                free.insert(slot);
                return Mac::from_key(key);
            }
        }
    }

    /// Applies planned picks and MAC to the owner in `slot` (a new owner
    /// is already in the table, holding nothing).
    fn commit(
        &mut self,
        slot: Slot,
        picks: [Pick; 2],
        pool: usize,
        mac: MacPlan,
        allow_excluded: bool,
    ) -> Allocation {
        // Fields are written where they lie (see `allocate_new`).
        for (i, pick) in picks.into_iter().enumerate() {
            let addr = match pick {
                Pick::Keep => continue,
                Pick::Static(addr) | Pick::Next(addr) => addr,
            };
            let family = IpFamily::ALL[i];
            if let Some(old) = self.owners.get(slot).alloc.address(family) {
                self.free_address(i, addr_value(old));
            }
            let Some(fam) = self.families[i].as_mut() else {
                continue;
            };
            match pick {
                Pick::Next(_) => {
                    let taken = fam.take_next(pool);
                    debug_assert_eq!(taken, Some(addr), "peeked address must be taken");
                    fam.hold_automatic(addr, slot);
                }
                _ => {
                    let excluded_ok = allow_excluded && fam.cfg.excluded.contains(addr);
                    fam.take_static(addr, slot, excluded_ok);
                }
            }
            self.owners.get_mut(slot).alloc.set(family, Some(addr));
        }
        match mac {
            MacPlan::Keep => {}
            MacPlan::Generate => {
                let mac = self.claim_unique_mac(slot);
                self.owners.get_mut(slot).alloc.mac = Some(mac);
            }
            MacPlan::Static(new) => {
                if let Some(old) = self.owners.get(slot).alloc.mac {
                    self.macs.remove(&old.key());
                }
                self.macs.insert(new.key(), slot);
                self.owners.get_mut(slot).alloc.mac = Some(new);
            }
        }
        self.owners.get(slot).alloc
    }

    /// Returns a live address to its pool as released; excluded or
    /// out-of-pool addresses (static ones) are simply forgotten.
    fn free_address(&mut self, i: usize, addr: u128) {
        if let Some(fam) = self.families[i].as_mut() {
            fam.release(addr);
        }
    }

    /// Releases everything `owner` holds here.
    pub(crate) fn release(&mut self, owner: &Owner) -> Option<Allocation> {
        let slot = self.owners.unindex(owner)?;
        let alloc = self.owners.get(slot).alloc;
        if let Some(v4) = alloc.v4 {
            self.free_address(0, u128::from(u32::from(v4)));
        }
        if let Some(v6) = alloc.v6 {
            self.free_address(1, u128::from(v6));
        }
        if let Some(mac) = alloc.mac {
            self.macs.remove(&mac.key());
        }
        self.owners.free_slot(slot);
        Some(alloc)
    }

    /// What `owner` holds here.
    pub(crate) fn get(&self, owner: &Owner) -> Option<Allocation> {
        let slot = self.owners.find(owner)?;
        Some(self.owners.get(slot).alloc)
    }

    /// The owner of an address, if live.
    pub(crate) fn owner_of(&self, address: IpAddr) -> Option<Owner> {
        let fam = self.families[IpFamily::of(address).index()].as_ref()?;
        let holder = fam.using.get(&addr_value(address))?;
        Some(self.owners.get(holder.slot).owner().clone())
    }
}
