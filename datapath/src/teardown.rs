//! CNI DEL: remove the pair. Deleting either end of a veth pair removes
//! both, wherever the other end lives, so the host end is enough; the
//! namespace is not entered and may be empty or already gone (runtimes send
//! DEL after the sandbox has died). Nothing to delete is success: DEL must
//! be idempotent. A failing step does not stop the others: everything that
//! can be removed is, and every failure is reported together.

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
    let teardown_failed = |errors| Error::Teardown {
        interface: pod.host.name.clone(),
        errors,
    };
    let host = match worker::connect(HOST_NAMESPACE, &pod.host.name) {
        Ok(handle) => Nl::new(handle, HOST_NAMESPACE),
        Err(e) => return Err(teardown_failed(vec![e])),
    };
    let mut errors = Vec::new();
    let mut attempt = |result: Result<bool, Error>| {
        result.unwrap_or_else(|e| {
            errors.push(e);
            false
        })
    };
    let report = TeardownReport {
        host_end_removed: attempt(host.delete(&pod.host.name).await),
        stray_peer_removed: attempt(host.delete(&pod.container.temp_name).await),
    };
    if errors.is_empty() {
        Ok(report)
    } else {
        Err(teardown_failed(errors))
    }
}

pub(crate) async fn delete_link(name: String) -> Result<bool, Error> {
    let host = Nl::new(worker::connect(HOST_NAMESPACE, &name)?, HOST_NAMESPACE);
    host.delete(&name).await
}
