//! Integration tests of the public API: one binary, one module per theme.

mod concurrency;
mod edge_cases;
mod errors;
mod handle;
mod model;
mod pools;
mod rebuild;
mod update;

use ipam::{Allocation, AllocationRequest, Ipam, Owner, SubnetSpec};

/// An IPAM holding one subnet.
pub fn ipam_with(name: &str, spec: SubnetSpec) -> Ipam {
    let ipam = Ipam::new();
    ipam.add_or_update_subnet(name, &spec)
        .expect("valid subnet");
    ipam
}

/// A spec from a cidrBlock, a gateway and excludes.
pub fn spec(cidr: &str, gateway: &str, exclude: &[&str]) -> SubnetSpec {
    SubnetSpec {
        cidr_block: cidr.to_owned(),
        gateway: gateway.to_owned(),
        exclude_ips: exclude.iter().map(|s| s.to_string()).collect(),
    }
}

/// The owner `default/<pod>` on NIC `ovn`.
pub fn pod(name: &str) -> Owner {
    Owner::new(format!("default/{name}"), "ovn")
}

/// Next free allocation, panicking on error.
pub fn next(ipam: &Ipam, subnet: &str, name: &str) -> Allocation {
    ipam.allocate(subnet, &pod(name), &AllocationRequest::next_free())
        .expect("allocation")
}

/// A static request for the given addresses.
pub fn at(addrs: &str) -> AllocationRequest {
    AllocationRequest::with_addresses(AllocationRequest::parse_addresses(addrs).unwrap())
}
