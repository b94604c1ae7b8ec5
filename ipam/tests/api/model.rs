//! Model-based property test: random operation sequences run against the
//! IPAM and against a deliberately naive reference model (plain sets of
//! single addresses), compared after every step.

// Family-indexed loops (`for i in 0..2` over [v4, v6] arrays) read best here.
#![allow(clippy::needless_range_loop)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipam::{
    AllocError, Allocation, AllocationRequest, ExistingAllocation, Ipam, Mac, Owner, SubnetHandle,
    SubnetSpec,
};
use proptest::prelude::*;

const V4_BASE: u128 = 0x0a00_0000;
const V6_BASE: u128 = 0xfd00_u128 << 112;
/// (cidr, offset of its network address, prefix length)
const V4_CIDRS: &[(&str, u128, u32)] = &[
    ("10.0.0.0/29", 0, 29),
    ("10.0.0.0/28", 0, 28),
    ("10.0.0.8/29", 8, 29),
    ("10.0.0.4/31", 4, 31),
    ("10.0.0.6/32", 6, 32),
    ("10.0.0.0/30", 0, 30),
];
const V6_CIDRS: &[(&str, u128, u32)] = &[
    ("fd00::/125", 0, 125),
    ("fd00::/124", 0, 124),
    ("fd00::8/126", 8, 126),
    ("fd00::4/127", 4, 127),
    ("fd00::3/128", 3, 128),
];
const SUBNETS: [&str; 2] = ["s0", "s1"];
const OWNERS: usize = 6;

fn base(i: usize) -> u128 {
    [V4_BASE, V6_BASE][i]
}

fn text(i: usize, off: u8) -> String {
    if i == 0 {
        format!("10.0.0.{off}")
    } else {
        format!("fd00::{off:x}")
    }
}

fn ip(i: usize, value: u128) -> IpAddr {
    if i == 0 {
        IpAddr::V4(Ipv4Addr::from(value as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(value))
    }
}

fn owner(o: usize) -> Owner {
    Owner::new(format!("ns/p{o}"), "ovn")
}

#[derive(Debug, Clone)]
struct SpecChoice {
    cidr: [Option<usize>; 2],
    gateway: [Option<u8>; 2],
    /// (family index, start offset, length)
    excludes: Vec<(usize, u8, u8)>,
}

impl SpecChoice {
    fn spec(&self) -> SubnetSpec {
        let cidrs = [V4_CIDRS, V6_CIDRS];
        let cidr_block: Vec<&str> = (0..2)
            .filter_map(|i| self.cidr[i].map(|c| cidrs[i][c].0))
            .collect();
        let gateway: Vec<String> = (0..2)
            .filter_map(|i| self.gateway[i].map(|o| text(i, o)))
            .collect();
        let exclude_ips = self
            .excludes
            .iter()
            .map(|&(i, s, len)| match len {
                0 => text(i, s),
                _ => format!("{}..{}", text(i, s), text(i, s + len)),
            })
            .collect();
        SubnetSpec {
            cidr_block: cidr_block.join(","),
            gateway: gateway.join(","),
            exclude_ips,
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Upsert(usize, SpecChoice),
    Delete(usize),
    Alloc(usize, usize),
    Static(usize, usize, [Option<u8>; 2], bool),
    Release(usize, usize),
    Rebuild(usize, Vec<(usize, [Option<u8>; 2])>),
}

fn spec_choice() -> impl Strategy<Value = SpecChoice> {
    let cidr = (
        proptest::option::weighted(0.8, 0..V4_CIDRS.len()),
        proptest::option::weighted(0.5, 0..V6_CIDRS.len()),
    )
        .prop_map(|(a, b)| {
            if a.is_none() && b.is_none() {
                [Some(1), None]
            } else {
                [a, b]
            }
        });
    let gateway = [
        proptest::option::weighted(0.2, 0u8..18),
        proptest::option::weighted(0.2, 0u8..18),
    ];
    let excludes =
        proptest::collection::vec((0usize..2, 0u8..18, prop_oneof![Just(0u8), 1u8..5]), 0..3);
    (cidr, gateway, excludes).prop_map(|(cidr, gateway, excludes)| SpecChoice {
        cidr,
        gateway,
        excludes,
    })
}

fn addr_pair() -> impl Strategy<Value = [Option<u8>; 2]> {
    [
        proptest::option::of(0u8..18),
        proptest::option::weighted(0.3, 0u8..18),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let s = 0usize..2;
    let o = 0usize..OWNERS;
    prop_oneof![
        2 => (s.clone(), spec_choice()).prop_map(|(s, c)| Op::Upsert(s, c)),
        1 => s.clone().prop_map(Op::Delete),
        6 => (s.clone(), o.clone()).prop_map(|(s, o)| Op::Alloc(s, o)),
        3 => (s.clone(), o.clone(), addr_pair(), proptest::bool::weighted(0.3))
            .prop_map(|(s, o, a, x)| Op::Static(s, o, a, x)),
        4 => (s.clone(), o.clone()).prop_map(|(s, o)| Op::Release(s, o)),
        1 => (s, proptest::collection::vec((o, addr_pair()), 0..5)).prop_map(|(s, e)| Op::Rebuild(s, e)),
    ]
}

/// Mostly static and automatic allocations and releases, interleaved on
/// long runs (subnet updates and rebuilds rare): static allocations leave
/// the free sets lazily stale, which automatic allocation, delayed reuse
/// and usage must all see through.
fn churn_op() -> impl Strategy<Value = Op> {
    let s = 0usize..2;
    let o = 0usize..OWNERS;
    prop_oneof![
        1 => (s.clone(), spec_choice()).prop_map(|(s, c)| Op::Upsert(s, c)),
        8 => (s.clone(), o.clone()).prop_map(|(s, o)| Op::Alloc(s, o)),
        8 => (s.clone(), o.clone(), addr_pair(), proptest::bool::weighted(0.2))
            .prop_map(|(s, o, a, x)| Op::Static(s, o, a, x)),
        8 => (s.clone(), o.clone()).prop_map(|(s, o)| Op::Release(s, o)),
        1 => (s, proptest::collection::vec((o, addr_pair()), 0..5)).prop_map(|(s, e)| Op::Rebuild(s, e)),
    ]
}

/// Which error, without its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    OutOfRange,
    Gateway,
    Taken,
    Excluded,
    Exhausted,
    Unknown,
}

fn kind(e: &AllocError) -> Kind {
    match e {
        AllocError::AddressOutOfRange { .. } => Kind::OutOfRange,
        AllocError::AddressIsGateway { .. } => Kind::Gateway,
        AllocError::AddressTaken { .. } => Kind::Taken,
        AllocError::AddressExcluded { .. } => Kind::Excluded,
        AllocError::Exhausted { .. } => Kind::Exhausted,
        AllocError::UnknownSubnet { .. } => Kind::Unknown,
        other => panic!("unexpected error {other}"),
    }
}

#[derive(Debug, Clone)]
struct MFam {
    first: u128,
    last: u128,
    net: u128,
    bcast: u128,
    gw: u128,
    excluded: BTreeSet<u128>,
    allocatable: BTreeSet<u128>,
}

#[derive(Debug, Clone, Default)]
struct MSubnet {
    fams: [Option<MFam>; 2],
    owners: BTreeMap<usize, [Option<u128>; 2]>,
    excl_ok: BTreeSet<(usize, u128)>,
    fresh: [BTreeSet<u128>; 2],
    released: [BTreeSet<u128>; 2],
}

/// Builds the model of a spec, or None when the IPAM must refuse it.
fn model_config(c: &SpecChoice) -> Option<[Option<MFam>; 2]> {
    let tables = [V4_CIDRS, V6_CIDRS];
    let mut fams: [Option<MFam>; 2] = [None, None];
    for i in 0..2 {
        let Some(idx) = c.cidr[i] else { continue };
        let (_, off, prefix) = tables[i][idx];
        let bits = [32, 128][i];
        let net = base(i) + off;
        let bcast = net + (1u128 << (bits - prefix)) - 1;
        let (first, last) = if bits - prefix <= 1 {
            (net, bcast)
        } else {
            (net + 1, bcast - 1)
        };
        fams[i] = Some(MFam {
            first,
            last,
            net,
            bcast,
            gw: first,
            excluded: BTreeSet::new(),
            allocatable: BTreeSet::new(),
        });
    }
    for i in 0..2 {
        if let Some(o) = c.gateway[i] {
            let f = fams[i].as_mut()?;
            let g = base(i) + u128::from(o);
            if g < f.net || g > f.bcast {
                return None;
            }
            f.gw = g;
        }
    }
    for &(i, s, len) in &c.excludes {
        let f = fams[i].as_mut()?;
        let (s, e) = (base(i) + u128::from(s), base(i) + u128::from(s + len));
        let clipped: Vec<u128> = (s..=e).filter(|a| (f.net..=f.bcast).contains(a)).collect();
        if clipped.is_empty() {
            return None;
        }
        f.excluded.extend(clipped);
    }
    for f in fams.iter_mut().flatten() {
        f.allocatable = (f.first..=f.last)
            .filter(|a| *a != f.gw && !f.excluded.contains(a))
            .collect();
    }
    Some(fams)
}

impl MSubnet {
    fn holder(&self, i: usize, a: u128) -> Option<usize> {
        self.owners
            .iter()
            .find(|(_, h)| h[i] == Some(a))
            .map(|(o, _)| *o)
    }

    fn reset_free(&mut self) {
        for i in 0..2 {
            self.released[i].clear();
            self.fresh[i].clear();
            if let Some(f) = &self.fams[i] {
                let used: BTreeSet<u128> = self.owners.values().filter_map(|h| h[i]).collect();
                self.fresh[i] = f.allocatable.difference(&used).copied().collect();
            }
        }
    }

    fn reconfigure(&mut self, fams: [Option<MFam>; 2]) -> BTreeSet<(usize, u128)> {
        self.fams = fams;
        let mut invalid = BTreeSet::new();
        for (o, held) in self.owners.iter_mut() {
            for i in 0..2 {
                let Some(a) = held[i] else { continue };
                let ok = self.fams[i].as_ref().is_some_and(|f| {
                    (f.first..=f.last).contains(&a)
                        && a != f.gw
                        && (!f.excluded.contains(&a) || self.excl_ok.contains(&(i, a)))
                });
                if !ok {
                    held[i] = None;
                    self.excl_ok.remove(&(i, a));
                    invalid.insert((*o, a));
                }
            }
        }
        self.owners.retain(|_, h| h[0].is_some() || h[1].is_some());
        self.reset_free();
        invalid
    }

    fn free(&mut self, i: usize, a: u128) {
        self.excl_ok.remove(&(i, a));
        if self.fams[i]
            .as_ref()
            .is_some_and(|f| f.allocatable.contains(&a))
        {
            self.released[i].insert(a);
        }
    }

    fn allocate(
        &mut self,
        o: usize,
        statics: [Option<u128>; 2],
        allow: bool,
    ) -> Result<[Option<u128>; 2], Kind> {
        for i in 0..2 {
            if statics[i].is_some() && self.fams[i].is_none() {
                return Err(Kind::OutOfRange);
            }
        }
        let held = self.owners.get(&o).copied();
        let mut picks: [Option<(u128, bool)>; 2] = [None, None];
        for i in 0..2 {
            let Some(f) = &self.fams[i] else { continue };
            let h = held.and_then(|h| h[i]);
            match (statics[i], h) {
                (Some(s), Some(h)) if s == h => {}
                (Some(s), _) => {
                    if !(f.first..=f.last).contains(&s) {
                        return Err(Kind::OutOfRange);
                    }
                    if s == f.gw {
                        return Err(Kind::Gateway);
                    }
                    if self.holder(i, s).is_some() {
                        return Err(Kind::Taken);
                    }
                    if f.excluded.contains(&s) && !allow {
                        return Err(Kind::Excluded);
                    }
                    picks[i] = Some((s, true));
                }
                (None, Some(_)) => {}
                (None, None) => {
                    let next = self.fresh[i]
                        .first()
                        .or(self.released[i].first())
                        .ok_or(Kind::Exhausted)?;
                    picks[i] = Some((*next, false));
                }
            }
        }
        let mut now = held.unwrap_or([None, None]);
        for i in 0..2 {
            let Some((a, is_static)) = picks[i] else {
                continue;
            };
            if let Some(old) = now[i] {
                self.free(i, old);
            }
            if is_static {
                self.fresh[i].remove(&a);
                self.released[i].remove(&a);
                if allow
                    && self.fams[i]
                        .as_ref()
                        .is_some_and(|f| f.excluded.contains(&a))
                {
                    self.excl_ok.insert((i, a));
                }
            } else {
                if self.fresh[i].is_empty() {
                    std::mem::swap(&mut self.fresh[i], &mut self.released[i]);
                }
                assert_eq!(self.fresh[i].pop_first(), Some(a));
            }
            now[i] = Some(a);
        }
        self.owners.insert(o, now);
        Ok(now)
    }

    fn release(&mut self, o: usize) {
        if let Some(held) = self.owners.remove(&o) {
            for i in 0..2 {
                if let Some(a) = held[i] {
                    self.free(i, a);
                }
            }
        }
    }

    /// Returns (loaded, rejected owners in order).
    fn rebuild(&mut self, entries: &[(usize, [Option<u128>; 2])]) -> (usize, Vec<usize>) {
        self.owners.clear();
        self.excl_ok.clear();
        let mut rejected = Vec::new();
        for &(o, addrs) in entries {
            let ok = !self.owners.contains_key(&o)
                && (addrs[0].is_some() || addrs[1].is_some())
                && (0..2).all(|i| addrs[i].is_none() || self.fams[i].is_some())
                && (0..2).all(|i| {
                    let (Some(a), Some(f)) = (addrs[i], &self.fams[i]) else {
                        return true;
                    };
                    (f.first..=f.last).contains(&a) && a != f.gw && self.holder(i, a).is_none()
                });
            if ok {
                self.owners.insert(o, addrs);
                for i in 0..2 {
                    if let Some(a) = addrs[i] {
                        self.excl_ok.insert((i, a));
                    }
                }
            } else {
                rejected.push(o);
            }
        }
        self.reset_free();
        (entries.len() - rejected.len(), rejected)
    }
}

/// `a-b,c` form of a model set, written independently of the crate.
fn format_set(i: usize, set: &BTreeSet<u128>) -> String {
    let mut parts: Vec<(u128, u128)> = Vec::new();
    for &a in set {
        match parts.last_mut() {
            Some((_, e)) if *e + 1 == a => *e = a,
            _ => parts.push((a, a)),
        }
    }
    parts
        .iter()
        .map(|&(s, e)| {
            if s == e {
                ip(i, s).to_string()
            } else {
                format!("{}-{}", ip(i, s), ip(i, e))
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[derive(Default)]
struct Harness {
    ipam: Ipam,
    model: [Option<MSubnet>; 2],
    macs: [BTreeMap<usize, Mac>; 2],
    /// A handle per subnet, taken when it was (re)created and kept after
    /// its deletion: odd owners go through it, so a stale handle must
    /// answer like the by-name calls on an unknown subnet.
    handles: [Option<SubnetHandle>; 2],
}

impl Harness {
    fn release(&self, s: usize, o: usize) -> Result<Option<Allocation>, AllocError> {
        match &self.handles[s] {
            Some(h) if o % 2 == 1 => h.release(&owner(o)),
            _ => self.ipam.release(SUBNETS[s], &owner(o)),
        }
    }

    fn alloc(&self, s: usize, o: usize, req: &AllocationRequest) -> Result<Allocation, AllocError> {
        match &self.handles[s] {
            Some(h) if o % 2 == 1 => h.allocate(&owner(o), req),
            _ => self.ipam.allocate(SUBNETS[s], &owner(o), req),
        }
    }

    fn step(&mut self, op: &Op) {
        match op {
            Op::Upsert(s, c) => self.upsert(*s, c),
            Op::Delete(s) => {
                assert_eq!(
                    self.ipam.delete_subnet(SUBNETS[*s]),
                    self.model[*s].take().is_some()
                );
                self.macs[*s].clear();
            }
            Op::Alloc(s, o) => self.allocate(*s, *o, [None, None], false),
            Op::Static(s, o, offs, allow) => {
                let statics = [0, 1].map(|i| offs[i].map(|off| base(i) + u128::from(off)));
                self.allocate(*s, *o, statics, *allow)
            }
            Op::Release(s, o) => {
                let got = self.release(*s, *o);
                match &mut self.model[*s] {
                    None => assert!(matches!(got, Err(AllocError::UnknownSubnet { .. }))),
                    Some(m) => {
                        assert_eq!(got.unwrap().is_some(), m.owners.contains_key(o));
                        m.release(*o);
                        self.macs[*s].remove(o);
                    }
                }
            }
            Op::Rebuild(s, entries) => self.rebuild(*s, entries),
        }
        self.check();
    }

    fn upsert(&mut self, s: usize, c: &SpecChoice) {
        let got = self.ipam.add_or_update_subnet(SUBNETS[s], &c.spec());
        let Some(fams) = model_config(c) else {
            assert!(got.is_err(), "{:?} accepted", c.spec());
            return;
        };
        let update = got.unwrap_or_else(|e| panic!("{:?} refused: {e}", c.spec()));
        if update.created {
            self.handles[s] = Some(self.ipam.subnet(SUBNETS[s]).expect("subnet just added"));
        }
        let m = self.model[s].get_or_insert_with(MSubnet::default);
        assert_eq!(update.created, m.fams.iter().all(Option::is_none));
        let expected = m.reconfigure(fams);
        let reported: BTreeSet<(usize, u128)> = update
            .invalidated
            .iter()
            .map(|inv| {
                let o: usize = inv.owner.pod[4..].parse().unwrap();
                let v = match inv.address {
                    IpAddr::V4(a) => u128::from(u32::from(a)),
                    IpAddr::V6(a) => u128::from(a),
                };
                (o, v)
            })
            .collect();
        assert_eq!(reported, expected);
        let held: BTreeSet<usize> = m.owners.keys().copied().collect();
        self.macs[s].retain(|o, _| held.contains(o));
    }

    fn allocate(&mut self, s: usize, o: usize, statics: [Option<u128>; 2], allow: bool) {
        let addresses: Vec<IpAddr> = (0..2)
            .filter_map(|i| statics[i].map(|v| ip(i, v)))
            .collect();
        let req = AllocationRequest {
            allow_excluded: allow,
            ..AllocationRequest::with_addresses(addresses)
        };
        let got = self.alloc(s, o, &req);
        let Some(m) = &mut self.model[s] else {
            assert_eq!(got.map_err(|e| kind(&e)), Err(Kind::Unknown));
            return;
        };
        let want = m.allocate(o, statics, allow);
        match (got, want) {
            (Ok(a), Ok(w)) => {
                assert_eq!(a.v4.map(|v| u128::from(u32::from(v))), w[0]);
                assert_eq!(a.v6.map(u128::from), w[1]);
                let mac = a.mac.expect("generated MAC");
                let known = self.macs[s].entry(o).or_insert(mac);
                assert_eq!(*known, mac, "MAC changed for the same owner");
            }
            (got, want) => assert_eq!(got.map(|_| ()).map_err(|e| kind(&e)), want.map(|_| ())),
        }
    }

    fn rebuild(&mut self, s: usize, entries: &[(usize, [Option<u8>; 2])]) {
        let values: Vec<(usize, [Option<u128>; 2])> = entries
            .iter()
            .map(|(o, offs)| {
                (
                    *o,
                    [0, 1].map(|i| offs[i].map(|off| base(i) + u128::from(off))),
                )
            })
            .collect();
        let input = values.iter().map(|(o, v)| ExistingAllocation {
            owner: owner(*o),
            addresses: (0..2).filter_map(|i| v[i].map(|a| ip(i, a))).collect(),
            mac: None,
        });
        let got = self.ipam.rebuild(SUBNETS[s], input);
        let Some(m) = &mut self.model[s] else {
            assert!(matches!(got, Err(AllocError::UnknownSubnet { .. })));
            return;
        };
        let report = got.unwrap();
        let (loaded, rejected) = m.rebuild(&values);
        assert_eq!(report.loaded, loaded);
        let got_rejected: Vec<usize> = report
            .rejected
            .iter()
            .map(|r| r.owner.pod[4..].parse().unwrap())
            .collect();
        assert_eq!(got_rejected, rejected);
        self.macs[s].clear();
    }

    fn check(&self) {
        for (s, m) in self.model.iter().enumerate() {
            let name = SUBNETS[s];
            let Some(m) = m else {
                assert!(self.ipam.subnet_usage(name).is_err());
                continue;
            };
            let mut macs = BTreeSet::new();
            let got: BTreeMap<usize, [Option<u128>; 2]> = self
                .ipam
                .allocations(name)
                .unwrap()
                .into_iter()
                .map(|(o, a)| {
                    if let Some(mac) = a.mac {
                        assert!(macs.insert(mac), "MAC {mac} held twice");
                    }
                    let v = [a.v4.map(|v| u128::from(u32::from(v))), a.v6.map(u128::from)];
                    (o.pod[4..].parse().unwrap(), v)
                })
                .collect();
            assert_eq!(got, m.owners, "allocations of {name}");
            let usage = self.ipam.subnet_usage(name).unwrap();
            for (i, fu) in [&usage.v4, &usage.v6].into_iter().enumerate() {
                let used: BTreeSet<u128> = m.owners.values().filter_map(|h| h[i]).collect();
                assert_eq!(
                    used.len(),
                    m.owners.values().filter(|h| h[i].is_some()).count(),
                    "address owned twice"
                );
                let free: BTreeSet<u128> = m.fresh[i].union(&m.released[i]).copied().collect();
                assert_eq!(fu.using, used.len() as u128);
                assert_eq!(fu.available, free.len() as u128);
                assert_eq!(fu.using_range, format_set(i, &used));
                assert_eq!(fu.available_range, format_set(i, &free));
                if let Some(f) = &m.fams[i] {
                    for a in &used {
                        assert_ne!(*a, f.gw, "gateway handed out");
                        assert!(
                            !f.excluded.contains(a) || m.excl_ok.contains(&(i, *a)),
                            "excluded handed out"
                        );
                        assert!(self.ipam.owner_of(name, ip(i, *a)).unwrap().is_some());
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn ipam_matches_reference_model(ops in proptest::collection::vec(op(), 1..80)) {
        let mut h = Harness::default();
        for op in &ops {
            h.step(op);
        }
    }

    #[test]
    fn static_and_automatic_churn_matches_reference_model(
        ops in proptest::collection::vec(churn_op(), 1..250)
    ) {
        let mut h = Harness::default();
        for op in &ops {
            h.step(op);
        }
    }
}
