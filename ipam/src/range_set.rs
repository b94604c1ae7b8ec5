//! A set of addresses stored as sorted, disjoint, coalesced inclusive ranges.
//!
//! Addresses of both families are plain `u128` here (an IPv4 address is its
//! 32-bit value). Every operation costs `O(log r)` or `O(r)` in the number of
//! ranges `r`, never in the number of addresses, so a /8 costs the same memory
//! as a /24 until allocations fragment it.

use std::collections::BTreeMap;
use std::ops::Bound;

/// Sorted, disjoint, non-adjacent inclusive ranges of `u128` values.
///
/// The lowest range is kept outside the map, in `head`: allocation takes
/// the lowest address and release usually extends the lowest range, so the
/// common operations on a lightly fragmented set touch no map node at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// The lowest range (inclusive); `None` only when the set is empty.
    head: Option<(u128, u128)>,
    /// Every other range, start -> end (inclusive). Invariant: each lies
    /// above `head`, and for consecutive ranges `(s1, e1)`, `(s2, e2)` (head
    /// included) `e1 + 1 < s2` (no overlap, no adjacency).
    rest: BTreeMap<u128, u128>,
}

impl RangeSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The set `start..=end` (empty when `start > end`).
    pub fn from_range(start: u128, end: u128) -> Self {
        let mut set = Self::new();
        set.insert_range(start, end);
        set
    }

    /// True when the set holds no address.
    pub fn is_empty(&self) -> bool {
        self.head.is_none()
    }

    /// Number of stored ranges (a measure of fragmentation, not of size).
    pub fn range_count(&self) -> usize {
        usize::from(self.head.is_some()) + self.rest.len()
    }

    /// Number of addresses, saturating at `u128::MAX`.
    pub fn count(&self) -> u128 {
        self.iter().fold(0u128, |acc, (s, e)| {
            acc.saturating_add((e - s).saturating_add(1))
        })
    }

    /// Iterates the ranges in ascending order as `(start, end)` inclusive.
    pub fn iter(&self) -> impl Iterator<Item = (u128, u128)> + '_ {
        self.head
            .into_iter()
            .chain(self.rest.iter().map(|(s, e)| (*s, *e)))
    }

    /// The range of `rest` containing `addr`, if any.
    fn rest_range_of(&self, addr: u128) -> Option<(u128, u128)> {
        let (s, e) = self.rest.range(..=addr).next_back()?;
        (addr <= *e).then_some((*s, *e))
    }

    /// The range containing `addr`, if any.
    fn range_of(&self, addr: u128) -> Option<(u128, u128)> {
        match self.head? {
            (s, e) if addr <= e => (s <= addr).then_some((s, e)),
            _ => self.rest_range_of(addr),
        }
    }

    /// True when `addr` is in the set.
    pub fn contains(&self, addr: u128) -> bool {
        self.range_of(addr).is_some()
    }

    /// True when every address of `start..=end` is in the set.
    pub fn contains_range(&self, start: u128, end: u128) -> bool {
        matches!(self.range_of(start), Some((_, e)) if end <= e)
    }

    /// True when the set shares at least one address with `start..=end`.
    pub fn intersects_range(&self, start: u128, end: u128) -> bool {
        if start > end {
            return false;
        }
        if self.contains(start) {
            return true;
        }
        self.iter_from(start)
            .next()
            .is_some_and(|(s, _)| s > start && s <= end)
    }

    /// Ranges starting after `start`, ascending.
    fn iter_from(&self, start: u128) -> impl Iterator<Item = (u128, u128)> + '_ {
        self.head.filter(|(s, _)| *s > start).into_iter().chain(
            self.rest
                .range((Bound::Excluded(start), Bound::Unbounded))
                .map(|(s, e)| (*s, *e)),
        )
    }

    /// The lowest address.
    pub fn first(&self) -> Option<u128> {
        self.head.map(|(s, _)| s)
    }

    /// Removes and returns the lowest address.
    pub fn pop_first(&mut self) -> Option<u128> {
        let (start, end) = self.head?;
        self.head = if start < end {
            Some((start + 1, end))
        } else {
            self.rest.pop_first()
        };
        Some(start)
    }

    /// Adds `addr`; returns false when it was already present.
    pub fn insert(&mut self, addr: u128) -> bool {
        let Some((s, e)) = self.head else {
            self.head = Some((addr, addr));
            return true;
        };
        if addr < s {
            if addr + 1 == s {
                self.head = Some((addr, e));
            } else {
                self.rest.insert(s, e);
                self.head = Some((addr, addr));
            }
            true
        } else if addr <= e {
            false
        } else if addr == e + 1 {
            // Extends the head, maybe up to the next range.
            let next = addr
                .checked_add(1)
                .and_then(|n| self.rest.first_entry().filter(|f| *f.key() == n));
            let end = next.map_or(addr, |f| f.remove());
            self.head = Some((s, end));
            true
        } else {
            self.rest_insert(addr)
        }
    }

    /// [`RangeSet::insert`] of an address above `head` and not touching it.
    fn rest_insert(&mut self, addr: u128) -> bool {
        // One descent finds both neighbours: the range starting at
        // `addr + 1` (if any) and the one before it.
        let next_start = addr.saturating_add(1);
        let mut around = self.rest.range_mut(..=next_start);
        let (next, prev) = match around.next_back() {
            Some((&s, e)) if s == next_start && s != addr => (Some(*e), around.next_back()),
            last => (None, last),
        };
        match prev {
            Some((_, end)) if addr <= *end => return false,
            Some((_, end)) if *end + 1 == addr => {
                // Extends the previous range, maybe up to the next one.
                *end = next.unwrap_or(addr);
                if next.is_some() {
                    self.rest.remove(&next_start);
                }
                return true;
            }
            _ => {}
        }
        if next.is_some() {
            self.rest.remove(&next_start);
        }
        self.rest.insert(addr, next.unwrap_or(addr));
        true
    }

    /// Removes `addr`; returns false when it was absent.
    pub fn remove(&mut self, addr: u128) -> bool {
        let Some((s, e)) = self.head else {
            return false;
        };
        if addr < s {
            return false;
        }
        if addr <= e {
            self.head = if s == e {
                self.rest.pop_first()
            } else if addr == s {
                Some((s + 1, e))
            } else {
                if addr < e {
                    self.rest.insert(addr + 1, e);
                }
                Some((s, addr - 1))
            };
            return true;
        }
        let Some((&rs, end)) = self.rest.range_mut(..=addr).next_back() else {
            return false;
        };
        let e = *end;
        if addr > e {
            return false;
        }
        if rs < addr {
            *end = addr - 1;
        } else {
            self.rest.remove(&rs);
        }
        if addr < e {
            self.rest.insert(addr + 1, e);
        }
        true
    }

    /// Adds every address of `start..=end`, merging with overlapping and
    /// adjacent ranges. Allocation-free apart from the map's own nodes.
    pub fn insert_range(&mut self, start: u128, end: u128) {
        if start > end {
            return;
        }
        let Some((s, e)) = self.head else {
            self.head = Some((start, end));
            return;
        };
        if end + 1 < s {
            // Wholly below the head, not touching it (`end < s`: no overflow).
            self.rest.insert(s, e);
            self.head = Some((start, end));
        } else if start <= e.saturating_add(1) {
            // Overlaps or touches the head: the head grows, swallowing the
            // ranges of `rest` it now reaches.
            let mut new_end = end.max(e);
            while let Some(first) = self.rest.first_entry() {
                if *first.key() > new_end.saturating_add(1) {
                    break;
                }
                new_end = new_end.max(first.remove());
            }
            self.head = Some((start.min(s), new_end));
        } else {
            self.rest_insert_range(start, end);
        }
    }

    /// [`RangeSet::insert_range`] of a range above `head`, not touching it.
    fn rest_insert_range(&mut self, start: u128, end: u128) {
        let mut new_start = start;
        let mut new_end = end;
        // A range starting at or before `start` may overlap or touch it.
        if let Some((&s, &e)) = self.rest.range(..=start).next_back() {
            if e.saturating_add(1) >= start {
                new_start = s;
                new_end = new_end.max(e);
            }
        }
        // Ranges starting inside `new_start..=end + 1` are swallowed. Stored
        // ranges never touch each other, so none beyond that can touch the
        // merged range.
        let upper = end.saturating_add(1);
        while let Some((&s, &e)) = self.rest.range(new_start..=upper).next() {
            self.rest.remove(&s);
            new_end = new_end.max(e);
        }
        self.rest.insert(new_start, new_end);
    }

    /// Removes every address of `start..=end`.
    pub fn remove_range(&mut self, start: u128, end: u128) {
        if start > end {
            return;
        }
        let Some((s, e)) = self.head else {
            return;
        };
        if end < s {
            return;
        }
        // No range of `rest` contains `start` when it is at most `e`.
        self.rest_remove_range(start, end);
        if start > e {
            return;
        }
        let left = (s < start).then(|| (s, start - 1));
        let right = (end < e).then(|| (end + 1, e));
        self.head = match (left, right) {
            (Some(l), Some(r)) => {
                self.rest.insert(r.0, r.1);
                Some(l)
            }
            (Some(piece), None) | (None, Some(piece)) => Some(piece),
            (None, None) => self.rest.pop_first(),
        };
    }

    /// [`RangeSet::remove_range`] on `rest` alone.
    fn rest_remove_range(&mut self, start: u128, end: u128) {
        // A range starting before `start` keeps its head, and maybe a tail.
        if let Some((s, e)) = self.rest_range_of(start) {
            if s < start {
                self.rest.insert(s, start - 1);
                if e > end {
                    self.rest.insert(end + 1, e);
                    return;
                }
            }
        }
        while let Some((&s, &e)) = self.rest.range(start..=end).next() {
            self.rest.remove(&s);
            if e > end {
                self.rest.insert(end + 1, e);
                break;
            }
        }
    }

    /// Adds every address of `other`.
    pub fn union_with(&mut self, other: &RangeSet) {
        for (s, e) in other.iter() {
            self.insert_range(s, e);
        }
    }

    /// Removes every address of `other`.
    pub fn subtract(&mut self, other: &RangeSet) {
        for (s, e) in other.iter() {
            self.remove_range(s, e);
        }
    }

    /// Appends a range above (and not touching) every stored one.
    fn push_back(&mut self, start: u128, end: u128) {
        if self.head.is_none() {
            self.head = Some((start, end));
        } else {
            self.rest.insert(start, end);
        }
    }

    /// The addresses in both `self` and `other`.
    pub fn intersection(&self, other: &RangeSet) -> RangeSet {
        let mut out = RangeSet::new();
        let mut a = self.iter().peekable();
        let mut b = other.iter().peekable();
        while let (Some(&(s1, e1)), Some(&(s2, e2))) = (a.peek(), b.peek()) {
            let (s, e) = (s1.max(s2), e1.min(e2));
            if s <= e {
                // Pieces of distinct pairs never touch: two touching
                // addresses in both sets lie in one range of each.
                out.push_back(s, e);
            }
            if e1 < e2 {
                a.next();
            } else {
                b.next();
            }
        }
        out
    }

    /// Builds a set from sorted, distinct addresses in `O(n)`.
    pub fn from_sorted(addrs: impl IntoIterator<Item = u128>) -> RangeSet {
        let mut out = RangeSet::new();
        let mut current: Option<(u128, u128)> = None;
        for a in addrs {
            current = match current {
                Some((s, e)) if e.checked_add(1) == Some(a) => Some((s, a)),
                Some((s, e)) => {
                    out.push_back(s, e);
                    Some((a, a))
                }
                None => Some((a, a)),
            };
        }
        if let Some((s, e)) = current {
            out.push_back(s, e);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(set: &RangeSet) -> Vec<(u128, u128)> {
        set.iter().collect()
    }

    #[test]
    fn insert_merges_overlapping_and_adjacent() {
        let mut s = RangeSet::new();
        s.insert_range(10, 20);
        s.insert_range(30, 40);
        s.insert_range(21, 29);
        assert_eq!(ranges(&s), vec![(10, 40)]);
        s.insert_range(5, 9);
        s.insert_range(0, 2);
        assert_eq!(ranges(&s), vec![(0, 2), (5, 40)]);
        s.insert_range(1, 100);
        assert_eq!(ranges(&s), vec![(0, 100)]);
        assert_eq!(s.count(), 101);
    }

    #[test]
    fn remove_splits_ranges() {
        let mut s = RangeSet::from_range(0, 100);
        assert!(s.remove(50));
        assert!(!s.remove(50));
        s.remove_range(10, 20);
        s.remove_range(95, 200);
        assert_eq!(ranges(&s), vec![(0, 9), (21, 49), (51, 94)]);
        s.remove_range(0, 60);
        assert_eq!(ranges(&s), vec![(61, 94)]);
    }

    #[test]
    fn pop_first_walks_upwards() {
        let mut s = RangeSet::from_range(3, 4);
        s.insert(9);
        assert_eq!(s.pop_first(), Some(3));
        assert_eq!(s.pop_first(), Some(4));
        assert_eq!(s.pop_first(), Some(9));
        assert_eq!(s.pop_first(), None);
    }

    #[test]
    fn extremes_do_not_overflow() {
        let mut s = RangeSet::from_range(u128::MAX - 1, u128::MAX);
        s.insert_range(0, 0);
        assert!(s.contains(u128::MAX));
        s.remove(u128::MAX);
        assert_eq!(ranges(&s), vec![(0, 0), (u128::MAX - 1, u128::MAX - 1)]);
        let full = RangeSet::from_range(0, u128::MAX);
        assert_eq!(full.count(), u128::MAX);
    }

    #[test]
    fn intersection_and_intersects() {
        let a = RangeSet::from_sorted([1, 2, 3, 7, 8, 20]);
        let b = RangeSet::from_range(2, 7);
        assert_eq!(ranges(&a.intersection(&b)), vec![(2, 3), (7, 7)]);
        assert!(a.intersects_range(4, 7));
        assert!(!a.intersects_range(4, 6));
        assert!(a.contains_range(1, 3));
        assert!(!a.contains_range(1, 4));
    }

    proptest::proptest! {
        #[test]
        fn matches_a_plain_set(ops in proptest::collection::vec((0u8..8, 0u128..64, 0u128..8), 1..80)) {
            let mut set = RangeSet::new();
            let mut model = std::collections::BTreeSet::new();
            for (op, start, len) in ops {
                let end = start + len;
                match op {
                    0 => { set.insert_range(start, end); model.extend(start..=end); }
                    1 => { set.remove_range(start, end); for a in start..=end { model.remove(&a); } }
                    2 => { proptest::prop_assert_eq!(set.pop_first(), model.pop_first()); }
                    3 => { proptest::prop_assert_eq!(set.remove(start), model.remove(&start)); }
                    4 => { proptest::prop_assert_eq!(set.insert(start), model.insert(start)); }
                    5 => {
                        let hit = model.range(start..=end).next().is_some();
                        proptest::prop_assert_eq!(set.intersects_range(start, end), hit);
                        let all = (start..=end).all(|a| model.contains(&a));
                        proptest::prop_assert_eq!(set.contains_range(start, end), all);
                    }
                    6 => {
                        let other = RangeSet::from_range(start, end);
                        let both: Vec<u128> = model.range(start..=end).copied().collect();
                        let got: Vec<u128> = set.intersection(&other).iter().flat_map(|(s, e)| s..=e).collect();
                        proptest::prop_assert_eq!(got, both);
                    }
                    _ => {
                        // Splits a range from the inside.
                        let mid = start + len / 2;
                        proptest::prop_assert_eq!(set.remove(mid), model.remove(&mid));
                    }
                }
                proptest::prop_assert_eq!(set.first(), model.first().copied());
                proptest::prop_assert_eq!(set.contains(start), model.contains(&start));
                proptest::prop_assert_eq!(set.range_count(), ranges(&set).len());
                let stored = ranges(&set);
                for pair in stored.windows(2) {
                    proptest::prop_assert!(pair[0].1 + 1 < pair[1].0, "touching ranges {:?}", pair);
                }
                let expanded: Vec<u128> = stored.iter().flat_map(|&(s, e)| s..=e).collect();
                proptest::prop_assert_eq!(expanded, model.iter().copied().collect::<Vec<_>>());
                proptest::prop_assert_eq!(set.count(), model.len() as u128);
            }
        }
    }
}
