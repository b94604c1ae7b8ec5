//! A handle on one subnet, resolved once by name.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::error::AllocError;
use crate::ipam::lock;
use crate::owner::{Allocation, AllocationRequest, Owner};
use crate::subnet::Subnet;

/// One subnet of an [`Ipam`](crate::Ipam), from
/// [`Ipam::subnet`](crate::Ipam::subnet).
///
/// Calls through a handle take only the subnet's own lock: a worker that
/// allocates for many pods of one subnet skips the name lookup and the
/// subnet map's lock on each. The handle stays valid while the subnet
/// exists; after [`Ipam::delete_subnet`](crate::Ipam::delete_subnet) every
/// call answers [`AllocError::UnknownSubnet`] (a subnet re-added under the
/// same name is a new subnet that needs a new handle).
#[derive(Debug, Clone)]
pub struct SubnetHandle {
    name: Arc<str>,
    subnet: Arc<Mutex<Subnet>>,
}

impl SubnetHandle {
    pub(crate) fn new(name: &str, subnet: Arc<Mutex<Subnet>>) -> SubnetHandle {
        SubnetHandle {
            name: name.into(),
            subnet,
        }
    }

    /// The subnet's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Locks the subnet, unless it was deleted. Each call below returns
    /// its subnet call's value directly (no closure and no nested
    /// `Result`, which cost one more copy of the allocation).
    fn lock(&self) -> Result<MutexGuard<'_, Subnet>, AllocError> {
        let subnet = lock(&self.subnet);
        if subnet.deleted {
            return Err(self.deleted());
        }
        Ok(subnet)
    }

    #[cold]
    fn deleted(&self) -> AllocError {
        AllocError::UnknownSubnet {
            subnet: self.name.to_string(),
        }
    }

    /// [`Ipam::allocate`](crate::Ipam::allocate) on this subnet.
    pub fn allocate(
        &self,
        owner: &Owner,
        req: &AllocationRequest,
    ) -> Result<Allocation, AllocError> {
        self.lock()?.allocate(owner, req)
    }

    /// [`Ipam::release`](crate::Ipam::release) on this subnet.
    pub fn release(&self, owner: &Owner) -> Result<Option<Allocation>, AllocError> {
        Ok(self.lock()?.release(owner))
    }

    /// [`Ipam::get`](crate::Ipam::get) on this subnet.
    pub fn get(&self, owner: &Owner) -> Result<Option<Allocation>, AllocError> {
        Ok(self.lock()?.get(owner))
    }
}
