//! Runnable example binaries; see `src/bin/`.
//!
//! - `ovn-nbctl` ([`nbctl`]) and `ovs-vsctl` ([`vsctl`]): drop-in re-makes of the OVN/OVS
//!   command-line tools for the common commands, with byte-identical output. What they
//!   share (command line, value syntax, row order, generic database commands) is in
//!   [`dbctl`].

pub mod dbctl;
pub mod nbctl;
pub mod vsctl;
