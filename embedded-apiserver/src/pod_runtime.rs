//! The hook behind `kubectl exec` and `kubectl logs`.
//!
//! An API server cannot run a command in a pod: kube-apiserver forwards
//! `pods/exec` and `pods/log` to the kubelet of the pod's node. This server
//! forwards them to a [`PodRuntime`] registered with
//! [`Handle::set_pod_runtime`](crate::Handle::set_pod_runtime) (the
//! sandbox's node agent implements it). The server speaks the wire protocols
//! (the websocket channel protocol `v5.channel.k8s.io` / `v4.channel.k8s.io`
//! for exec, a chunked text stream for logs); the runtime only moves bytes.

use bytes::Bytes;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::sync::mpsc;

/// What `kubectl exec` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub pod: String,
    /// `container` query parameter, if any.
    pub container: Option<String>,
    /// The command and its arguments (`command` repeated in the query).
    pub command: Vec<String>,
    /// Whether the client sends stdin.
    pub stdin: bool,
    /// Whether the client wants stdout.
    pub stdout: bool,
    /// Whether the client wants stderr.
    pub stderr: bool,
    /// Whether the client asked for a terminal.
    pub tty: bool,
}

/// The streams of one exec session. Dropping a sender ends that stream for
/// the client; `stdin` yields `None` once the client closed its stdin.
#[derive(Debug)]
pub struct ExecIo {
    /// The client's stdin (`None` unless the request had `stdin=true`).
    pub stdin: Option<mpsc::Receiver<Bytes>>,
    /// Bytes for the client's stdout.
    pub stdout: mpsc::Sender<Bytes>,
    /// Bytes for the client's stderr.
    pub stderr: mpsc::Sender<Bytes>,
}

/// What `kubectl logs` asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRequest {
    /// Pod namespace.
    pub namespace: String,
    /// Pod name.
    pub pod: String,
    /// `container` query parameter, if any.
    pub container: Option<String>,
    /// `follow=true`: keep the stream open for new lines.
    pub follow: bool,
    /// `tailLines=N`: only the last N lines of what exists now.
    pub tail_lines: Option<usize>,
}

/// A pod's log, as the client reads it.
pub type LogStream = BoxStream<'static, Bytes>;

/// Why a runtime could not serve a request (the client sees the message).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PodRuntimeError {
    /// The pod is not running on any node this runtime knows.
    #[error("pod {namespace}/{pod} is not running")]
    NotRunning {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        pod: String,
    },
    /// The command could not be started.
    #[error("cannot start {command:?} in pod {namespace}/{pod}: {source}")]
    Start {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        pod: String,
        /// The command.
        command: Vec<String>,
        /// Why.
        source: std::io::Error,
    },
    /// The pod's log cannot be read.
    #[error("cannot read the log of pod {namespace}/{pod}: {source}")]
    Log {
        /// Pod namespace.
        namespace: String,
        /// Pod name.
        pod: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Runs commands in pods and reads their logs: the kubelet side of
/// `pods/exec` and `pods/log`. `pod` is the stored Pod object (its
/// `spec.nodeName` tells a multi-node runtime where to go).
#[async_trait::async_trait]
pub trait PodRuntime: Send + Sync + std::fmt::Debug {
    /// Runs `req.command` in the pod with `io` as its streams; returns the
    /// exit code once the command ended.
    async fn exec(&self, pod: &Value, req: ExecRequest, io: ExecIo)
        -> Result<i32, PodRuntimeError>;

    /// The pod's log (ends at the end of the log unless `req.follow`).
    async fn logs(&self, pod: &Value, req: LogRequest) -> Result<LogStream, PodRuntimeError>;
}

/// Runs `command` with `io` as its stdin, stdout and stderr and returns its
/// exit code (128 + the signal for a command killed by one, as a shell
/// reports it). What a runtime's [`PodRuntime::exec`] does once it has
/// built the command (for instance `nsenter --net=NETNS CMD...`).
pub async fn run_process(mut command: tokio::process::Command, io: ExecIo) -> std::io::Result<i32> {
    use std::process::Stdio;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ExecIo {
        stdin,
        stdout,
        stderr,
    } = io;
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    if let (Some(mut from_client), Some(mut to_child)) = (stdin, child.stdin.take()) {
        tokio::spawn(async move {
            while let Some(chunk) = from_client.recv().await {
                if to_child.write_all(&chunk).await.is_err() {
                    break;
                }
            }
            // dropping `to_child` closes the command's stdin: it sees EOF
        });
    }
    async fn pump(mut from: impl AsyncReadExt + Unpin, to: mpsc::Sender<Bytes>) {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0 || to.send(Bytes::copy_from_slice(&buf[..n])).await.is_err() {
                break;
            }
        }
    }
    let out = child.stdout.take().map(|o| tokio::spawn(pump(o, stdout)));
    let err = child.stderr.take().map(|e| tokio::spawn(pump(e, stderr)));
    let status = child.wait().await?;
    // Everything the command wrote reaches the client before its status.
    for task in [out, err].into_iter().flatten() {
        let _ = task.await;
    }
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1))
}
