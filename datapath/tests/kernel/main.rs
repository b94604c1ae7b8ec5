//! Tests against the real kernel: namespaces, veth pairs, a Linux bridge,
//! ping between pods, and `ip -j` / `ethtool -k` as independent readers.
//! They need root; under CI (`ovn_harness::in_ci`) they fail instead of skipping.

mod common;
mod failures;
mod parallel;
mod teardown;
mod wiring;
