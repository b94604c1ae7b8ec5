//! ClusterIP allocation, the part of kube-apiserver the embedded API server leaves
//! out: a Service created without `spec.clusterIP` gets the lowest free address of
//! the service range (from `.10`, as kube-apiserver keeps the first ones for
//! `kubernetes` and DNS), so `kubectl expose` and manifests without addresses work.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::time::Duration;

use ipnet::Ipv4Net;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

/// The service range, as the controller's and the daemons' default.
pub(crate) const SERVICE_RANGE: &str = "10.96.0.0/12";

/// The lowest address of `range` from its 10th on that is not in `used`.
pub(crate) fn pick(range: Ipv4Net, used: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    range.hosts().skip(9).find(|ip| !used.contains(ip))
}

/// One pass: every Service that needs an address and has none gets one.
pub(crate) async fn allocate_once(client: &kube::Client) -> Result<(), kube::Error> {
    let range: Ipv4Net = SERVICE_RANGE.parse().expect("a valid range");
    let api: Api<Service> = Api::all(client.clone());
    let services = api.list(&ListParams::default()).await?.items;
    let mut used: BTreeSet<Ipv4Addr> = services
        .iter()
        .filter_map(|s| s.spec.as_ref()?.cluster_ip.as_deref()?.parse().ok())
        .collect();
    for svc in &services {
        let Some(spec) = &svc.spec else { continue };
        let wants = spec.type_.as_deref() != Some("ExternalName")
            && spec.cluster_ip.as_deref().is_none_or(str::is_empty);
        if !wants {
            continue;
        }
        let Some(ip) = pick(range, &used) else {
            tracing::warn!("the service range {SERVICE_RANGE} is full");
            return Ok(());
        };
        let ns = svc.metadata.namespace.clone().unwrap_or_default();
        let name = svc.metadata.name.clone().unwrap_or_default();
        let patch = json!({"spec": {"clusterIP": ip.to_string(), "clusterIPs": [ip.to_string()]}});
        Api::<Service>::namespaced(client.clone(), &ns)
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        tracing::info!(service = %format!("{ns}/{name}"), %ip, "ClusterIP allocated");
        used.insert(ip);
    }
    Ok(())
}

/// Allocates every `period` until dropped.
pub(crate) async fn run(client: kube::Client, period: Duration) {
    loop {
        if let Err(e) = allocate_once(&client).await {
            tracing::warn!(error = %e, "ClusterIP allocation pass failed");
        }
        tokio::time::sleep(period).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_lowest_free_address_from_the_tenth() {
        let range: Ipv4Net = "10.96.0.0/12".parse().unwrap();
        let mut used = BTreeSet::new();
        assert_eq!(pick(range, &used), Some(Ipv4Addr::new(10, 96, 0, 10)));
        used.insert(Ipv4Addr::new(10, 96, 0, 10));
        used.insert(Ipv4Addr::new(10, 96, 0, 12));
        assert_eq!(pick(range, &used), Some(Ipv4Addr::new(10, 96, 0, 11)));
        let tiny: Ipv4Net = "10.96.0.0/28".parse().unwrap();
        let full: BTreeSet<Ipv4Addr> = tiny.hosts().collect();
        assert_eq!(pick(tiny, &full), None);
    }
}
