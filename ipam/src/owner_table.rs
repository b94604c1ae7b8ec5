//! The owners of one subnet and what each holds.
//!
//! Records live in a slab and are named by their [`Slot`], so the address
//! and MAC indexes store a `u32` instead of another copy of the owner (whose
//! clone and drop cost four atomic reference-count updates). The owner index
//! is a `hashbrown` table of slots: an allocation hashes its owner once, each
//! record keeps its hash (so the table re-grows without re-hashing owners) and
//! the only stored copy of its owner. Memory follows the number of owners,
//! never the subnet size.

use std::sync::Arc;

use hashbrown::HashTable;

use crate::hash::FastBuildHasher;
use crate::owner::{Allocation, Owner};

/// Index of an owner's record, stable while the owner holds anything.
pub(crate) type Slot = u32;

/// One owner and what it holds.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// `None` while the slot is free.
    owner: Option<Owner>,
    pub(crate) alloc: Allocation,
    hash: u64,
}

impl Record {
    /// The owner of a live record.
    pub(crate) fn owner(&self) -> &Owner {
        match &self.owner {
            Some(owner) => owner,
            None => unreachable!("record of a free slot"),
        }
    }
}

/// Owners by key, with stable slots.
#[derive(Debug, Default)]
pub(crate) struct OwnerTable {
    hasher: FastBuildHasher,
    /// Indexed by slot. A free slot keeps its record with no owner, so
    /// that taking it writes the fields where they lie: building a record
    /// (its `Allocation` has byte-aligned fields) and moving it in costs
    /// more than the rest of an allocation (failed store-to-load forwarding).
    records: Vec<Record>,
    /// Free slots, reused before the slab grows.
    free: Vec<Slot>,
    /// Live slots, keyed by their owner's hash.
    index: HashTable<Slot>,
}

/// An owner's hash, computed once per call and handed to
/// [`OwnerTable::lookup`] and [`OwnerTable::insert_tagged`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag(u64);

/// Owner equality, short-cut when both share their strings (the usual case:
/// the caller passes the owner it allocated with).
fn same(a: &Owner, b: &Owner) -> bool {
    (Arc::ptr_eq(&a.pod, &b.pod) || a.pod == b.pod)
        && (Arc::ptr_eq(&a.nic, &b.nic) || a.nic == b.nic)
}

/// The record in a live slot of `records`.
fn live(records: &[Record], slot: Slot) -> &Record {
    let record = &records[slot as usize];
    debug_assert!(record.owner.is_some(), "slot {slot} is free");
    record
}

impl OwnerTable {
    /// Hashes an owner, for [`OwnerTable::lookup`] and
    /// [`OwnerTable::insert_tagged`].
    pub(crate) fn tag(&self, owner: &Owner) -> Tag {
        Tag(self.hasher.hash_str_pair(&owner.pod, &owner.nic))
    }

    /// Number of owners.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// The slot of `owner`, if it holds anything.
    pub(crate) fn find(&self, owner: &Owner) -> Option<Slot> {
        self.lookup(owner, self.tag(owner))
    }

    /// [`OwnerTable::find`] with the owner's tag already computed.
    pub(crate) fn lookup(&self, owner: &Owner, Tag(hash): Tag) -> Option<Slot> {
        let records = &self.records;
        self.index
            .find(hash, |&slot| same(live(records, slot).owner(), owner))
            .copied()
    }

    /// The record in a live slot.
    pub(crate) fn get(&self, slot: Slot) -> &Record {
        live(&self.records, slot)
    }

    /// The record in a live slot, mutably.
    pub(crate) fn get_mut(&mut self, slot: Slot) -> &mut Record {
        let record = &mut self.records[slot as usize];
        debug_assert!(record.owner.is_some(), "slot {slot} is free");
        record
    }

    /// Adds an owner that is not in the table yet.
    pub(crate) fn insert(&mut self, owner: Owner, alloc: Allocation) -> Slot {
        let tag = self.tag(&owner);
        let slot = self.insert_tagged(owner, tag);
        self.get_mut(slot).alloc = alloc;
        slot
    }

    /// Adds an owner that is not in the table yet, holding nothing, with
    /// its tag already computed.
    pub(crate) fn insert_tagged(&mut self, owner: Owner, Tag(hash): Tag) -> Slot {
        debug_assert!(self.find(&owner).is_none(), "{owner} inserted twice");
        let slot = match self.free.pop() {
            Some(slot) => {
                let record = &mut self.records[slot as usize];
                record.owner = Some(owner);
                record.alloc = Allocation::default();
                record.hash = hash;
                slot
            }
            None => {
                let slot =
                    Slot::try_from(self.records.len()).expect("fewer than 2^32 owners per subnet");
                self.records.push(Record {
                    owner: Some(owner),
                    alloc: Allocation::default(),
                    hash,
                });
                slot
            }
        };
        let records = &self.records;
        self.index
            .insert_unique(hash, slot, |&s| live(records, s).hash);
        slot
    }

    /// Removes `owner`, returning its record.
    #[cfg(test)]
    pub(crate) fn remove(&mut self, owner: &Owner) -> Option<Record> {
        let slot = self.find(owner)?;
        Some(self.remove_slot(slot))
    }

    /// Takes `owner` out of the index and returns its slot, whose record
    /// stays readable until [`OwnerTable::free_slot`]: release reads what
    /// the owner held in place instead of moving a record out.
    pub(crate) fn unindex(&mut self, owner: &Owner) -> Option<Slot> {
        let hash = self.tag(owner).0;
        let records = &self.records;
        let entry = self
            .index
            .find_entry(hash, |&slot| same(live(records, slot).owner(), owner))
            .ok()?;
        Some(entry.remove().0)
    }

    /// Frees a slot taken out of the index by [`OwnerTable::unindex`].
    pub(crate) fn free_slot(&mut self, slot: Slot) {
        self.records[slot as usize].owner = None;
        self.free.push(slot);
    }

    /// Removes the owner in a live slot, returning its record.
    pub(crate) fn remove_slot(&mut self, slot: Slot) -> Record {
        let hash = live(&self.records, slot).hash;
        match self.index.find_entry(hash, |&s| s == slot) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => unreachable!("live slot {slot} not indexed"),
        }
        self.free.push(slot);
        let record = &mut self.records[slot as usize];
        Record {
            owner: record.owner.take(),
            alloc: record.alloc,
            hash,
        }
    }

    /// Every live record, with its slot, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Slot, &Record)> + '_ {
        self.records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.owner.is_some())
            .map(|(slot, r)| (slot as Slot, r))
    }

    /// Forgets every owner (keeping the allocated capacity).
    pub(crate) fn clear(&mut self) {
        self.records.clear();
        self.free.clear();
        self.index.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn owner(i: u16) -> Owner {
        Owner::new(
            format!("ns/pod-{i}"),
            if i % 3 == 0 { "eth1" } else { "ovn" },
        )
    }

    fn v4(i: u16) -> Allocation {
        let mut a = Allocation::default();
        a.set(crate::addr::IpFamily::V4, Some(u128::from(i)));
        a
    }

    /// Checks the table against a model: lookups, slots and records agree.
    fn check(table: &OwnerTable, model: &HashMap<u16, Slot>) {
        assert_eq!(table.len(), model.len());
        assert_eq!(table.iter().count(), model.len());
        for (&i, &slot) in model {
            assert_eq!(table.find(&owner(i)), Some(slot));
            assert_eq!(table.get(slot).owner(), &owner(i));
            assert_eq!(table.get(slot).alloc, v4(i));
        }
    }

    #[test]
    fn growth_and_slot_reuse() {
        let mut table = OwnerTable::default();
        let mut model = HashMap::new();
        for i in 0..1000 {
            model.insert(i, table.insert(owner(i), v4(i)));
        }
        check(&table, &model);
        for i in (0..1000).step_by(2) {
            let slot = model.remove(&i).unwrap();
            assert_eq!(table.remove(&owner(i)).unwrap().owner(), &owner(i));
            assert!(table.find(&owner(i)).is_none());
            // The freed slot is the next one handed out.
            let again = table.insert(owner(i + 1000), v4(i + 1000));
            assert_eq!(again, slot);
            assert_eq!(table.remove_slot(again).owner(), &owner(i + 1000));
        }
        check(&table, &model);
        table.clear();
        assert!(table.find(&owner(1)).is_none());
        check(&table, &HashMap::new());
    }

    proptest::proptest! {
        #[test]
        fn matches_a_hash_map(ops in proptest::collection::vec((0u8..3, 0u16..48), 1..200)) {
            let mut table = OwnerTable::default();
            let mut model: HashMap<u16, Slot> = HashMap::new();
            for (op, i) in ops {
                match (op, model.contains_key(&i)) {
                    (0, false) => { model.insert(i, table.insert(owner(i), v4(i))); }
                    (0, true) | (1, _) => {
                        let removed = table.remove(&owner(i)).map(|r| r.owner().clone());
                        proptest::prop_assert_eq!(removed, model.remove(&i).map(|_| owner(i)));
                    }
                    (_, true) => {
                        let slot = model.remove(&i).unwrap();
                        let removed = table.remove_slot(slot);
                        proptest::prop_assert_eq!(removed.owner(), &owner(i));
                    }
                    (_, false) => proptest::prop_assert!(table.find(&owner(i)).is_none()),
                }
                check(&table, &model);
            }
        }
    }
}
