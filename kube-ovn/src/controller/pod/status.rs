//! A Subnet's usage figures (`v4availableIPs`, `v4usingIPs`, `v4availableIPrange`,
//! `v4usingIPrange` and the v6 twins), written from the IPAM whenever a pod takes or
//! gives back an address. Only these keys are patched (the Subnet reconciler owns the
//! conditions), and only when they differ.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use ipam::{Ipam, SubnetStatusUsage};
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;

use crate::crd::{IpCount, Subnet, SubnetStatus};

/// The usage the stored status shows.
fn stored_usage(status: Option<&SubnetStatus>) -> SubnetStatusUsage {
    let Some(s) = status else {
        return SubnetStatusUsage::default();
    };
    let count = |c: Option<IpCount>| c.map_or(0, |c| c.0);
    let text = |t: &Option<String>| t.clone().unwrap_or_default();
    SubnetStatusUsage {
        v4_available_ips: count(s.v4_available_ips),
        v4_available_ip_range: text(&s.v4_available_ip_range),
        v4_using_ips: count(s.v4_using_ips),
        v4_using_ip_range: text(&s.v4_using_ip_range),
        v6_available_ips: count(s.v6_available_ips),
        v6_available_ip_range: text(&s.v6_available_ip_range),
        v6_using_ips: count(s.v6_using_ips),
        v6_using_ip_range: text(&s.v6_using_ip_range),
    }
}

/// The figures `subnet` should show; None when they already do (or the IPAM does not
/// know the subnet).
pub fn usage_change(ipam: &Ipam, subnet: &Subnet) -> Option<SubnetStatusUsage> {
    let name = subnet.metadata.name.as_deref()?;
    let usage = ipam.subnet_usage(name).ok()?.subnet_status();
    (usage != stored_usage(subnet.status.as_ref())).then_some(usage)
}

#[derive(Debug, Serialize)]
struct StatusPatch<'a> {
    status: &'a SubnetStatusUsage,
}

/// One lock per subnet name: a subnet's figures are read, computed and written by one
/// caller at a time, so the last write computed them after every allocation that came
/// before it, and no older figure lands after a newer one.
fn subnet_lock(subnet: &str) -> Arc<tokio::sync::Mutex<()>> {
    static LOCKS: LazyLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> =
        LazyLock::new(Mutex::default);
    let mut locks = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
    locks.entry(subnet.to_owned()).or_default().clone()
}

/// Writes `subnet`'s usage figures if they changed; whether it wrote.
pub async fn write_usage(
    api: &Api<Subnet>,
    ipam: &Ipam,
    subnet: &str,
) -> Result<bool, kube::Error> {
    let lock = subnet_lock(subnet);
    let _one_writer = lock.lock().await;
    let Some(stored) = api.get_opt(subnet).await? else {
        return Ok(false);
    };
    let Some(usage) = usage_change(ipam, &stored) else {
        return Ok(false);
    };
    // typed: counts may exceed what a JSON `Value` holds (IPv6)
    let patch = StatusPatch { status: &usage };
    api.patch_status(subnet, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::SubnetSpec as CrdSubnetSpec;
    use ipam::{AllocationRequest, Owner, SubnetSpec};
    use kube::api::ObjectMeta;

    #[test]
    fn figures_follow_allocations_and_match_once_written() {
        let ipam = Ipam::new();
        ipam.add_or_update_subnet("s", &SubnetSpec::new("10.2.0.0/29"))
            .unwrap();
        let mut subnet = Subnet {
            metadata: ObjectMeta {
                name: Some("s".into()),
                ..Default::default()
            },
            spec: CrdSubnetSpec::default(),
            status: None,
        };
        let before = usage_change(&ipam, &subnet).expect("no figures yet");
        ipam.allocate(
            "s",
            &Owner::new("ns/a", "ovn"),
            &AllocationRequest::next_free(),
        )
        .unwrap();
        let after = usage_change(&ipam, &subnet).unwrap();
        assert_eq!(after.v4_using_ips, 1);
        assert_eq!(after.v4_available_ips + 1, before.v4_available_ips);
        let json = serde_json::to_value(&after).unwrap();
        subnet.status = Some(serde_json::from_value(json).unwrap());
        assert_eq!(usage_change(&ipam, &subnet), None);
    }
}
