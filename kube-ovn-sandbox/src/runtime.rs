//! The pods this process runs, by name: what `kubectl exec` and `kubectl
//! logs` need (the pod's network namespace and its responder's log). All
//! node agents of one sandbox share one [`PodDirectory`], which is the
//! [`PodRuntime`] registered with the embedded API server.

use super::responder::PodLog;
use embedded_apiserver::{
    run_process, ExecIo, ExecRequest, LogRequest, LogStream, PodRuntime, PodRuntimeError,
};
use futures::StreamExt;
use serde_json::Value;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// What exec and logs need of a running pod.
#[derive(Debug, Clone)]
pub struct PodEntry {
    /// The pod's network namespace file.
    pub netns: PathBuf,
    /// The responder's log.
    pub log: PodLog,
}

/// Running pods by `(namespace, name)`.
#[derive(Debug, Clone, Default)]
pub struct PodDirectory {
    pods: Arc<Mutex<HashMap<(String, String), PodEntry>>>,
}

impl PodDirectory {
    /// Records a running pod.
    pub fn insert(&self, namespace: &str, name: &str, entry: PodEntry) {
        self.lock().insert((namespace.into(), name.into()), entry);
    }

    /// Forgets a pod.
    pub fn remove(&self, namespace: &str, name: &str) {
        self.lock()
            .remove(&(namespace.to_string(), name.to_string()));
    }

    /// A running pod.
    pub fn get(&self, namespace: &str, name: &str) -> Option<PodEntry> {
        self.lock()
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), PodEntry>> {
        self.pods.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn entry(&self, namespace: &str, pod: &str) -> Result<PodEntry, PodRuntimeError> {
        self.get(namespace, pod)
            .ok_or_else(|| PodRuntimeError::NotRunning {
                namespace: namespace.into(),
                pod: pod.into(),
            })
    }
}

#[async_trait::async_trait]
impl PodRuntime for PodDirectory {
    /// Runs the command in the pod's network namespace (`nsenter --net`):
    /// the pod's interfaces, routes and IPs, the host's filesystem.
    async fn exec(
        &self,
        _pod: &Value,
        req: ExecRequest,
        io: ExecIo,
    ) -> Result<i32, PodRuntimeError> {
        let entry = self.entry(&req.namespace, &req.pod)?;
        let mut cmd = tokio::process::Command::new("nsenter");
        cmd.arg(format!("--net={}", entry.netns.display()))
            .arg("--")
            .args(&req.command);
        run_process(cmd, io)
            .await
            .map_err(|source| PodRuntimeError::Start {
                namespace: req.namespace.clone(),
                pod: req.pod.clone(),
                command: req.command.clone(),
                source,
            })
    }

    async fn logs(&self, _pod: &Value, req: LogRequest) -> Result<LogStream, PodRuntimeError> {
        let entry = self.entry(&req.namespace, &req.pod)?;
        let (so_far, feed) = entry.log.read(req.tail_lines);
        let head = futures::stream::iter([bytes::Bytes::from(so_far)]);
        if !req.follow {
            return Ok(head.boxed());
        }
        let more = futures::stream::unfold(feed, |mut feed| async move {
            loop {
                match feed.recv().await {
                    Ok(line) => return Some((line, feed)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => return None,
                }
            }
        });
        Ok(head.chain(more).boxed())
    }
}
