//! ovsdb (work in progress)
