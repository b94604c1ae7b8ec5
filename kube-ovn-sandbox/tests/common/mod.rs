//! The shared test helpers, and this crate's own sandbox driver.

#![allow(dead_code, unused_imports)] // each test binary uses a different part

pub mod sandbox;

pub use kube_ovn_test_support::*;
