//! Kube-OVN's `gcInterfaces`: at start-up and every minute, the ports on `br-int` that
//! Kube-OVN plugged for a pod (`external_ids:pod_name` and `pod_namespace`) whose pod (or
//! whole namespace) is gone, or lives on another node now, are removed with their QoS rows and veth: a DEL the runtime
//! never sent (node reboot, runtime crash) leaves nothing behind for long.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ovs_vsctl::{Interface, Port};

use super::handler::{CniDaemon, CniFailure};
use kube_ovn_api::naming::VENDOR;
use kube_ovn_cni::api::GcReport;

/// Kube-OVN's period of `gcInterfaces`.
pub const GC_PERIOD: Duration = Duration::from_secs(60);

impl CniDaemon {
    /// One GC pass; returns the ports removed.
    pub async fn gc(&self) -> Result<GcReport, CniFailure> {
        let mut report = GcReport::default();
        for (port, namespace, pod) in self.pod_ports()? {
            let here = self.get_pod(&namespace, &pod).await?.is_some_and(|p| {
                p.spec.and_then(|s| s.node_name).as_deref() == Some(&self.settings.node_name)
            });
            // a pod of that name elsewhere is a new one (a StatefulSet pod recreated on
            // another node): this node's port is the old one's
            if here {
                continue;
            }
            tracing::info!(%port, pod = %format!("{namespace}/{pod}"), "removing the port of a pod that is gone from this node");
            self.remove_port(&port).await?;
            let name = port.clone();
            let deleted = self
                .settings
                .host_netns
                .run(move || async move { datapath::delete_host_link(&name).await })
                .await?;
            deleted.map_err(CniFailure::datapath(&port))?;
            report.removed.push(port);
        }
        Ok(report)
    }

    /// `(port, pod namespace, pod name)` of every pod port on the integration bridge.
    fn pod_ports(&self) -> Result<Vec<(String, String, String)>, CniFailure> {
        let bridge = &self.settings.bridge;
        let decode = |e: ovs_vsctl::DecodeError| CniFailure::ovs(bridge)(e.into());
        let on_bridge = self.vs.list_ports(bridge).unwrap_or_default();
        let store = self.vs.store();
        let mut found = Vec::new();
        for port in store.rows::<Port>().map_err(decode)? {
            if !on_bridge.contains(&port.name) {
                continue;
            }
            for id in &port.interfaces {
                let Some(iface) = store.get::<Interface>(*id).map_err(decode)? else {
                    continue;
                };
                let ids = &iface.external_ids;
                if ids.get("vendor").map(String::as_str) != Some(VENDOR) {
                    continue;
                }
                if let (Some(ns), Some(pod)) = (ids.get("pod_namespace"), ids.get("pod_name")) {
                    found.push((port.name.clone(), ns.clone(), pod.clone()));
                }
            }
        }
        Ok(found)
    }
}

/// Runs [`CniDaemon::gc`] now and every `period` until `shutdown` resolves; a failed
/// pass is logged and retried on the next tick.
pub async fn keep_collecting(
    daemon: Arc<CniDaemon>,
    period: Duration,
    shutdown: impl Future<Output = ()>,
) {
    super::every(period, shutdown, || async {
        if let Err(error) = daemon.gc().await {
            tracing::warn!(error = %super::error_chain(&error), "interface GC failed");
        }
    })
    .await
}
