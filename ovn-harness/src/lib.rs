//! ovn-harness (work in progress)
