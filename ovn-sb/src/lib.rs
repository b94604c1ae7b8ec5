//! ovn-sb (work in progress)
