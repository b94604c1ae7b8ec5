//! `kubectl ko`, Kube-OVN's kubectl plugin: `nbctl`, `sbctl`, `vsctl NODE`, `ofctl NODE`
//! pass their arguments to the real tools; `trace` runs `ovn-trace` for a pod's packet
//! and prints the verdict first; `diagnose`, `subnet-usage` and `get-pod-network` read
//! the databases (typed clients) and the Kubernetes API. [`target`] says where the
//! databases and nodes are: a sandbox's `sandbox.json`, or a Kube-OVN-style cluster.

mod dbs;
pub mod diagnose;
mod error;
pub mod podnet;
pub mod run;
pub mod target;
pub mod trace;
pub mod usage;

#[cfg(test)]
mod tests;

use std::path::PathBuf;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::Client;
use kube_ovn_api::NamespacedName;

pub use error::KoError;
use target::{Invocation, Place, SandboxState, KUBE_OVN_NAMESPACE};

/// One `kubectl ko` run: the sandbox state (None in cluster mode) and the kubeconfig.
#[derive(Debug, Clone)]
pub struct Ko {
    /// The sandbox, if any.
    pub sandbox: Option<SandboxState>,
    /// `--kubeconfig` (else the sandbox's, else kubectl's default).
    pub kubeconfig: Option<PathBuf>,
}

impl Ko {
    /// A client as kubectl's: `--kubeconfig`, the sandbox's kubeconfig, or `KUBECONFIG` /
    /// `~/.kube/config` / in-cluster.
    pub async fn client(&self) -> Result<Client, KoError> {
        let path = self
            .kubeconfig
            .clone()
            .or_else(|| self.sandbox.as_ref().map(|s| s.kubeconfig.clone()));
        kube_ovn_cmd::kube_client::kube_client(path.as_deref())
            .await
            .map_err(|e| KoError::Kubeconfig {
                path: path
                    .as_ref()
                    .map_or("default".into(), |p| p.display().to_string()),
                reason: e.to_string(),
            })
    }

    /// How `tool ARGS` runs against `place`, plus the client an exec needs.
    pub async fn invocation(
        &self,
        place: &Place,
        tool: &str,
        args: &[String],
    ) -> Result<(Invocation, Option<Client>), KoError> {
        if let Some(state) = &self.sandbox {
            return Ok((target::sandbox_invocation(state, place, tool, args)?, None));
        }
        let client = self.client().await?;
        let pods: Api<Pod> = Api::namespaced(client.clone(), KUBE_OVN_NAMESPACE);
        let list = pods
            .list(&ListParams::default())
            .await
            .map_err(|source| KoError::Kube {
                context: format!("list pods in {KUBE_OVN_NAMESPACE}"),
                source,
            })?;
        let inv = target::cluster_invocation(&list.items, place, tool, args)?;
        Ok((inv, Some(client)))
    }

    /// `nbctl`, `sbctl`, `vsctl NODE`, `ofctl NODE`: the tool with the remaining
    /// arguments; its exit status is returned.
    pub async fn pass_through(
        &self,
        place: &Place,
        tool: &str,
        args: &[String],
    ) -> Result<i32, KoError> {
        let (inv, client) = self.invocation(place, tool, args).await?;
        run::pass_through(&inv, client.as_ref()).await
    }

    /// The sandbox, or [`KoError::Unsupported`] naming `what` in cluster mode.
    pub fn require_sandbox(&self, what: &str) -> Result<&SandboxState, KoError> {
        self.sandbox.as_ref().ok_or_else(|| KoError::Unsupported {
            what: what.to_string(),
            mode: "in cluster mode yet (it reads the node databases directly)".to_string(),
        })
    }
}

/// `NAMESPACE/POD` split in two.
pub fn split_pod(text: &str) -> Result<(String, String), KoError> {
    let key: NamespacedName = text.parse().map_err(|_| KoError::BadArgument {
        value: text.to_string(),
        reason: "expected NAMESPACE/POD".to_string(),
    })?;
    Ok((key.namespace, key.name))
}

/// The pod `namespace/name`, or [`KoError::UnknownPod`].
pub async fn get_pod(client: &Client, namespace: &str, name: &str) -> Result<Pod, KoError> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    api.get_opt(name)
        .await
        .map_err(|source| KoError::Kube {
            context: format!("get pod {namespace}/{name}"),
            source,
        })?
        .ok_or_else(|| KoError::UnknownPod {
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
}
