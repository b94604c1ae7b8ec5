//! ovs-vsctl (work in progress)
