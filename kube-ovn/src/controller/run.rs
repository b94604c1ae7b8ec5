//! The controller's main loop, in Kube-OVN's start-up order: the default Subnets, then
//! the IPAM rebuilt from what the API server holds, and only then the reconcilers, all
//! at once, each under kube-rs's runtime.
//!
//! A reconciler is one line in [`run_reconcilers`]: a future that runs until the process
//! is signalled.

use std::sync::Arc;

use super::defaults::ensure_default_subnets;
use super::{network_policy, subnet, Context};

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
    run_reconcilers(ctx).await;
    Ok(())
}

/// Every reconciler, side by side; returns when all have stopped.
pub async fn run_reconcilers(ctx: Arc<Context>) {
    let network_policies = async {
        if ctx.config.enable_np {
            network_policy::run(ctx.clone()).await;
        }
    };
    futures::join!(subnet::run(ctx.clone()), network_policies);
}
