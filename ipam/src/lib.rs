//! ipam (work in progress)
