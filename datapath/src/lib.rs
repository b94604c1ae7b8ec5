//! datapath (work in progress)
