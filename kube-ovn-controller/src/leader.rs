//! Leader election (Kube-OVN's `cmd/controller/controller.go`): replicas of the
//! controller compete for the Lease `kube-ovn-controller` in the controller's
//! namespace; only the holder writes. The Lease is kept by `kube-lease-manager`
//! (server-side apply with conflict detection); this module runs the controller for
//! as long as the Lease is held and aborts it the moment the Lease is lost.
//!
//! Kube-OVN's timings: a Lease lasts 30 s and the holder renews it within 20 s (the
//! manager's `grace` is the 10 s between the two). When the holder dies, another
//! replica takes over once the Lease has expired; when it stops cleanly it releases
//! the Lease at once (Kube-OVN's `ReleaseOnCancel`).

use std::future::Future;
use std::pin::Pin;

use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseManagerError};

/// The Lease Kube-OVN's controller replicas compete for.
pub const LEASE_NAME: &str = "kube-ovn-controller";
/// Kube-OVN's `LeaseDuration`, seconds.
pub const LEASE_DURATION_SECS: u64 = 30;
/// Kube-OVN's `RenewDeadline`, seconds: the holder renews within this.
pub const RENEW_DEADLINE_SECS: u64 = 20;
/// The controller's namespace when `POD_NAMESPACE` is unset.
pub const DEFAULT_NAMESPACE: &str = "kube-system";

/// Who competes for which Lease, for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    /// The Lease's name.
    pub lease_name: String,
    /// The Lease's namespace (the controller's own).
    pub namespace: String,
    /// `holderIdentity` when this replica holds it (the pod name).
    pub identity: String,
    /// How long a Lease lasts without renewal, seconds.
    pub duration_secs: u64,
    /// How long before expiry the holder renews, seconds (less than the duration).
    pub grace_secs: u64,
}

impl LeaderElection {
    /// Kube-OVN's election for a replica `identity` in `namespace`.
    pub fn kube_ovn(namespace: impl Into<String>, identity: impl Into<String>) -> Self {
        LeaderElection {
            lease_name: LEASE_NAME.to_owned(),
            namespace: namespace.into(),
            identity: identity.into(),
            duration_secs: LEASE_DURATION_SECS,
            grace_secs: LEASE_DURATION_SECS - RENEW_DEADLINE_SECS,
        }
    }

    /// From the pod's environment: `POD_NAMESPACE` (else `kube-system`) and
    /// `POD_NAME` (else the host name).
    pub fn from_env() -> Self {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let namespace = env("POD_NAMESPACE").unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        let identity = env("POD_NAME").unwrap_or_else(hostname);
        LeaderElection::kube_ovn(namespace, identity)
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| format!("kube-ovn-controller-{}", std::process::id()))
}

/// Why the election stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderError {
    /// The Lease could not be created, read or written.
    #[error("leader election on Lease {namespace}/{lease} as {identity} failed")]
    Lease {
        /// The Lease.
        lease: String,
        /// Its namespace.
        namespace: String,
        /// This replica.
        identity: String,
        /// Why.
        #[source]
        source: LeaseManagerError,
    },
}

/// Runs `work` (a fresh future for every term of leadership) while this replica holds
/// the Lease, and aborts it as soon as the Lease is lost. Returns `Ok` when a term's
/// work finishes by itself (the controller was told to stop); the Lease is then
/// released. When `stop` resolves (SIGTERM), the work is dropped and the Lease released
/// before returning `Ok`. Dropping the returned future stops the work too, and the
/// Lease manager's task releases the Lease while the runtime lives; a crashed process
/// leaves it to expire.
pub async fn run_as_leader<F, Fut>(
    client: Client,
    election: &LeaderElection,
    mut work: F,
    stop: impl Future<Output = ()>,
) -> Result<(), LeaderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut stop = std::pin::pin!(stop);
    let lease_err = |source| LeaderError::Lease {
        lease: election.lease_name.clone(),
        namespace: election.namespace.clone(),
        identity: election.identity.clone(),
        source,
    };
    let manager = LeaseManagerBuilder::new(client, &election.lease_name)
        .with_namespace(&election.namespace)
        .with_identity(&election.identity)
        .with_duration(election.duration_secs)
        .with_grace(election.grace_secs)
        .build()
        .await
        .map_err(lease_err)?;
    let (mut leading, watcher) = manager.watch().await;
    // the term runs inside this future (not spawned): dropping it stops the work at
    // once, and the work need not be `Send`
    let mut term: Option<Pin<Box<Fut>>> = None;
    loop {
        let is_leader = *leading.borrow_and_update();
        if is_leader && term.is_none() {
            tracing::info!(identity = %election.identity, lease = %election.lease_name, "became the leader");
            term = Some(Box::pin(work()));
        } else if !is_leader && term.is_some() {
            tracing::warn!(identity = %election.identity, "lost the lease; stopping every writer");
            term = None;
        }
        let finished = async {
            match term.as_mut() {
                Some(t) => t.as_mut().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            changed = leading.changed() => {
                if changed.is_err() {
                    // the watcher stopped: it only does so on an error
                    drop(term);
                    return match watcher.await {
                        Ok(Err(source)) => Err(lease_err(source)),
                        _ => Ok(()),
                    };
                }
            }
            () = &mut stop => {
                tracing::info!(identity = %election.identity, "told to stop; releasing the lease");
                drop(term);
                drop(leading);
                let _ = watcher.await;
                return Ok(());
            }
            () = finished => {
                tracing::info!(identity = %election.identity, "work finished; releasing the lease");
                // dropping the receiver makes the watcher release the Lease and stop
                drop(leading);
                let _ = watcher.await;
                return Ok(());
            }
        }
    }
}
