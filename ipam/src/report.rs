//! What subnet updates and rebuilds report back.

use std::net::IpAddr;

use crate::addr::Mac;
use crate::error::AllocError;
use crate::owner::Owner;

/// Why a live address stopped being valid after a subnet update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidReason {
    /// Outside the new usable range (CIDR shrunk or moved).
    OutOfRange,
    /// It is the new gateway.
    Gateway,
    /// It is now excluded (and was not a static allocation allowed to use
    /// excluded addresses).
    Excluded,
    /// The subnet no longer has a CIDR of its family.
    FamilyRemoved,
}

/// A live address dropped by a subnet update. The owner keeps its other
/// addresses; asking again fills the missing family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalidated {
    /// The holder that lost the address.
    pub owner: Owner,
    /// The dropped address.
    pub address: IpAddr,
    /// Why it was dropped.
    pub reason: InvalidReason,
}

/// The outcome of [`Ipam::add_or_update_subnet`](crate::Ipam::add_or_update_subnet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubnetUpdate {
    /// True when the subnet did not exist before.
    pub created: bool,
    /// Live addresses that the new spec no longer allows.
    pub invalidated: Vec<Invalidated>,
}

/// Why an existing allocation was not loaded by a rebuild.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RebuildProblem {
    /// An earlier entry already claims this address.
    AddressConflict {
        /// The contested address.
        address: IpAddr,
        /// The owner that keeps it (the earlier entry).
        kept: Owner,
    },
    /// An earlier entry already claims this MAC.
    MacConflict {
        /// The contested MAC.
        mac: Mac,
        /// The owner that keeps it.
        kept: Owner,
    },
    /// An earlier entry has the same owner.
    DuplicateOwner,
    /// The entry lists no address.
    NoAddress,
    /// The entry is invalid for the subnet (gateway, out of range...).
    Invalid(AllocError),
}

/// An entry a rebuild refused, whole: nothing of it was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The owner of the refused entry.
    pub owner: Owner,
    /// Why.
    pub problem: RebuildProblem,
}

/// The outcome of [`Ipam::rebuild`](crate::Ipam::rebuild).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebuildReport {
    /// Entries loaded.
    pub loaded: usize,
    /// Entries refused, in input order.
    pub rejected: Vec<Rejected>,
}
