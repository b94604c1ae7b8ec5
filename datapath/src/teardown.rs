//! CNI DEL: remove the pair. Deleting either end of a veth pair removes
//! both, wherever the other end lives, so the host end is enough; the
//! namespace is not entered (it may already be gone). Nothing to delete is
//! success: DEL must be idempotent.

use crate::error::Error;
use crate::nl::Nl;
use crate::worker::{self, HOST_NAMESPACE};
use crate::PodInterface;

/// What [`crate::teardown`] removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct TeardownReport {
    /// The host end existed and was deleted (taking its peer with it).
    pub host_end_removed: bool,
    /// A peer still on the host under its temporary name was deleted
    /// (an ADD that died between creating and moving it).
    pub stray_peer_removed: bool,
}

pub(crate) async fn run(pod: PodInterface) -> Result<TeardownReport, Error> {
    let host = Nl::new(
        worker::connect(HOST_NAMESPACE, &pod.host.name)?,
        HOST_NAMESPACE,
    );
    Ok(TeardownReport {
        host_end_removed: host.delete(&pod.host.name).await?,
        stray_peer_removed: host.delete(&pod.container.temp_name).await?,
    })
}

pub(crate) async fn delete_link(name: String) -> Result<bool, Error> {
    let host = Nl::new(worker::connect(HOST_NAMESPACE, &name)?, HOST_NAMESPACE);
    host.delete(&name).await
}
