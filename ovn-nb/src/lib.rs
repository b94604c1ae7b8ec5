//! ovn-nb (work in progress)
