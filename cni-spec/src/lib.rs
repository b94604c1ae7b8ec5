//! cni-spec (work in progress)
