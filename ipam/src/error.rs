//! Errors, grouped by operation: configuring subnets and pools
//! ([`SpecError`]) and allocating addresses ([`AllocError`]). Every variant
//! names the subnet and the offending value. After any error, nothing stored
//! in the [`Ipam`](crate::Ipam) has changed.

use std::net::IpAddr;

use crate::addr::{IpFamily, Mac};
use crate::owner::Owner;

/// A subnet or IP pool specification was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// `cidrBlock` is empty.
    #[error("subnet {subnet}: cidrBlock is empty")]
    EmptyCidrBlock {
        /// Subnet name.
        subnet: String,
    },
    /// A `cidrBlock` entry is not a CIDR.
    #[error("subnet {subnet}: invalid CIDR {cidr:?}")]
    InvalidCidr {
        /// Subnet name.
        subnet: String,
        /// The offending entry.
        cidr: String,
    },
    /// `cidrBlock` has two CIDRs of one family.
    #[error("subnet {subnet}: cidrBlock {cidr_block:?} has more than one {family} CIDR")]
    DuplicateFamily {
        /// Subnet name.
        subnet: String,
        /// The whole `cidrBlock`.
        cidr_block: String,
        /// The repeated family.
        family: IpFamily,
    },
    /// The gateway is not an address of one of the subnet's CIDRs.
    #[error("subnet {subnet}: invalid gateway {gateway:?}: {reason}")]
    InvalidGateway {
        /// Subnet name.
        subnet: String,
        /// The offending gateway entry.
        gateway: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// An `excludeIps` entry cannot be parsed.
    #[error("subnet {subnet}: invalid excludeIps entry {entry:?}: {reason}")]
    InvalidExclude {
        /// Subnet name.
        subnet: String,
        /// The offending entry.
        entry: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// An `excludeIps` entry lies entirely outside the subnet's CIDRs.
    #[error("subnet {subnet}: excludeIps entry {entry:?} is outside every CIDR of the subnet")]
    ExcludeOutsideCidr {
        /// Subnet name.
        subnet: String,
        /// The offending entry.
        entry: String,
    },
    /// An IP pool entry cannot be parsed.
    #[error("subnet {subnet}: pool {pool}: invalid entry {entry:?}: {reason}")]
    InvalidPoolEntry {
        /// Subnet name.
        subnet: String,
        /// Pool name.
        pool: String,
        /// The offending entry.
        entry: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// An IP pool entry lies entirely outside the subnet's CIDRs.
    #[error("subnet {subnet}: pool {pool}: entry {entry:?} is outside every CIDR of the subnet")]
    PoolEntryOutsideCidr {
        /// Subnet name.
        subnet: String,
        /// Pool name.
        pool: String,
        /// The offending entry.
        entry: String,
    },
    /// Two named pools of one subnet share addresses.
    #[error("subnet {subnet}: pool {pool} overlaps pool {other}")]
    PoolOverlap {
        /// Subnet name.
        subnet: String,
        /// The pool being added.
        pool: String,
        /// The pool it overlaps.
        other: String,
    },
    /// The pool name is empty (the empty name is the subnet's default pool).
    #[error("subnet {subnet}: pool name is empty")]
    EmptyPoolName {
        /// Subnet name.
        subnet: String,
    },
    /// No subnet of that name.
    #[error("unknown subnet {subnet}")]
    UnknownSubnet {
        /// The subnet asked for.
        subnet: String,
    },
    /// No pool of that name in the subnet.
    #[error("subnet {subnet}: unknown pool {pool}")]
    UnknownPool {
        /// Subnet name.
        subnet: String,
        /// The pool asked for.
        pool: String,
    },
}

/// An allocation request was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AllocError {
    /// No subnet of that name.
    #[error("unknown subnet {subnet}")]
    UnknownSubnet {
        /// The subnet asked for.
        subnet: String,
    },
    /// No pool of that name in the subnet.
    #[error("subnet {subnet}: unknown pool {pool}")]
    UnknownPool {
        /// Subnet name.
        subnet: String,
        /// The pool asked for.
        pool: String,
    },
    /// A text address could not be parsed.
    #[error("invalid IP address {value:?}")]
    InvalidAddress {
        /// The offending text.
        value: String,
    },
    /// A MAC address could not be parsed or is not unicast.
    #[error("invalid MAC address {mac:?}: {reason}")]
    InvalidMac {
        /// The offending text.
        mac: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// Two requested addresses of one family.
    #[error("subnet {subnet}: more than one {family} address requested")]
    DuplicateFamily {
        /// Subnet name.
        subnet: String,
        /// The repeated family.
        family: IpFamily,
    },
    /// The requested address is the subnet's gateway.
    #[error("subnet {subnet}: address {address} is the gateway")]
    AddressIsGateway {
        /// Subnet name.
        subnet: String,
        /// The requested address.
        address: IpAddr,
    },
    /// The requested address is outside the subnet's usable range (or its
    /// family is not one of the subnet's).
    #[error("subnet {subnet}: address {address} is out of range")]
    AddressOutOfRange {
        /// Subnet name.
        subnet: String,
        /// The requested address.
        address: IpAddr,
    },
    /// The requested address is in `excludeIps` and the request did not
    /// allow excluded addresses.
    #[error("subnet {subnet}: address {address} is excluded")]
    AddressExcluded {
        /// Subnet name.
        subnet: String,
        /// The requested address.
        address: IpAddr,
    },
    /// The requested address is not in the requested pool.
    #[error("subnet {subnet}: address {address} is not in pool {pool}")]
    AddressNotInPool {
        /// Subnet name.
        subnet: String,
        /// The pool asked for.
        pool: String,
        /// The requested address.
        address: IpAddr,
    },
    /// The requested address belongs to another owner.
    #[error("subnet {subnet}: address {address} is taken by {owner}")]
    AddressTaken {
        /// Subnet name.
        subnet: String,
        /// The requested address.
        address: IpAddr,
        /// Its current owner.
        owner: Owner,
    },
    /// The requested MAC belongs to another owner.
    #[error("subnet {subnet}: MAC {mac} is taken by {owner}")]
    MacTaken {
        /// Subnet name.
        subnet: String,
        /// The requested MAC.
        mac: Mac,
        /// Its current owner.
        owner: Owner,
    },
    /// No free address of that family left in the pool.
    #[error("subnet {subnet}: no {family} address available in pool {pool:?}")]
    Exhausted {
        /// Subnet name.
        subnet: String,
        /// Pool name ("" is the default pool).
        pool: String,
        /// The family that ran out.
        family: IpFamily,
    },
}
