//! The sandbox's databases through the typed clients: NB, SB and each node's
//! Open_vSwitch, each connected with a deadline so an unreachable one is a verdict.

use std::future::Future;
use std::time::Duration;

use ovn_nb::NbClient;
use ovn_sb::SbClient;
use ovs_vsctl::{Interface, OpenVSwitch, VsClient};

use super::target::SandboxNode;
use super::KoError;

/// How long a database may take to answer.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

async fn with_deadline<T, E: std::fmt::Display>(
    db: &str,
    remote: &str,
    fut: impl Future<Output = Result<T, E>>,
) -> Result<T, KoError> {
    let err = |reason: String| KoError::Db {
        db: db.to_string(),
        remote: remote.to_string(),
        reason,
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(err(e.to_string())),
        Err(_) => Err(err(format!("no answer within {CONNECT_TIMEOUT:?}"))),
    }
}

/// NB, connected.
pub async fn nb(remote: &str) -> Result<NbClient, KoError> {
    with_deadline("OVN_Northbound", remote, NbClient::connect(remote)).await
}

/// SB, connected.
pub async fn sb(remote: &str) -> Result<SbClient, KoError> {
    with_deadline("OVN_Southbound", remote, SbClient::connect(remote)).await
}

/// A node's Open_vSwitch, connected.
pub async fn ovs(node: &SandboxNode) -> Result<VsClient, KoError> {
    with_deadline(
        "Open_vSwitch",
        &node.ovs_remote,
        VsClient::connect(&node.ovs_remote),
    )
    .await
}

/// The node's chassis name (`external_ids:system-id`), or the node name.
pub fn system_id(vs: &VsClient, node: &str) -> String {
    vs.store()
        .rows::<OpenVSwitch>()
        .ok()
        .and_then(|rows| rows.into_iter().next())
        .and_then(|r| r.external_ids.get("system-id").cloned())
        .unwrap_or_else(|| node.to_string())
}

/// The interface whose `external_ids:iface-id` is `port`.
pub fn interface_of_port(vs: &VsClient, port: &str) -> Option<Interface> {
    vs.store()
        .rows::<Interface>()
        .ok()?
        .into_iter()
        .map(|s| s.row)
        .find(|i| i.external_ids.get("iface-id").map(String::as_str) == Some(port))
}

/// True when `external_ids:ovn-installed` is `"true"`.
pub fn ovn_installed(iface: &Interface) -> bool {
    iface.external_ids.get("ovn-installed").map(String::as_str) == Some("true")
}
