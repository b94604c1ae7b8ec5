//! The thread-safe entry point: a map of subnets, each behind its own lock.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use hashbrown::HashTable;

use crate::error::{AllocError, SpecError};
use crate::handle::SubnetHandle;
use crate::hash::FastBuildHasher;
use crate::owner::{Allocation, AllocationRequest, ExistingAllocation, Owner};
use crate::report::{RebuildReport, SubnetUpdate};
use crate::spec::{parse_pool, PoolSpec, SubnetConfig, SubnetSpec};
use crate::subnet::Subnet;
use crate::usage::Usage;

/// In-memory IPAM for many subnets, shared by many worker threads.
///
/// The subnet map sits behind a read-write lock taken for writing only to
/// add or delete a subnet; every other call takes it for reading plus the
/// one subnet's mutex, so work on different subnets runs in parallel.
#[derive(Debug, Default)]
pub struct Ipam {
    subnets: RwLock<Subnets>,
}

/// Subnets by name. A `HashMap<String, _>` would hash every looked-up
/// name through std's `write_str`, which is not inlined and adds a byte;
/// this table hashes the name's bytes in one inlined pass.
#[derive(Debug, Default)]
struct Subnets {
    hasher: FastBuildHasher,
    table: HashTable<(Box<str>, Arc<Mutex<Subnet>>)>,
}

impl Subnets {
    #[inline]
    fn get(&self, name: &str) -> Option<&Arc<Mutex<Subnet>>> {
        let hash = self.hasher.hash_str(name);
        self.table
            .find(hash, |(n, _)| **n == *name)
            .map(|(_, subnet)| subnet)
    }

    /// Adds a subnet under a name that is not in the table.
    fn insert(&mut self, name: &str, subnet: Arc<Mutex<Subnet>>) {
        let hasher = &self.hasher;
        self.table
            .insert_unique(hasher.hash_str(name), (name.into(), subnet), |(n, _)| {
                hasher.hash_str(n)
            });
    }

    fn remove(&mut self, name: &str) -> Option<Arc<Mutex<Subnet>>> {
        let hash = self.hasher.hash_str(name);
        let entry = self.table.find_entry(hash, |(n, _)| **n == *name).ok()?;
        Some(entry.remove().0 .1)
    }

    fn names(&self) -> impl Iterator<Item = &str> {
        self.table.iter().map(|(n, _)| &**n)
    }
}

/// [`AllocError::UnknownSubnet`], kept off the hot paths.
#[cold]
fn unknown_subnet(name: &str) -> AllocError {
    AllocError::UnknownSubnet {
        subnet: name.to_owned(),
    }
}

/// Locks a subnet. A panic while holding the lock cannot leave a subnet
/// half-changed (all checks run before any change), so poisoning is ignored.
pub(crate) fn lock(subnet: &Mutex<Subnet>) -> MutexGuard<'_, Subnet> {
    subnet.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Ipam {
    /// An IPAM with no subnets.
    pub fn new() -> Ipam {
        Ipam::default()
    }

    fn with_subnet<T, E>(
        &self,
        name: &str,
        unknown: impl FnOnce() -> E,
        f: impl FnOnce(&mut Subnet) -> Result<T, E>,
    ) -> Result<T, E> {
        let map = self.subnets.read().unwrap_or_else(PoisonError::into_inner);
        let subnet = map.get(name).ok_or_else(unknown)?;
        let mut guard = lock(subnet);
        f(&mut guard)
    }

    fn with_subnet_alloc<T>(
        &self,
        name: &str,
        f: impl FnOnce(&mut Subnet) -> Result<T, AllocError>,
    ) -> Result<T, AllocError> {
        self.with_subnet(name, || unknown_subnet(name), f)
    }

    /// Adds a subnet, or updates one: live addresses the new spec still
    /// allows are kept; the others are dropped and reported.
    pub fn add_or_update_subnet(
        &self,
        name: &str,
        spec: &SubnetSpec,
    ) -> Result<SubnetUpdate, SpecError> {
        let config = SubnetConfig::parse(name, spec)?;
        {
            let map = self.subnets.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(subnet) = map.get(name) {
                let invalidated = lock(subnet).reconfigure(config);
                for inv in &invalidated {
                    tracing::info!(subnet = name, owner = %inv.owner, address = %inv.address, reason = ?inv.reason, "subnet update invalidated an address");
                }
                return Ok(SubnetUpdate {
                    created: false,
                    invalidated,
                });
            }
        }
        let mut map = self.subnets.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(subnet) = map.get(name) {
            // Added by another thread between the two locks.
            let invalidated = lock(subnet).reconfigure(config);
            return Ok(SubnetUpdate {
                created: false,
                invalidated,
            });
        }
        map.insert(name, Arc::new(Mutex::new(Subnet::new(name, config))));
        tracing::debug!(subnet = name, "subnet added");
        Ok(SubnetUpdate {
            created: true,
            invalidated: Vec::new(),
        })
    }

    /// Deletes a subnet and all its allocations; false if it was unknown.
    pub fn delete_subnet(&self, name: &str) -> bool {
        let mut map = self.subnets.write().unwrap_or_else(PoisonError::into_inner);
        match map.remove(name) {
            Some(subnet) => {
                // Handles may outlive the map entry; they must see the end.
                lock(&subnet).deleted = true;
                true
            }
            None => false,
        }
    }

    /// A handle on one subnet, for callers that work on it repeatedly:
    /// its calls skip the subnet-name lookup. Once the subnet is deleted,
    /// the handle answers [`AllocError::UnknownSubnet`], even if a subnet
    /// of the same name is added again.
    pub fn subnet(&self, name: &str) -> Result<SubnetHandle, AllocError> {
        let map = self.subnets.read().unwrap_or_else(PoisonError::into_inner);
        match map.get(name) {
            Some(subnet) => Ok(SubnetHandle::new(name, Arc::clone(subnet))),
            None => Err(unknown_subnet(name)),
        }
    }

    /// Names of all subnets, sorted.
    pub fn subnet_names(&self) -> Vec<String> {
        let map = self.subnets.read().unwrap_or_else(PoisonError::into_inner);
        let mut names: Vec<String> = map.names().map(str::to_owned).collect();
        names.sort();
        names
    }

    /// Adds or replaces a named IP pool of a subnet. Its addresses are
    /// carved out of the default pool; named pools may not overlap.
    pub fn add_or_update_pool(
        &self,
        subnet: &str,
        pool: &str,
        spec: &PoolSpec,
    ) -> Result<(), SpecError> {
        let unknown = || SpecError::UnknownSubnet {
            subnet: subnet.to_owned(),
        };
        self.with_subnet(subnet, unknown, |s| {
            let ranges = parse_pool(subnet, pool, spec, &s.config())?;
            s.set_pool(pool, ranges)
        })
    }

    /// Deletes a named pool; its addresses return to the default pool.
    pub fn delete_pool(&self, subnet: &str, pool: &str) -> Result<(), SpecError> {
        let unknown = || SpecError::UnknownSubnet {
            subnet: subnet.to_owned(),
        };
        self.with_subnet(subnet, unknown, |s| {
            if s.remove_pool(pool) {
                Ok(())
            } else {
                Err(SpecError::UnknownPool {
                    subnet: subnet.to_owned(),
                    pool: pool.to_owned(),
                })
            }
        })
    }

    /// Allocates addresses (and a MAC) for `owner`; asking again returns
    /// the same allocation. On error nothing changes.
    pub fn allocate(
        &self,
        subnet: &str,
        owner: &Owner,
        req: &AllocationRequest,
    ) -> Result<Allocation, AllocError> {
        // Written out rather than through `with_subnet`: the closure's
        // extra `Result` moves cost measurably on this path.
        let map = self.subnets.read().unwrap_or_else(PoisonError::into_inner);
        match map.get(subnet) {
            Some(s) => lock(s).allocate(owner, req),
            None => Err(unknown_subnet(subnet)),
        }
    }

    /// Releases what `owner` holds in `subnet`; `None` if it held nothing
    /// (releasing twice is not an error, like CNI DEL).
    pub fn release(&self, subnet: &str, owner: &Owner) -> Result<Option<Allocation>, AllocError> {
        let map = self.subnets.read().unwrap_or_else(PoisonError::into_inner);
        match map.get(subnet) {
            Some(s) => Ok(lock(s).release(owner)),
            None => Err(unknown_subnet(subnet)),
        }
    }

    /// What `owner` holds in `subnet`.
    pub fn get(&self, subnet: &str, owner: &Owner) -> Result<Option<Allocation>, AllocError> {
        self.with_subnet_alloc(subnet, |s| Ok(s.get(owner)))
    }

    /// Who holds `address` in `subnet`.
    pub fn owner_of(&self, subnet: &str, address: IpAddr) -> Result<Option<Owner>, AllocError> {
        self.with_subnet_alloc(subnet, |s| Ok(s.owner_of(address)))
    }

    /// Every allocation of a subnet, sorted by owner.
    pub fn allocations(&self, subnet: &str) -> Result<Vec<(Owner, Allocation)>, AllocError> {
        self.with_subnet_alloc(subnet, |s| {
            let mut all = Vec::with_capacity(s.owners.len());
            all.extend(s.owners.iter().map(|(_, r)| (r.owner().clone(), r.alloc)));
            all.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(all)
        })
    }

    /// Replaces a subnet's allocations with `entries` (read from pod
    /// annotations and IP objects at start-up). Entries that conflict with
    /// an earlier one or are invalid are refused whole and reported.
    pub fn rebuild(
        &self,
        subnet: &str,
        entries: impl IntoIterator<Item = ExistingAllocation>,
    ) -> Result<RebuildReport, AllocError> {
        self.with_subnet_alloc(subnet, |s| {
            let report = s.rebuild(entries);
            for r in &report.rejected {
                tracing::warn!(subnet, owner = %r.owner, problem = ?r.problem, "rebuild refused an allocation");
            }
            Ok(report)
        })
    }

    /// Usage of a whole subnet.
    pub fn subnet_usage(&self, subnet: &str) -> Result<Usage, AllocError> {
        self.with_subnet_alloc(subnet, |s| Ok(s.usage(None)))
    }

    /// Usage of one pool of a subnet (`""` is the default pool).
    pub fn pool_usage(&self, subnet: &str, pool: &str) -> Result<Usage, AllocError> {
        self.with_subnet_alloc(subnet, |s| {
            let idx = s
                .pool_index(Some(pool))
                .ok_or_else(|| AllocError::UnknownPool {
                    subnet: subnet.to_owned(),
                    pool: pool.to_owned(),
                })?;
            Ok(s.usage(Some(idx)))
        })
    }
}
