//! In-memory IP address management with Kube-OVN's semantics.
//!
//! An [`Ipam`] holds subnets (IPv4, IPv6 or dual stack, in the format of a
//! Kube-OVN `Subnet`'s `cidrBlock`, `gateway` and `excludeIps`, see
//! [`SubnetSpec`]), named IP pools inside them ([`PoolSpec`]), and
//! allocations keyed by [`Owner`] (pod `namespace/name` plus NIC/provider).
//!
//! # Semantics
//! * Automatic allocation hands out the lowest never-used address of the
//!   pool; released addresses are reused only once those run out (delayed
//!   reuse, as Kube-OVN does).
//! * A requested (static) address is refused with a distinct error when it
//!   is the gateway ([`AllocError::AddressIsGateway`]), held by another
//!   owner ([`AllocError::AddressTaken`]), outside the usable range
//!   ([`AllocError::AddressOutOfRange`]) or excluded
//!   ([`AllocError::AddressExcluded`], unless the request allows it).
//! * Every owner gets a random locally administered unicast MAC, unique in
//!   the subnet, or the one it asks for.
//! * Asking again returns what the owner holds. Dual stack takes both
//!   families or neither. A failed call changes nothing.
//! * Updating a subnet keeps live addresses still valid and reports the
//!   rest ([`SubnetUpdate::invalidated`]); [`Ipam::rebuild`] reloads
//!   allocations and reports conflicting entries instead of merging them.
//! * [`Usage`] gives Kube-OVN's status figures (`v4availableIPs`,
//!   `v4usingIPrange`, ...).
//!
//! # Cost
//! Free space is kept as interval sets over `u128` (see `range_set.rs`),
//! live addresses, owners and MACs in hash maps, so memory grows with the
//! number of allocations and fragments, never with the subnet size: a /8
//! costs what a /24 does.
//! * Automatic allocation and release: `O(1)` expected (one hash of the
//!   owner per call, no heap allocation once the maps have grown); the
//!   lowest free range sits outside the interval set's B-tree, so taking
//!   the next address and giving back the last one touch no tree node.
//! * Static allocation and release: `O(1)` expected. A requested address
//!   is not carved out of the free interval sets: it is only recorded as
//!   live, and on release it goes to a hash set of pending released
//!   addresses. Automatic allocation skips the live and pending addresses
//!   it meets at the front of the free sets, and files the pending ones
//!   into the released set before reusing released addresses (at most
//!   `O(log r)` each, `r` the number of free ranges). A pending set
//!   larger than both 16,384 entries and the number of live addresses is
//!   filed at once, so its memory stays within a constant of theirs.
//! * Usage figures and pool rebuilds sort the live addresses:
//!   `O(n log n)`.
//!
//! # Example
//! ```
//! use ipam::{AllocationRequest, Ipam, Owner, SubnetSpec};
//!
//! let ipam = Ipam::new();
//! let mut spec = SubnetSpec::new("10.16.0.0/16,fd00:10:16::/112");
//! spec.exclude_ips = vec!["10.16.0.2..10.16.0.10".into()];
//! ipam.add_or_update_subnet("ovn-default", &spec).unwrap();
//!
//! let owner = Owner::new("default/web-0", "ovn");
//! let a = ipam.allocate("ovn-default", &owner, &AllocationRequest::next_free()).unwrap();
//! assert_eq!(a.ip_address_annotation(), "10.16.0.11,fd00:10:16::2");
//! // Asking again returns the same allocation.
//! assert_eq!(ipam.allocate("ovn-default", &owner, &AllocationRequest::next_free()).unwrap(), a);
//! ```

mod addr;
mod alloc;
mod error;
mod handle;
mod hash;
mod ipam;
mod owner;
mod owner_table;
mod range_set;
mod report;
mod spec;
mod subnet;
mod usage;

pub use addr::{IpFamily, Mac};
pub use error::{AllocError, SpecError};
pub use handle::SubnetHandle;
pub use ipam::Ipam;
pub use owner::{Allocation, AllocationRequest, ExistingAllocation, MacRequest, Owner};
pub use range_set::RangeSet;
pub use report::{
    InvalidReason, Invalidated, RebuildProblem, RebuildReport, Rejected, SubnetUpdate,
};
pub use spec::{PoolSpec, SubnetSpec};
pub use usage::{FamilyUsage, PoolStatusUsage, SubnetStatusUsage, Usage};
