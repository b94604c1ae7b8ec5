//! The controller's main loop, in Kube-OVN's start-up order: the default Subnets, then
//! the IPAM rebuilt from what the API server holds, and only then the reconcilers, all
//! at once, each under kube-rs's runtime.
//!
//! A reconciler is one line in [`run_reconcilers`]: a future that runs until the process
//! is signalled.

use std::sync::Arc;

use super::cache::{CacheFeeds, Caches, PolicyTriggers};
use super::defaults::ensure_default_subnets;
use super::pod::status::UsageQueue;
use super::pod::PodFeeds;
use super::{gc, ipam_rebuild, ippool, network_policy, node, pod, service, subnet, Context};

/// Why the controller stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Creating the default Subnets failed.
    #[error("creating the default subnets ({default} and {join}) failed")]
    DefaultSubnets {
        /// `--default-ls`.
        default: String,
        /// `--node-switch`.
        join: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Rebuilding the IPAM from the API server failed.
    #[error("rebuilding the IPAM failed")]
    IpamRebuild(#[from] ipam_rebuild::RebuildError),
}

/// Creates the default Subnets if absent, then runs every reconciler until the process
/// is told to stop (SIGINT/SIGTERM) or the returned future is dropped.
pub async fn run(ctx: Arc<Context>) -> Result<(), RunError> {
    let config = &ctx.config;
    let created = ensure_default_subnets(&ctx.client, config)
        .await
        .map_err(|source| RunError::DefaultSubnets {
            default: config.default_subnet.name.clone(),
            join: config.node_switch.name.clone(),
            source,
        })?;
    tracing::info!(?created, "default subnets present");
    // one list per kind, read by the rebuild, the garbage collector and the reconcilers
    let (
        caches,
        CacheFeeds {
            pod_events,
            deleted_pods,
            policy_triggers,
            watches,
        },
    ) = Caches::start(&ctx.client);
    let (usage, usage_writer) = UsageQueue::new();
    let cached = Context::clone(&ctx).with_caches(caches.clone());
    // the writer's context holds no queue handle: the writer stops with the last one
    let usage_writer = usage_writer.run(cached.clone());
    let ctx = Arc::new(cached.with_usage_queue(usage));
    let work = async move {
        let started = std::time::Instant::now();
        caches.wait_until_ready().await;
        tracing::info!(
            seconds = started.elapsed().as_secs_f64(),
            ?caches,
            "caches filled"
        );
        // no address is handed out before the IPAM knows every address already given out
        ipam_rebuild::rebuild_ipam(&ctx).await?;
        // then ports and IP objects of pods deleted while no controller ran go, and their
        // addresses with them (Kube-OVN #4304); a failure leaves them held, not reused
        if let Err(err) = gc::collect_garbage(&ctx).await {
            tracing::warn!(error = %err, "start-up garbage collection failed; the periodic one retries");
        }
        let pods = PodFeeds {
            events: pod_events,
            deleted: deleted_pods,
        };
        run_reconcilers_with(ctx, Some(pods), Some(policy_triggers)).await;
        Ok(())
    };
    tokio::select! {
        result = work => result,
        () = watches.drive() => Ok(()),
        () = usage_writer => Ok(()),
    }
}

/// Every reconciler, side by side; returns when all have stopped.
pub async fn run_reconcilers(ctx: Arc<Context>) {
    run_reconcilers_with(ctx, None, None).await;
}

/// [`run_reconcilers`], the Pod and NetworkPolicy reconcilers woken by the caches'
/// watches when given, else by their own.
async fn run_reconcilers_with(
    ctx: Arc<Context>,
    pod_events: Option<PodFeeds>,
    policy_triggers: Option<PolicyTriggers>,
) {
    let network_policies = async {
        if ctx.config.enable_np {
            network_policy::run(ctx.clone(), policy_triggers).await;
        }
    };
    futures::join!(
        subnet::run(ctx.clone()),
        node::run(ctx.clone()),
        pod::run(ctx.clone(), pod_events),
        ippool::run(ctx.clone()),
        gc::run(ctx.clone()),
        service::run_if_enabled(ctx.clone()),
        network_policies,
    );
}
