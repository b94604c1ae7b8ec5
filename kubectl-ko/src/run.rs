//! Running an [`Invocation`]: a local process, or an exec into a pod (kube's websocket
//! attach), with the exit status passed back.

use std::process::Stdio;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams};
use kube::Client;
use tokio::io::AsyncReadExt;

use super::error::KoError;
use super::target::Invocation;

/// What a finished tool left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// Its exit status (1 when it died by a signal).
    pub code: i32,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Output {
    /// The output, or [`KoError::Tool`] when the status is not 0.
    pub fn success(self, program: &str) -> Result<Output, KoError> {
        if self.code == 0 {
            Ok(self)
        } else {
            Err(KoError::Tool {
                program: program.to_string(),
                stderr: self.stderr.trim().to_string(),
            })
        }
    }
}

/// Runs `inv` with its output captured.
pub async fn capture(inv: &Invocation, client: Option<&Client>) -> Result<Output, KoError> {
    match inv {
        Invocation::Local { program, args, env } => {
            let out = tokio::process::Command::new(program)
                .args(args)
                .envs(env)
                .stdin(Stdio::null())
                .output()
                .await
                .map_err(|source| KoError::Spawn {
                    program: program.clone(),
                    source,
                })?;
            Ok(Output {
                code: out.status.code().unwrap_or(1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            })
        }
        Invocation::Exec {
            namespace,
            pod,
            container,
            command,
        } => {
            let client = client.ok_or_else(|| KoError::Unsupported {
                what: "exec".to_string(),
                mode: "without a Kubernetes client".to_string(),
            })?;
            exec(client, namespace, pod, container, command).await
        }
    }
}

/// Runs `inv` for a pass-through command: its output goes to ours, its status is
/// returned.
pub async fn pass_through(inv: &Invocation, client: Option<&Client>) -> Result<i32, KoError> {
    let out = capture(inv, client).await?;
    print!("{}", out.stdout);
    eprint!("{}", out.stderr);
    Ok(out.code)
}

async fn exec(
    client: &Client,
    namespace: &str,
    pod: &str,
    container: &str,
    command: &[String],
) -> Result<Output, KoError> {
    let kube_err = |source| KoError::Kube {
        context: format!("exec in pod {namespace}/{pod} container {container}"),
        source,
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let params = AttachParams::default()
        .container(container)
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut process = api
        .exec(pod, command.to_vec(), &params)
        .await
        .map_err(kube_err)?;
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut out) = process.stdout() {
        let _ = out.read_to_string(&mut stdout).await;
    }
    if let Some(mut err) = process.stderr() {
        let _ = err.read_to_string(&mut stderr).await;
    }
    let status = match process.take_status() {
        Some(status) => status.await,
        None => None,
    };
    Ok(Output {
        code: exit_code(status.as_ref()),
        stdout,
        stderr,
    })
}

/// The exit code in the Status an exec ends with: `Success` is 0; a failure carries
/// the code as the cause `ExitCode` (1 when it does not say).
pub fn exit_code(status: Option<&Status>) -> i32 {
    let Some(status) = status else { return 1 };
    if status.status.as_deref() == Some("Success") {
        return 0;
    }
    status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|causes| {
            causes
                .iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
        })
        .and_then(|c| c.message.as_deref()?.parse().ok())
        .unwrap_or(1)
}
