//! One Service's reconcile: its VIPs in the cluster balancers made to match
//! [`service_vips`](super::desired::service_vips), in one transaction that touches
//! only the keys of its own cluster IPs (and nothing when they already look right).
//!
//! Which VIPs a Service had is recomputed, never remembered: every key of a cluster
//! balancer that starts with one of the Service's cluster IPs is its own (cluster IPs
//! are unique), so a key it no longer wants (a port gone, no ready backend any more,
//! the affinity changed) is found in the replica. A deleted Service's keys are found
//! the same way from the other side: a key in the service CIDR whose IP no live
//! Service holds is an orphan ([`write_orphans`]), also what a restart finds.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;
use kube::runtime::reflector::store::WriterDropped;
use kube::runtime::reflector::ObjectRef;
use ovn_nb::{LoadBalancer, NbClient, NbError, NbTxn};

use super::desired::{all_balancers, vip_ip, vip_prefix, ServiceVips};
use crate::config::ClusterLoadBalancers;
use kube_ovn_api::annotations::CidrPair;

/// Why a Service's reconcile failed; it is retried.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// Building or committing the NB transaction of one Service failed.
    #[error("service {service}: NB transaction failed")]
    Nb {
        /// `<namespace>/<name>`.
        service: String,
        /// Why.
        #[source]
        source: NbError,
    },
    /// Building or committing the removal of the deleted Services' VIPs failed.
    #[error("orphan VIPs: NB transaction failed")]
    Orphans {
        /// Why.
        #[source]
        source: NbError,
    },
    /// The EndpointSlice cache never got its first list (its watch ended first).
    #[error("endpoint slices never listed")]
    SlicesUnlisted(#[source] WriterDropped),
}

/// `<namespace>/<name>` of a Service, as errors and logs name it.
pub fn service_name(service: &ObjectRef<Service>) -> String {
    format!(
        "{}/{}",
        service.namespace.as_deref().unwrap_or_default(),
        service.name
    )
}

/// What one reconcile wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// VIP keys set or removed.
    pub vips_changed: usize,
    /// Operations committed (0: nothing to do, no transaction sent).
    pub ops: usize,
}

/// Appends the operations giving the cluster balancers exactly `wanted`'s VIPs for
/// its cluster IPs; VIP keys changed.
pub fn write_service(
    txn: &mut NbTxn<'_>,
    lbs: &ClusterLoadBalancers,
    wanted: &ServiceVips,
) -> Result<usize, NbError> {
    let empty = BTreeMap::new();
    let mut changed = 0;
    for lb in all_balancers(lbs) {
        let set = wanted.by_lb.get(lb).unwrap_or(&empty);
        let mut stale = Vec::new();
        for ip in &wanted.cluster_ips {
            for (key, _) in txn.lb_vips_with_prefix(lb, &vip_prefix(*ip))? {
                if !set.contains_key(&key) {
                    stale.push(key);
                }
            }
        }
        changed += txn.lb_ensure_vips(lb, set, &stale)?;
    }
    Ok(changed)
}

/// Appends the operations removing every VIP in the service CIDR whose IP no live
/// Service holds (the VIPs of deleted, headless or ExternalName-turned Services);
/// VIP keys removed. Keys outside the service CIDR belong to others and are kept.
pub fn write_orphans(
    txn: &mut NbTxn<'_>,
    lbs: &ClusterLoadBalancers,
    live: &HashSet<IpAddr>,
    service_cidr: &CidrPair,
) -> Result<usize, NbError> {
    let nets = service_cidr.nets();
    let mut removed = 0;
    for lb in all_balancers(lbs) {
        let orphans: Vec<String> = txn
            .lb_vips_with_prefix(lb, "")?
            .into_iter()
            .map(|(key, _)| key)
            .filter(|key| {
                vip_ip(key)
                    .is_some_and(|ip| nets.iter().any(|n| n.contains(&ip)) && !live.contains(&ip))
            })
            .collect();
        removed += txn.lb_ensure_vips(lb, &BTreeMap::new(), &orphans)?;
    }
    Ok(removed)
}

/// `options:affinity_timeout` of balancer `lb` as the replica holds it.
fn affinity_timeout(nb: &NbClient, lb: &str) -> Option<String> {
    let id = nb
        .store()
        .ids_by::<LoadBalancer>("name", lb)
        .into_iter()
        .next()?;
    let row = nb.store().get_raw(id)?;
    match row.get("options")? {
        ovn_nb::ovsdb::Value::Map(map) => {
            Some(map.get_str("affinity_timeout")?.as_str()?.to_string())
        }
        _ => None,
    }
}

/// Appends the operations setting each session balancer's `affinity_timeout` to the
/// value wanted for it. A balancer is shared by every ClientIP Service of its
/// protocol, so the caller passes one value per balancer (the longest any of its
/// Services asks for: no Service loses affinity earlier than it asked).
pub fn write_affinity(
    txn: &mut NbTxn<'_>,
    nb: &NbClient,
    timeouts: &BTreeMap<String, i32>,
) -> Result<usize, NbError> {
    let mut written = 0;
    for (lb, timeout) in timeouts {
        let value = timeout.to_string();
        if affinity_timeout(nb, lb).as_deref() != Some(value.as_str()) {
            txn.lb_set_options(lb, [("affinity_timeout".to_string(), value)])?;
            written += 1;
        }
    }
    Ok(written)
}

/// Commits `txn` if it holds anything; operations sent.
pub async fn commit(nb: &NbClient, txn: NbTxn<'_>) -> Result<usize, NbError> {
    let ops = txn.ops().len();
    if ops > 0 {
        nb.commit(txn).await?;
    }
    Ok(ops)
}

/// Reconciles one live Service: its VIPs, and the session balancers' timeout.
pub async fn sync_service(
    nb: &NbClient,
    lbs: &ClusterLoadBalancers,
    service: &ObjectRef<Service>,
    wanted: &ServiceVips,
    timeouts: &BTreeMap<String, i32>,
) -> Result<SyncReport, ServiceError> {
    let fail = |source| ServiceError::Nb {
        service: service_name(service),
        source,
    };
    let mut txn = nb.txn();
    let vips_changed = write_service(&mut txn, lbs, wanted).map_err(fail)?;
    write_affinity(&mut txn, nb, timeouts).map_err(fail)?;
    let ops = commit(nb, txn).await.map_err(fail)?;
    Ok(SyncReport { vips_changed, ops })
}

/// Removes the VIPs no live Service holds.
pub async fn sync_orphans(
    nb: &NbClient,
    lbs: &ClusterLoadBalancers,
    live: &HashSet<IpAddr>,
    service_cidr: &CidrPair,
) -> Result<SyncReport, ServiceError> {
    let fail = |source| ServiceError::Orphans { source };
    let mut txn = nb.txn();
    let vips_changed = write_orphans(&mut txn, lbs, live, service_cidr).map_err(fail)?;
    let ops = commit(nb, txn).await.map_err(fail)?;
    Ok(SyncReport { vips_changed, ops })
}
