//! Which subnet (and which IP pools in it) a pod's primary NIC takes its address from,
//! in Kube-OVN's order (`getPodDefaultSubnet`, `acquireAddress`): the pod's
//! `logical_switch` annotation, then the IPPool its `ip_pool` annotation names, then an
//! IPPool bound to its namespace, then the namespace's `logical_switch` (the first
//! subnet it lists), then the default subnet.

use kube_ovn_api::annotations::{IpPool, NamespaceAnnotations, PodNetwork};
use kube_ovn_api::crd::IPPool;

/// Where the choice came from (for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChoiceSource {
    /// The pod's `logical_switch` annotation.
    PodLogicalSwitch,
    /// The IPPool named by the pod's `ip_pool` annotation.
    PodIpPool,
    /// An IPPool whose `namespaces` list the pod's namespace.
    NamespaceIpPool,
    /// The namespace's `logical_switch` annotation.
    NamespaceLogicalSwitch,
    /// The default subnet (`--default-ls`).
    Default,
}

/// The subnet and pools a pod allocates from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubnetChoice {
    /// The subnet (logical switch).
    pub subnet: String,
    /// Named pools of that subnet to try, in order, before the subnet's free range.
    pub pools: Vec<String>,
    /// The pod named its pool: no fallback to the subnet's free range.
    pub pool_required: bool,
    /// Which rule chose.
    pub source: ChoiceSource,
    /// Further subnets the namespace lists, tried in order when `subnet` is full.
    pub alternatives: Vec<String>,
}

/// Why no subnet can be chosen; the pod gets an Event naming the offender.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChoiceError {
    /// The pod's `ip_pool` annotation names an IPPool that does not exist.
    #[error("pod annotation ip_pool names IPPool {pool}, which does not exist")]
    UnknownPool {
        /// The pool named.
        pool: String,
    },
    /// The pod names a subnet and a pool of another subnet.
    #[error(
        "IPPool {pool} belongs to subnet {pool_subnet}, not to the pod's logical_switch {subnet}"
    )]
    PoolOutsideSubnet {
        /// The pool named.
        pool: String,
        /// Its subnet.
        pool_subnet: String,
        /// The subnet the pod names.
        subnet: String,
    },
}

fn pool_name(pool: &IPPool) -> String {
    pool.metadata.name.clone().unwrap_or_default()
}

/// The pools bound to `namespace`, by name.
fn bound_pools<'a>(namespace: &str, pools: &'a [IPPool]) -> Vec<&'a IPPool> {
    let mut bound: Vec<&IPPool> = pools
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.spec.namespaces.iter().any(|n| n == namespace))
        .collect();
    bound.sort_by_key(|p| pool_name(p));
    bound
}

/// Chooses the subnet of a pod in `namespace` whose primary NIC annotations are `net`.
pub fn choose(
    net: &PodNetwork,
    namespace: &str,
    ns: &NamespaceAnnotations,
    pools: &[IPPool],
    default_subnet: &str,
) -> Result<SubnetChoice, ChoiceError> {
    let bound = bound_pools(namespace, pools);
    if let Some(IpPool::Named(name)) = &net.ip_pool {
        let pool = pools
            .iter()
            .find(|p| pool_name(p) == *name)
            .ok_or_else(|| ChoiceError::UnknownPool { pool: name.clone() })?;
        if let Some(ls) = net
            .logical_switch
            .as_ref()
            .filter(|ls| **ls != pool.spec.subnet)
        {
            return Err(ChoiceError::PoolOutsideSubnet {
                pool: name.clone(),
                pool_subnet: pool.spec.subnet.clone(),
                subnet: ls.clone(),
            });
        }
        return Ok(SubnetChoice {
            subnet: pool.spec.subnet.clone(),
            pools: vec![name.clone()],
            pool_required: true,
            source: ChoiceSource::PodIpPool,
            alternatives: Vec::new(),
        });
    }
    let (subnet, source) = if let Some(ls) = &net.logical_switch {
        (ls.clone(), ChoiceSource::PodLogicalSwitch)
    } else if let Some(first) = bound.first() {
        (first.spec.subnet.clone(), ChoiceSource::NamespaceIpPool)
    } else if let Some(first) = ns.logical_switch.as_ref().and_then(|n| n.0.first()) {
        (first.clone(), ChoiceSource::NamespaceLogicalSwitch)
    } else {
        (default_subnet.to_string(), ChoiceSource::Default)
    };
    let pools = bound
        .iter()
        .filter(|p| p.spec.subnet == subnet)
        .map(|p| pool_name(p))
        .collect();
    let alternatives = match (source, &ns.logical_switch) {
        (ChoiceSource::NamespaceLogicalSwitch, Some(names)) => names.0[1..].to_vec(),
        _ => Vec::new(),
    };
    Ok(SubnetChoice {
        subnet,
        pools,
        pool_required: false,
        source,
        alternatives,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;
    use kube_ovn_api::annotations::Names;
    use kube_ovn_api::crd::IPPoolSpec;

    fn pool(name: &str, subnet: &str, namespaces: &[&str]) -> IPPool {
        IPPool {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: IPPoolSpec {
                subnet: subnet.into(),
                namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
                ..Default::default()
            },
            status: None,
        }
    }

    fn ns_bound_to(subnet: &str) -> NamespaceAnnotations {
        NamespaceAnnotations {
            logical_switch: Some(Names(vec![subnet.into(), "other".into()])),
            ..Default::default()
        }
    }

    #[test]
    fn order_is_pod_switch_pod_pool_namespace_pool_namespace_switch_default() {
        let pools = [pool("p2", "sub-p", &["ns1"]), pool("p1", "sub-p", &["ns1"])];
        let none = NamespaceAnnotations::default();
        let pod = |ls: Option<&str>, ip_pool: Option<&str>| PodNetwork {
            logical_switch: ls.map(String::from),
            ip_pool: ip_pool.map(|p| IpPool::Named(p.into())),
            ..Default::default()
        };
        let c = choose(&pod(Some("sub-a"), None), "ns1", &none, &pools, "d").unwrap();
        assert_eq!(
            (c.subnet.as_str(), c.source),
            ("sub-a", ChoiceSource::PodLogicalSwitch)
        );
        assert!(c.pools.is_empty());
        let c = choose(&pod(None, Some("p2")), "ns1", &none, &pools, "d").unwrap();
        assert_eq!(
            (c.subnet.as_str(), c.pools.clone(), c.pool_required),
            ("sub-p", vec!["p2".into()], true)
        );
        let c = choose(&pod(None, None), "ns1", &ns_bound_to("sub-n"), &pools, "d").unwrap();
        assert_eq!(
            (c.subnet.as_str(), c.source),
            ("sub-p", ChoiceSource::NamespaceIpPool)
        );
        assert_eq!(c.pools, vec!["p1".to_string(), "p2".to_string()]);
        let c = choose(&pod(None, None), "ns2", &ns_bound_to("sub-n"), &pools, "d").unwrap();
        assert_eq!(
            (c.subnet.as_str(), c.source),
            ("sub-n", ChoiceSource::NamespaceLogicalSwitch)
        );
        let c = choose(&pod(None, None), "ns2", &none, &pools, "d").unwrap();
        assert_eq!((c.subnet.as_str(), c.source), ("d", ChoiceSource::Default));
        // a namespace pool of the subnet the pod names is still used first
        let c = choose(&pod(Some("sub-p"), None), "ns1", &none, &pools, "d").unwrap();
        assert_eq!(c.pools.len(), 2);
        assert!(!c.pool_required);
    }

    #[test]
    fn a_missing_or_misplaced_pool_is_named() {
        let pools = [pool("p1", "sub-p", &[])];
        let none = NamespaceAnnotations::default();
        let pod = PodNetwork {
            ip_pool: Some(IpPool::Named("nope".into())),
            ..Default::default()
        };
        let err = choose(&pod, "ns", &none, &pools, "d").unwrap_err();
        assert_eq!(
            err,
            ChoiceError::UnknownPool {
                pool: "nope".into()
            }
        );
        let pod = PodNetwork {
            ip_pool: Some(IpPool::Named("p1".into())),
            logical_switch: Some("sub-x".into()),
            ..Default::default()
        };
        let err = choose(&pod, "ns", &none, &pools, "d").unwrap_err();
        assert!(err.to_string().contains("p1"), "{err}");
    }
}
