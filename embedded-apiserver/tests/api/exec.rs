//! `kubectl exec` and `kubectl logs` with the real kubectl, through a
//! registered `PodRuntime` that runs real processes (the sandbox's node
//! agent does the same inside the pod's network namespace).

use super::common::{server, within};
use super::kubectl::setup;
use bytes::Bytes;
use embedded_apiserver::{
    run_process, ExecIo, ExecRequest, LogRequest, LogStream, PodRuntime, PodRuntimeError,
};
use serde_json::Value;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;

/// Runs commands on the host (no pod isolation: this test is about the
/// protocol) and serves a fixed log; records what it was asked.
#[derive(Debug, Default)]
struct HostRuntime {
    asked: Mutex<Vec<ExecRequest>>,
}

const LOG: &str = "line one\nline two\nline three\n";

#[async_trait::async_trait]
impl PodRuntime for HostRuntime {
    async fn exec(
        &self,
        pod: &Value,
        req: ExecRequest,
        io: ExecIo,
    ) -> Result<i32, PodRuntimeError> {
        assert_eq!(pod["metadata"]["name"], req.pod.as_str());
        self.asked.lock().unwrap().push(req.clone());
        let mut cmd = tokio::process::Command::new(&req.command[0]);
        cmd.args(&req.command[1..]);
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
        let lines: Vec<&str> = LOG.lines().collect();
        let start = lines.len() - req.tail_lines.unwrap_or(lines.len()).min(lines.len());
        let text: String = lines[start..].iter().map(|l| format!("{l}\n")).collect();
        Ok(Box::pin(futures::stream::iter([Bytes::from(text)])))
    }
}

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: app, image: busybox}]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_exec_and_logs_through_the_pod_runtime() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let Some(k) = setup(dir.path(), kubeconfig).await else {
        return;
    };
    let pod_file = k.file("pod.yaml", POD);
    k.ok(&["apply", "-f", &pod_file]).await;

    // No runtime registered yet: a Status error naming the pod.
    let err = k.fails(&["exec", "p", "--", "true"]).await;
    assert!(err.contains("no pod runtime"), "{err}");

    let runtime = Arc::new(HostRuntime::default());
    server.set_pod_runtime(runtime.clone());

    // stdout, stderr and the exit code, each on its own channel.
    let out = within(
        "kubectl exec",
        k.command(&[
            "exec",
            "p",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ])
        .output(),
    )
    .await
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("err\n"),
        "{out:?}"
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let asked = runtime.asked.lock().unwrap().last().cloned().unwrap();
    assert_eq!(
        asked.command,
        ["sh", "-c", "echo out; echo err >&2; exit 3"]
    );
    assert_eq!(asked.container.as_deref(), Some("app"));
    assert!(!asked.stdin && asked.stdout && asked.stderr && !asked.tty);

    // Success: exit code 0 and only stdout.
    let out = k.ok(&["exec", "p", "--", "echo", "hello world"]).await;
    assert_eq!(out, "hello world\n");

    // stdin piped through `-i`, closed at its end (v5 close signal).
    let mut child = k
        .command(&["exec", "-i", "p", "--", "tr", "a-z", "A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"piped through\n").await.unwrap();
    drop(stdin);
    let out = within("kubectl exec -i", child.wait_with_output())
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "PIPED THROUGH\n");

    // A command that cannot start: kubectl fails and names it.
    let err = k.fails(&["exec", "p", "--", "/nonexistent/cmd"]).await;
    assert!(err.contains("/nonexistent/cmd"), "{err}");

    // Unknown pod: NotFound before any upgrade.
    let err = k.fails(&["exec", "nope", "--", "true"]).await;
    assert!(
        err.contains("NotFound") || err.contains("not found"),
        "{err}"
    );

    // kubectl interrupted mid-command: the command is stopped too.
    let pid_file = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 1000", pid_file.display());
    let mut child = k
        .command(&["exec", "p", "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = within("the command to start", async {
        loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|p| p.trim().parse::<u32>().ok())
            {
                return pid;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    child.kill().await.unwrap();
    within("the command to be stopped", async {
        // gone, or a zombie nobody reaps yet
        let proc_status = format!("/proc/{pid}/status");
        while std::fs::read_to_string(&proc_status).is_ok_and(|s| !s.contains("State:\tZ")) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;

    // Logs, whole and tailed.
    assert_eq!(k.ok(&["logs", "p"]).await, LOG);
    assert_eq!(k.ok(&["logs", "p", "--tail=1"]).await, "line three\n");
}
