//! Asking the IPAM for a pod NIC's addresses: what the pod's annotations request
//! ([`Claim`]), and the order pools are tried in (the pod's own IPPool only; else the
//! namespace's IPPools, then the subnet's free range, as Kube-OVN falls back).
//!
//! The IPAM answers an owner that already holds addresses with those addresses, so
//! asking again on every reconcile is what keeps the reconcile idempotent.

use std::net::IpAddr;

use ipam::{AllocError, Allocation, AllocationRequest, Ipam, MacRequest, Owner};

use super::choice::SubnetChoice;
use kube_ovn_api::annotations::{IpPool, PodNetwork};

/// What a pod's NIC asks of the IPAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The next free address (and a generated MAC).
    Fresh,
    /// The user's static `ip_address` (and `mac_address`, if given).
    Static {
        /// One address per family at most.
        addresses: Vec<IpAddr>,
        /// The static MAC.
        mac: MacRequest,
    },
    /// Candidates of an `ip_pool` address list: the first one free is taken.
    AnyOf(Vec<Vec<IpAddr>>),
    /// What the pod's annotations say the controller gave it before (`allocated` is
    /// `"true"`), claimed back after a restart or an IPAM that lost it.
    Reclaim {
        /// The annotated addresses.
        addresses: Vec<IpAddr>,
        /// The annotated MAC.
        mac: MacRequest,
    },
}

impl Claim {
    /// The claim a pod's annotations make.
    pub fn of(net: &PodNetwork) -> Claim {
        let mac = net
            .mac_address
            .map_or(MacRequest::Generate, MacRequest::Static);
        let addresses = net.ip_address.map(|p| p.addrs()).unwrap_or_default();
        if net.is_allocated() && !addresses.is_empty() {
            return Claim::Reclaim { addresses, mac };
        }
        if !addresses.is_empty() || matches!(mac, MacRequest::Static(_)) {
            return Claim::Static { addresses, mac };
        }
        match &net.ip_pool {
            Some(IpPool::Addresses(list)) => Claim::AnyOf(list.iter().map(|a| vec![*a]).collect()),
            Some(IpPool::DualStack(list)) => Claim::AnyOf(list.iter().map(|p| p.addrs()).collect()),
            _ => Claim::Fresh,
        }
    }
}

fn request(pool: Option<&str>, addresses: Vec<IpAddr>, mac: MacRequest) -> AllocationRequest {
    AllocationRequest {
        pool: pool.map(String::from),
        addresses,
        mac,
        allow_excluded: false,
    }
}

/// Errors after which the next pool (or the free range) is tried.
fn falls_through(err: &AllocError) -> bool {
    matches!(
        err,
        AllocError::Exhausted { .. }
            | AllocError::UnknownPool { .. }
            | AllocError::AddressNotInPool { .. }
    )
}

/// One attempt per pool of `choice`, then the free range unless the pod named its
/// pool; the last error when all fail.
fn in_pools(
    ipam: &Ipam,
    owner: &Owner,
    choice: &SubnetChoice,
    addresses: &[IpAddr],
    mac: MacRequest,
) -> Result<Allocation, AllocError> {
    let mut pools: Vec<Option<&str>> = choice.pools.iter().map(|p| Some(p.as_str())).collect();
    if !choice.pool_required {
        pools.push(None);
    }
    let mut last = None;
    for (i, pool) in pools.iter().enumerate() {
        let req = request(*pool, addresses.to_vec(), mac);
        match ipam.allocate(&choice.subnet, owner, &req) {
            Ok(a) => return Ok(a),
            Err(err) if falls_through(&err) && i + 1 < pools.len() => last = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last.unwrap_or_else(|| AllocError::UnknownSubnet {
        subnet: choice.subnet.clone(),
    }))
}

/// Allocates what `claim` asks for `owner` from `choice`. On error the IPAM holds
/// nothing new.
pub fn allocate(
    ipam: &Ipam,
    owner: &Owner,
    choice: &SubnetChoice,
    claim: &Claim,
) -> Result<Allocation, AllocError> {
    match claim {
        Claim::Fresh => in_pools(ipam, owner, choice, &[], MacRequest::Generate),
        Claim::Static { addresses, mac } | Claim::Reclaim { addresses, mac } => {
            in_pools(ipam, owner, choice, addresses, *mac)
        }
        Claim::AnyOf(candidates) => {
            let mut last = None;
            for addresses in candidates {
                match in_pools(ipam, owner, choice, addresses, MacRequest::Generate) {
                    Ok(a) => return Ok(a),
                    Err(err) => last = Some(err),
                }
            }
            Err(last.unwrap_or_else(|| AllocError::Exhausted {
                subnet: choice.subnet.clone(),
                pool: String::new(),
                family: ipam::IpFamily::V4,
            }))
        }
    }
}

/// Whether an allocation error is the pod's fault (bad or conflicting request: an
/// Event, no retry storm) rather than the cluster's (retried).
pub fn is_request_error(err: &AllocError) -> bool {
    !matches!(err, AllocError::UnknownSubnet { .. })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod::choice::ChoiceSource;
    use ipam::{PoolSpec, SubnetSpec};
    use kube_ovn_api::annotations::IpPair;

    fn ipam() -> Ipam {
        let ipam = Ipam::new();
        ipam.add_or_update_subnet("s", &SubnetSpec::new("10.1.0.0/24"))
            .unwrap();
        let pool = PoolSpec {
            ips: vec!["10.1.0.100..10.1.0.100".into()],
        };
        ipam.add_or_update_pool("s", "p", &pool).unwrap();
        ipam
    }

    fn choice(pools: &[&str], required: bool) -> SubnetChoice {
        SubnetChoice {
            subnet: "s".into(),
            pools: pools.iter().map(|p| p.to_string()).collect(),
            pool_required: required,
            source: ChoiceSource::Default,
            alternatives: Vec::new(),
        }
    }

    #[test]
    fn namespace_pool_first_then_free_range_but_a_named_pool_is_strict() {
        let ipam = ipam();
        let c = choice(&["p"], false);
        let a = allocate(&ipam, &Owner::new("ns/a", "ovn"), &c, &Claim::Fresh).unwrap();
        assert_eq!(a.v4, Some("10.1.0.100".parse().unwrap()));
        let b = allocate(&ipam, &Owner::new("ns/b", "ovn"), &c, &Claim::Fresh).unwrap();
        assert_eq!(b.v4, Some("10.1.0.2".parse().unwrap()));
        let strict = choice(&["p"], true);
        let err = allocate(&ipam, &Owner::new("ns/c", "ovn"), &strict, &Claim::Fresh).unwrap_err();
        assert!(matches!(err, AllocError::Exhausted { .. }), "{err}");
        assert_eq!(ipam.get("s", &Owner::new("ns/c", "ovn")).unwrap(), None);
    }

    #[test]
    fn claims_follow_the_annotations() {
        let mut net = PodNetwork::default();
        assert_eq!(Claim::of(&net), Claim::Fresh);
        net.ip_address = Some(IpPair::v4("10.1.0.9".parse().unwrap()));
        assert!(matches!(Claim::of(&net), Claim::Static { .. }));
        net.allocated = Some(true);
        assert!(matches!(Claim::of(&net), Claim::Reclaim { .. }));
        let net = PodNetwork {
            ip_pool: Some(IpPool::Addresses(vec![
                "10.1.0.7".parse().unwrap(),
                "10.1.0.8".parse().unwrap(),
            ])),
            ..Default::default()
        };
        let ipam = ipam();
        let c = choice(&[], false);
        let first = allocate(&ipam, &Owner::new("ns/a", "ovn"), &c, &Claim::of(&net)).unwrap();
        let second = allocate(&ipam, &Owner::new("ns/b", "ovn"), &c, &Claim::of(&net)).unwrap();
        assert_eq!(first.v4, Some("10.1.0.7".parse().unwrap()));
        assert_eq!(second.v4, Some("10.1.0.8".parse().unwrap()));
    }
}
