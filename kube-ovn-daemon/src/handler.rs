//! The daemon's CNI side (Kube-OVN's `pkg/daemon/handler.go`): one [`CniDaemon`] per
//! process holds the API client, the replica of the node's `Open_vSwitch` database and
//! the settings; [`super::add`], [`super::del`] and [`super::gc`] are its operations.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use datapath::GatewayCheck;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use ovs_vsctl::{VsClient, VsError};
use tokio::sync::Mutex;

use super::hostns::{HostNamespace, HostNamespaceError};
use super::INTEGRATION_BRIDGE;
use kube_ovn_cni::api::codes;

/// The daemon's settings for CNI requests.
#[derive(Debug, Clone)]
pub struct CniSettings {
    /// This node (`KUBE_NODE_NAME`): requests for pods elsewhere are refused.
    pub node_name: String,
    /// The pod MTU when the subnet sets none (`--mtu`).
    pub mtu: u32,
    /// The integration bridge (`br-int`).
    pub bridge: String,
    /// Where the host ends of the veths live (ovs-vswitchd's namespace).
    pub host_netns: HostNamespace,
    /// How long ADD waits for the controller's `allocated` / `routed` annotations
    /// (Kube-OVN: 20 tries a second apart).
    pub annotation_wait: Duration,
    /// How often the pod is read again meanwhile.
    pub annotation_poll: Duration,
    /// How long ADD waits for `external_ids:ovn-installed` (Kube-OVN: 30 s).
    pub ovn_installed_wait: Duration,
    /// The gateway check once `ovn-installed` is there, if a quick probe made while it
    /// was awaited got no answer.
    pub gateway_check: GatewayCheck,
    /// TX checksum offload off in the pod (the userspace datapath needs full checksums).
    pub userspace_datapath: bool,
}

impl CniSettings {
    /// Kube-OVN's defaults for `node_name`.
    pub fn new(node_name: &str) -> Self {
        CniSettings {
            node_name: node_name.to_string(),
            mtu: 1400,
            bridge: INTEGRATION_BRIDGE.to_string(),
            host_netns: HostNamespace::Current,
            annotation_wait: Duration::from_secs(20),
            annotation_poll: Duration::from_millis(250),
            ovn_installed_wait: Duration::from_secs(30),
            gateway_check: GatewayCheck::default(),
            userspace_datapath: false,
        }
    }
}

/// Why a CNI request failed; each names the pod, port or field at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CniFailure {
    /// A field of the request is missing or malformed.
    #[error("invalid request: {field}: {reason}")]
    InvalidRequest {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The pod is scheduled on another node (or on none).
    #[error("pod {pod} is scheduled on node {scheduled:?}, not on this node {node}")]
    NotOnThisNode {
        /// `namespace/name`.
        pod: String,
        /// `spec.nodeName`.
        scheduled: Option<String>,
        /// This node.
        node: String,
    },
    /// The pod does not exist.
    #[error("pod {pod} not found")]
    PodNotFound {
        /// `namespace/name`.
        pod: String,
    },
    /// The pod is being deleted and has no network: none will come.
    #[error("pod {pod} is being deleted: {what}; not waiting for it")]
    PodTerminating {
        /// `namespace/name`.
        pod: String,
        /// What is missing.
        what: &'static str,
    },
    /// An annotation of the pod is malformed.
    #[error("pod {pod}: {source}")]
    BadAnnotation {
        /// `namespace/name`.
        pod: String,
        /// Which key and why.
        #[source]
        source: kube_ovn_api::annotations::AnnotationError,
    },
    /// The controller's annotations did not arrive in time.
    #[error("{what} {pod} after {waited:?}")]
    NotAllocated {
        /// `namespace/name`.
        pod: String,
        /// What is missing (`no address allocated`, `route is not ready`).
        what: &'static str,
        /// How long we waited.
        waited: Duration,
    },
    /// ovn-controller did not install the port in time (no chassis, no logical port).
    #[error("port {port} (iface-id {iface_id}) not ovn-installed after {waited:?}")]
    NotInstalled {
        /// The host end.
        port: String,
        /// The logical port it binds.
        iface_id: String,
        /// How long we waited.
        waited: Duration,
    },
    /// The API server failed.
    #[error("API request for pod {pod} failed")]
    Api {
        /// `namespace/name` (or the Subnet).
        pod: String,
        /// Why.
        #[source]
        source: Box<kube::Error>,
    },
    /// The `Open_vSwitch` database failed.
    #[error("Open_vSwitch operation on port {port} failed")]
    Ovs {
        /// The host end.
        port: String,
        /// Why.
        #[source]
        source: Box<VsError>,
    },
    /// The pod's interface could not be built, checked or removed.
    #[error("datapath for container {container} failed")]
    Datapath {
        /// The container id.
        container: String,
        /// Why.
        #[source]
        source: Box<datapath::Error>,
    },
    /// The pod's QoS (`ingress_rate`, `egress_rate`, netem) could not be applied.
    #[error("QoS of pod {pod} failed")]
    Qos {
        /// `namespace/name`.
        pod: String,
        /// Why.
        #[source]
        source: Box<super::qos::QosError>,
    },
    /// The host namespace could not be entered.
    #[error(transparent)]
    HostNamespace(#[from] HostNamespaceError),
}

impl CniFailure {
    /// The JSON-RPC error code the CNI binary maps to a CNI error code.
    pub fn code(&self) -> i32 {
        match self {
            CniFailure::InvalidRequest { .. } | CniFailure::BadAnnotation { .. } => {
                codes::INVALID_REQUEST
            }
            CniFailure::NotOnThisNode { .. } => codes::NOT_ON_THIS_NODE,
            CniFailure::PodNotFound { .. } | CniFailure::PodTerminating { .. } => {
                codes::POD_NOT_FOUND
            }
            CniFailure::NotAllocated { .. } | CniFailure::NotInstalled { .. } => codes::NOT_READY,
            CniFailure::Datapath { source, .. }
                if matches!(**source, datapath::Error::GatewayUnreachable { .. }) =>
            {
                codes::NOT_READY
            }
            _ => codes::INTERNAL,
        }
    }

    pub(crate) fn ovs(port: &str) -> impl FnOnce(VsError) -> CniFailure + '_ {
        move |source| CniFailure::Ovs {
            port: port.to_string(),
            source: Box::new(source),
        }
    }

    pub(crate) fn datapath(container: &str) -> impl FnOnce(datapath::Error) -> CniFailure + '_ {
        move |source| CniFailure::Datapath {
            container: container.to_string(),
            source: Box::new(source),
        }
    }
}

/// The daemon's CNI state: one per process, shared by every request.
pub struct CniDaemon {
    pub(crate) client: kube::Client,
    pub(crate) vs: VsClient,
    pub(crate) settings: CniSettings,
    /// One lock per container: two ADDs (or an ADD and a DEL) for one container never
    /// interleave.
    locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
}

impl std::fmt::Debug for CniDaemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CniDaemon")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl CniDaemon {
    /// The daemon on `client` (the API server) and `vs` (the node's `Open_vSwitch`).
    pub fn new(client: kube::Client, vs: VsClient, settings: CniSettings) -> Arc<CniDaemon> {
        Arc::new(CniDaemon {
            client,
            vs,
            settings,
            locks: Mutex::new(HashMap::new()),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &CniSettings {
        &self.settings
    }

    /// The lock of one container, held while a request for it runs.
    pub(crate) async fn lock(&self, container: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().await;
            // drop locks nobody holds, so the map does not grow with every pod
            locks.retain(|_, l| Arc::strong_count(l) > 1);
            locks.entry(container.to_string()).or_default().clone()
        };
        lock.lock_owned().await
    }

    /// Reads a pod; `None` when it does not exist.
    pub(crate) async fn get_pod(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Pod>, CniFailure> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        pods.get_opt(name).await.map_err(|source| CniFailure::Api {
            pod: format!("{namespace}/{name}"),
            source: Box::new(source),
        })
    }

    /// Checks the pod is scheduled here.
    pub(crate) fn check_node(&self, pod: &Pod, key: &str) -> Result<(), CniFailure> {
        let scheduled = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        if scheduled.as_deref() == Some(self.settings.node_name.as_str()) {
            return Ok(());
        }
        Err(CniFailure::NotOnThisNode {
            pod: key.to_string(),
            scheduled,
            node: self.settings.node_name.clone(),
        })
    }
}
