//! The Service reconciler (with `--enable-lb`): ClusterIP Services and their
//! EndpointSlices into the cluster load balancers (Kube-OVN's
//! `pkg/controller/service.go` and `endpoint_slice.go`).
//!
//! [`desired`] computes a Service's VIPs from the API objects alone, [`reconcile`]
//! writes them key by key in one transaction per Service, [`watch`] runs the loop,
//! and [`attach`] puts the balancers on the default VPC's subnet switches (called by
//! the Subnet reconciler).
//!
//! Not done: custom-VPC balancers (`vpc-<vpc>-*-load`), SwitchLBRule VIPs and health
//! checks, `prefer_local_backend` port mappings, LoadBalancer ingress IPs, and the
//! Service's `ovn.kubernetes.io/vpc` annotation.

pub mod attach;
pub mod desired;
pub mod reconcile;
pub mod watch;

pub use attach::{attach_cluster_lbs, wants_cluster_lbs};
pub use desired::{service_vips, ServiceInputError, ServiceVips};
pub use reconcile::{
    sync_orphans, sync_service, write_orphans, write_service, ServiceError, SyncReport,
};
pub use watch::run;

use std::sync::Arc;

use crate::Context;

/// [`run`] when `--enable-lb`; otherwise returns at once (no balancers exist).
pub async fn run_if_enabled(ctx: Arc<Context>) {
    if ctx.config.enable_lb {
        run(ctx).await;
    }
}
