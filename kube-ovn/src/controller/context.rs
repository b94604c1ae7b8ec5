//! What every reconciler shares: the Kubernetes API, the northbound (and, for node
//! chassis, southbound) database, the flags, and the one in-memory IPAM.
//!
//! One `Context` per controller process, behind an `Arc`; each reconciler reads what it
//! needs from it. The IPAM is the only state kept in memory beyond kube-rs's reflector
//! caches, and it is rebuilt from the API server before any reconciler runs
//! (`controller::run`), so no reconciler relies on memory of what it wrote.

use std::sync::Arc;

use ipam::Ipam;
use kube::Client;
use ovn_nb::NbClient;
use ovn_sb::SbClient;

use crate::config::ControllerConfig;

/// What the reconcilers share.
pub struct Context {
    /// The Kubernetes API.
    pub client: Client,
    /// The northbound database (leader-aware).
    pub nb: Arc<NbClient>,
    /// The southbound database, when `--ovn-sb-addr` was reachable: the node
    /// reconciler reads each node's chassis from it.
    pub sb: Option<Arc<SbClient>>,
    /// The controller's flags.
    pub config: Arc<ControllerConfig>,
    /// The address allocator, shared by the subnet, pod, node and IP pool reconcilers.
    pub ipam: Arc<Ipam>,
}

impl Context {
    /// A context with an empty IPAM and no southbound client.
    pub fn new(client: Client, nb: Arc<NbClient>, config: Arc<ControllerConfig>) -> Context {
        Context {
            client,
            nb,
            sb: None,
            config,
            ipam: Arc::new(Ipam::new()),
        }
    }

    /// The same context with a southbound client.
    #[must_use]
    pub fn with_sb(mut self, sb: Arc<SbClient>) -> Context {
        self.sb = Some(sb);
        self
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // the API client has no Debug form
        f.debug_struct("Context")
            .field("nb", &self.nb)
            .field("sb", &self.sb.is_some())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
