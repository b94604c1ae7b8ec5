//! The node agent: kubelet and container runtime for the pods bound to one
//! node. For each pod: a network namespace, CNI ADD through the node's
//! conflist with the `CNI_ARGS` containerd sends, a responder on the pod's
//! container ports, and the pod's status written back; readiness follows
//! the responder (and the pod's readiness gates, as kubelet has them). Deletion: CNI DEL, responder stopped, namespace removed,
//! then the agent's own finalizer taken off (and only that one).

use super::netns::{self, run_in, NetnsError};
use super::pod_status::{
    declared_ports, failed_start_status, node_object, now, readiness_gates_pass, running_status,
};
use super::responder::{PodLog, Responder};
use super::runtime::{PodDirectory, PodEntry};
use cni_spec::runtime::{CniRuntime, RuntimeConf, RuntimeError};
use cni_spec::{CniArgs, NetworkConfigList};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The finalizer the agent puts on the pods it runs, so that their
/// network is torn down before the object goes.
pub const FINALIZER: &str = "sandbox.kube-ovn.io/node-agent";

/// How many pods one agent starts at once. kubelet gives every pod its own worker, so a
/// burst of pods bound to a node is started side by side, not one after another; the
/// bound keeps a burst of hundreds from running hundreds of CNI ADDs at once.
pub const PARALLEL_STARTS: usize = 16;

/// How one node agent runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The Node's name (pods with this `spec.nodeName` are ours).
    pub node: String,
    /// The node's InternalIP (`status.hostIP` of its pods).
    pub host_ip: String,
    /// The CNI configuration list.
    pub conflist: PathBuf,
    /// Where plugin binaries are looked up.
    pub plugin_dirs: Vec<PathBuf>,
    /// The CNI result cache.
    pub cache_dir: PathBuf,
    /// The node's own network namespace: plugins run there (`None`: this
    /// process's namespace).
    pub node_netns: Option<PathBuf>,
    /// Prefix of pod namespace names (`PREFIX` + pod uid).
    pub netns_prefix: String,
    /// How often the agent looks at its pods.
    pub resync: Duration,
}

/// Why the agent could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The conflist cannot be read.
    #[error("node {node}: cannot load CNI conflist {path}: {source}")]
    Conflist {
        /// The node.
        node: String,
        /// The file.
        path: PathBuf,
        /// Why.
        source: cni_spec::ConfigError,
    },
    /// An API request failed.
    #[error("node {node}: API request failed: {source}")]
    Api {
        /// The node.
        node: String,
        /// Why.
        source: kube::Error,
    },
    /// A namespace operation failed.
    #[error("pod {pod}: {source}")]
    Netns {
        /// `namespace/name`.
        pod: String,
        /// Why.
        source: NetnsError,
    },
    /// CNI ADD or DEL failed.
    #[error("pod {pod}: CNI failed: {source}")]
    Cni {
        /// `namespace/name`.
        pod: String,
        /// Why.
        source: RuntimeError,
    },
}

struct RunningPod {
    uid: String,
    netns_name: String,
    attachment: RuntimeConf,
    responder: Responder,
    ips: Vec<String>,
    started: String,
    /// What was last written: (ContainersReady, Ready); `None` until a status write
    /// succeeded, so a failed one is made again on the next pass.
    reported: Option<(bool, bool)>,
}

impl std::fmt::Debug for RunningPod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningPod")
            .field("uid", &self.uid)
            .field("netns", &self.netns_name)
            .field("ips", &self.ips)
            .finish()
    }
}

/// One node's agent.
pub struct NodeAgent {
    client: kube::Client,
    config: AgentConfig,
    list: Arc<NetworkConfigList>,
    cni: Arc<CniRuntime>,
    directory: PodDirectory,
    pods: HashMap<(String, String), RunningPod>,
}

impl std::fmt::Debug for NodeAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeAgent")
            .field("config", &self.config)
            .field("pods", &self.pods)
            .finish()
    }
}

fn key_of(pod: &Pod) -> (String, String) {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

impl NodeAgent {
    /// An agent for `config.node`; `directory` is shared with the exec/logs hook.
    pub fn new(
        client: kube::Client,
        config: AgentConfig,
        directory: PodDirectory,
    ) -> Result<NodeAgent, AgentError> {
        let list = NetworkConfigList::from_file(&config.conflist).map_err(|source| {
            AgentError::Conflist {
                node: config.node.clone(),
                path: config.conflist.clone(),
                source,
            }
        })?;
        let cni = CniRuntime::new(config.plugin_dirs.clone(), config.cache_dir.clone());
        Ok(NodeAgent {
            client,
            config,
            list: Arc::new(list),
            cni: Arc::new(cni),
            directory,
            pods: HashMap::new(),
        })
    }

    fn api_error(&self, source: kube::Error) -> AgentError {
        AgentError::Api {
            node: self.config.node.clone(),
            source,
        }
    }

    /// Creates the Node object (Ready, with its InternalIP) unless it exists.
    pub async fn register_node(&self) -> Result<(), AgentError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        if nodes
            .get_opt(&self.config.node)
            .await
            .map_err(|e| self.api_error(e))?
            .is_some()
        {
            return Ok(());
        }
        let node: Node =
            serde_json::from_value(node_object(&self.config.node, &self.config.host_ip))
                .expect("the Node document is a Node");
        nodes
            .create(&PostParams::default(), &node)
            .await
            .map_err(|e| self.api_error(e))?;
        let status =
            json!({"status": node_object(&self.config.node, &self.config.host_ip)["status"]});
        nodes
            .patch_status(
                &self.config.node,
                &PatchParams::default(),
                &Patch::Merge(&status),
            )
            .await
            .map_err(|e| self.api_error(e))?;
        Ok(())
    }

    /// Registers the node, then reconciles when a pod changes (at the latest every
    /// `resync`) until dropped.
    pub async fn run(mut self) {
        if let Err(e) = self.register_node().await {
            tracing::warn!(error = %e, "node registration failed");
        }
        let mut changes = super::wake::pod_changes(&self.client);
        loop {
            if let Err(e) = self.reconcile_once().await {
                tracing::warn!(error = %e, "node agent pass failed");
            }
            super::wake::next_pass(&mut changes, self.config.resync).await;
        }
    }

    /// One pass: tear down deleted pods, report readiness, start new pods (up to
    /// [`PARALLEL_STARTS`] at once).
    pub async fn reconcile_once(&mut self) -> Result<(), AgentError> {
        let api: Api<Pod> = Api::all(self.client.clone());
        let selector = format!("spec.nodeName={}", self.config.node);
        let listed = api
            .list(&ListParams::default().fields(&selector))
            .await
            .map_err(|e| self.api_error(e))?;
        let mut present = std::collections::HashSet::new();
        let mut new_pods = Vec::new();
        for pod in listed.items {
            let key = key_of(&pod);
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let same = self.pods.get(&key).is_some_and(|r| r.uid == uid);
            if !same {
                if let Some(old) = self.pods.remove(&key) {
                    self.stop(&key, old).await;
                }
            }
            if pod.metadata.deletion_timestamp.is_some() {
                if let Some(running) = self.pods.remove(&key) {
                    self.stop(&key, running).await;
                }
                self.release(&pod).await?;
                continue;
            }
            present.insert(key.clone());
            if same {
                self.report_readiness(&pod).await?;
            } else {
                new_pods.push(pod);
            }
        }
        let gone: Vec<_> = self
            .pods
            .keys()
            .filter(|k| !present.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(running) = self.pods.remove(&key) {
                self.stop(&key, running).await;
            }
        }
        self.start_all(new_pods).await
    }

    /// Starts `pods` side by side, each reporting Running as soon as it is, and keeps
    /// those that started; a pod that did not gets the failure in its status.
    async fn start_all(&mut self, pods: Vec<Pod>) -> Result<(), AgentError> {
        let this = &*self;
        let outcomes: Vec<_> = futures::stream::iter(pods)
            .map(|pod| async move {
                let key = key_of(&pod);
                let outcome = match this.start(&pod).await {
                    Ok(mut running) => {
                        this.report_started(&pod, &mut running).await;
                        Ok(running)
                    }
                    Err(e) => Err(e),
                };
                (key, outcome)
            })
            .buffer_unordered(PARALLEL_STARTS)
            .collect()
            .await;
        let mut failed = Vec::new();
        for (key, outcome) in outcomes {
            match outcome {
                Ok(running) => {
                    self.pods.insert(key, running);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "pod start failed");
                    failed.push((key, e.to_string()));
                }
            }
        }
        for (key, why) in failed {
            self.patch_status(&key, &failed_start_status(&why)).await?;
        }
        Ok(())
    }

    /// Stops the responder of a running pod (its readiness then goes
    /// False); false if the pod does not run here.
    pub fn stop_responder(&mut self, namespace: &str, name: &str) -> bool {
        match self
            .pods
            .get_mut(&(namespace.to_string(), name.to_string()))
        {
            Some(running) => {
                running.responder.stop();
                true
            }
            None => false,
        }
    }

    async fn patch_status(
        &self,
        key: &(String, String),
        status: &serde_json::Value,
    ) -> Result<(), AgentError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &key.0);
        // strategic, as kubelet patches: conditions merge by type, so the conditions
        // of readiness gates (written by others) stay
        api.patch_status(&key.1, &PatchParams::default(), &Patch::Strategic(status))
            .await
            .map_err(|e| self.api_error(e))?;
        Ok(())
    }

    async fn report_readiness(&mut self, pod: &Pod) -> Result<(), AgentError> {
        let key = key_of(pod);
        let Some(running) = self.pods.get_mut(&key) else {
            return Ok(());
        };
        let containers_ready = running.responder.is_running();
        let now = (
            containers_ready,
            containers_ready && readiness_gates_pass(pod),
        );
        if Some(now) == running.reported {
            return Ok(());
        }
        let status = running_status(
            pod,
            &self.config.host_ip,
            &running.ips,
            containers_ready,
            &running.started,
        );
        self.patch_status(&key, &status).await?;
        if let Some(running) = self.pods.get_mut(&key) {
            running.reported = Some(now);
        }
        Ok(())
    }

    /// Adds the agent's finalizer (compare-and-swap on resourceVersion, so a
    /// concurrent writer's finalizers are never dropped).
    async fn hold(&self, pod: &Pod) -> Result<(), AgentError> {
        let mut finalizers = pod.metadata.finalizers.clone().unwrap_or_default();
        if finalizers.iter().any(|f| f == FINALIZER) {
            return Ok(());
        }
        finalizers.push(FINALIZER.to_string());
        self.set_finalizers(pod, finalizers).await
    }

    /// Takes off the agent's finalizer, leaving everyone else's.
    async fn release(&self, pod: &Pod) -> Result<(), AgentError> {
        let finalizers = pod.metadata.finalizers.clone().unwrap_or_default();
        if !finalizers.iter().any(|f| f == FINALIZER) {
            return Ok(());
        }
        let rest = finalizers.into_iter().filter(|f| f != FINALIZER).collect();
        self.set_finalizers(pod, rest).await
    }

    async fn set_finalizers(&self, pod: &Pod, finalizers: Vec<String>) -> Result<(), AgentError> {
        let (ns, name) = key_of(pod);
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &ns);
        let patch = json!({"metadata": {
            "resourceVersion": pod.metadata.resource_version,
            "finalizers": finalizers,
        }});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| self.api_error(e))?;
        Ok(())
    }
}

mod lifecycle;
