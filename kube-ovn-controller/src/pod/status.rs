//! A Subnet's usage figures (`v4availableIPs`, `v4usingIPs`, `v4availableIPrange`,
//! `v4usingIPrange` and the v6 twins), written from the IPAM whenever a pod takes or
//! gives back an address. Only these keys are patched (the Subnet reconciler owns the
//! conditions), and only when they differ.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ipam::{Ipam, SubnetStatusUsage};
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use tokio::sync::mpsc;

use crate::Context;
use kube_ovn_api::crd::{IpCount, Subnet, SubnetStatus};

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

/// The figures this process last wrote for a subnet object (by uid).
type LastWritten = Option<(String, SubnetStatusUsage)>;

/// One lock per subnet name: a subnet's figures are read, computed and written by one
/// caller at a time, so the last write computed them after every allocation that came
/// before it, and no older figure lands after a newer one. Behind it, what this
/// process wrote last: figures equal to those are not written again (only the
/// controller writes them), and a cache a moment behind its own writes is not trusted.
#[derive(Debug, Default)]
pub struct UsageLedger {
    subnets: Mutex<HashMap<String, Arc<tokio::sync::Mutex<LastWritten>>>>,
}

impl UsageLedger {
    fn entry(&self, subnet: &str) -> Arc<tokio::sync::Mutex<LastWritten>> {
        let mut subnets = self.subnets.lock().unwrap_or_else(PoisonError::into_inner);
        subnets.entry(subnet.to_owned()).or_default().clone()
    }

    /// Drops a deleted subnet's entry (a subnet of that name made later starts afresh).
    pub fn forget(&self, subnet: &str) {
        let mut subnets = self.subnets.lock().unwrap_or_else(PoisonError::into_inner);
        subnets.remove(subnet);
    }
}

/// Writes `subnet`'s usage figures if they changed, at once (whatever `ctx`'s queue);
/// whether it wrote. The Subnet is read as every reconcile reads (cache, then API).
pub async fn write_usage(ctx: &Context, subnet: &str) -> Result<bool, kube::Error> {
    let lock = ctx.pods.usage_written.entry(subnet);
    let mut last = lock.lock().await;
    let Some(stored) = ctx.get_cluster::<Subnet>(subnet).await? else {
        return Ok(false);
    };
    let Ok(usage) = ctx.ipam.subnet_usage(subnet).map(|u| u.subnet_status()) else {
        return Ok(false);
    };
    let uid = stored.metadata.uid.clone().unwrap_or_default();
    let unchanged = match &*last {
        Some((written_uid, written)) if *written_uid == uid => *written == usage,
        _ => usage_change(&ctx.ipam, &stored).is_none(),
    };
    if unchanged {
        *last = Some((uid, usage));
        return Ok(false);
    }
    // typed: counts may exceed what a JSON `Value` holds (IPv6)
    let patch = StatusPatch { status: &usage };
    Api::<Subnet>::all(ctx.client.clone())
        .patch_status(subnet, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    *last = Some((uid, usage));
    Ok(true)
}

/// The least time between two rounds of [`UsageQueue`]'s writer: allocations that
/// come within it are written together.
pub const USAGE_SETTLE: Duration = Duration::from_millis(500);

/// Usage writes of a running controller, coalesced per subnet as Kube-OVN's
/// `updateSubnetStatusQueue` does: a subnet marked many times while a round runs or
/// rests is written once, with the figures of that moment. A mark right after a
/// quiet spell is written at once. Without it (a lone [`apply`]), each allocation
/// writes its subnet's figures itself.
///
/// [`apply`]: super::apply
#[derive(Debug, Clone)]
pub struct UsageQueue {
    marks: mpsc::UnboundedSender<String>,
}

/// The writer behind a [`UsageQueue`]; runs until every queue handle is dropped.
#[derive(Debug)]
pub struct UsageWriter {
    marks: mpsc::UnboundedReceiver<String>,
}

impl UsageQueue {
    /// A queue and its writer (to be driven by the caller).
    pub fn new() -> (UsageQueue, UsageWriter) {
        let (marks, rx) = mpsc::unbounded_channel();
        (UsageQueue { marks }, UsageWriter { marks: rx })
    }

    /// Asks for `subnet`'s figures to be written.
    pub fn mark(&self, subnet: &str) {
        // the writer stops only with the controller
        let _ = self.marks.send(subnet.to_owned());
    }
}

impl UsageWriter {
    /// Writes marked subnets' figures until every queue handle is gone; a failed
    /// write is tried again in the next round. `ctx` is what the writes read and
    /// write through (its own queue, if any, is not used).
    pub async fn run(mut self, ctx: Context) {
        let mut pending = BTreeSet::new();
        loop {
            if pending.is_empty() {
                match self.marks.recv().await {
                    Some(first) => pending.insert(first),
                    None => return,
                };
            }
            while let Ok(more) = self.marks.try_recv() {
                pending.insert(more);
            }
            let round = std::mem::take(&mut pending);
            for subnet in round {
                if let Err(err) = write_usage(&ctx, &subnet).await {
                    tracing::warn!(subnet = %subnet, error = %err, "writing the subnet's usage figures failed; retrying");
                    pending.insert(subnet);
                }
            }
            tokio::time::sleep(USAGE_SETTLE).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipam::{AllocationRequest, Owner, SubnetSpec};
    use kube::api::ObjectMeta;
    use kube_ovn_api::crd::SubnetSpec as CrdSubnetSpec;

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
