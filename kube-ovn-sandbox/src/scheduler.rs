//! The scheduler: binds each pending pod without `spec.nodeName` to a Ready,
//! schedulable node, round-robin in name order.

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

/// Round-robin over Ready nodes.
#[derive(Debug, Default)]
pub struct Scheduler {
    next: usize,
}

fn is_ready(node: &Node) -> bool {
    let schedulable = !node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    let ready = node
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Ready" && c.status == "True");
    schedulable && ready
}

impl Scheduler {
    /// Binds every unbound pod; returns `(pod, node)` of each binding.
    pub async fn schedule_once(
        &mut self,
        client: &kube::Client,
    ) -> Result<Vec<(String, String)>, kube::Error> {
        let nodes: Api<Node> = Api::all(client.clone());
        let mut ready: Vec<String> = nodes
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(is_ready)
            .filter_map(|n| n.metadata.name)
            .collect();
        ready.sort();
        let pods: Api<Pod> = Api::all(client.clone());
        let mut bound = Vec::new();
        if ready.is_empty() {
            return Ok(bound);
        }
        for pod in pods.list(&ListParams::default()).await?.items {
            let unbound = pod.spec.as_ref().is_some_and(|s| s.node_name.is_none());
            if !unbound || pod.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let node = ready[self.next % ready.len()].clone();
            self.next += 1;
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
            let patch = json!({"spec": {"nodeName": node}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            tracing::info!(pod = %format!("{ns}/{name}"), %node, "scheduled");
            bound.push((format!("{ns}/{name}"), node));
        }
        Ok(bound)
    }
}
