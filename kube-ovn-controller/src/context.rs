//! What every reconciler shares: the Kubernetes API, the northbound (and, for node
//! chassis, southbound) database, the flags, and the one in-memory IPAM.
//!
//! One `Context` per controller process, behind an `Arc`; each reconciler reads what it
//! needs from it. The IPAM is the only state kept in memory beyond kube-rs's reflector
//! caches, and it is rebuilt from the API server before any reconciler runs
//! (`controller::run`), so no reconciler relies on memory of what it wrote.

use std::sync::Arc;

use ipam::Ipam;
use kube::api::{Api, ListParams};
use kube::Client;
use serde::de::DeserializeOwned;

use super::cache::{cached, Cached, Caches};
use super::events::Recorder;
use super::pod::status::UsageQueue;
use super::pod::PodState;
use super::subnet::SubnetState;
use ovn_nb::NbClient;
use ovn_sb::SbClient;

use crate::config::ControllerConfig;

/// What the reconcilers share.
#[derive(Clone)]
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
    /// Where Events go (repeats counted on the first, as client-go's recorder does).
    pub events: Recorder,
    /// The reflector caches, once [`run`](super::run()) has filled them; without
    /// them every read goes to the API server.
    pub caches: Option<Caches>,
    /// The Pod reconciler's own memory.
    pub pods: PodState,
    /// The Subnet reconciler's own memory.
    pub subnets: SubnetState,
}

impl Context {
    /// A context with an empty IPAM and no southbound client.
    pub fn new(client: Client, nb: Arc<NbClient>, config: Arc<ControllerConfig>) -> Context {
        Context {
            events: Recorder::new(client.clone()),
            client,
            nb,
            sb: None,
            config,
            ipam: Arc::new(Ipam::new()),
            caches: None,
            pods: PodState::default(),
            subnets: SubnetState::default(),
        }
    }

    /// The same context coalescing usage writes through `usage`.
    #[must_use]
    pub fn with_usage_queue(mut self, usage: UsageQueue) -> Context {
        self.pods.usage = Some(usage);
        self
    }

    /// Has `subnet`'s usage figures written: queued when there is a queue (`false`),
    /// else at once (whether they changed).
    pub async fn write_usage(&self, subnet: &str) -> Result<bool, kube::Error> {
        if let Some(queue) = &self.pods.usage {
            queue.mark(subnet);
            return Ok(false);
        }
        super::pod::status::write_usage(self, subnet).await
    }

    /// The same context reading through `caches`.
    #[must_use]
    pub fn with_caches(mut self, caches: Caches) -> Context {
        self.caches = Some(caches);
        self
    }

    /// The cluster-scoped `name` of kind `K`: from the cache when it holds it, else
    /// from the API server (a cache may not have seen an object created a moment ago).
    pub async fn get_cluster<K>(&self, name: &str) -> Result<Option<Arc<K>>, kube::Error>
    where
        K: Cached + DeserializeOwned + std::fmt::Debug,
    {
        if let Some(found) = self
            .caches
            .as_ref()
            .and_then(|c| cached::<K>(c, None, name))
        {
            return Ok(Some(found));
        }
        Ok(Api::<K>::all(self.client.clone())
            .get_opt(name)
            .await?
            .map(Arc::new))
    }

    /// Every `K`: the cache's view when there is one, else a list from the API server.
    pub async fn list_all<K>(&self) -> Result<Vec<Arc<K>>, kube::Error>
    where
        K: Cached + DeserializeOwned + std::fmt::Debug,
    {
        if let Some(caches) = &self.caches {
            return Ok(K::store(caches).state());
        }
        Ok(Api::<K>::all(self.client.clone())
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(Arc::new)
            .collect())
    }

    /// `name` (in `namespace`) as the cache holds it: `Some(None)` when the cache is
    /// filled and has none (it may be a moment behind: a create that finds one
    /// answers 409), `None` without caches.
    pub fn cached<K: Cached>(&self, namespace: Option<&str>, name: &str) -> Option<Option<Arc<K>>> {
        let caches = self.caches.as_ref()?;
        Some(cached(caches, namespace, name))
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
            .field("caches", &self.caches)
            .finish_non_exhaustive()
    }
}
