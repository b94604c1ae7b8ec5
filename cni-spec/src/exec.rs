//! Executing a plugin binary: the shared I/O of the runtime side and of IPAM delegation.
//!
//! A plugin gets its parameters in `CNI_*` environment variables and its configuration on
//! stdin; it answers on stdout (a result, an error object, or nothing for DEL) and logs on
//! stderr. A non-zero exit means the stdout holds an error object.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::error::{CniError, ErrorCode};

/// Why executing a plugin did not give a usable answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// No executable of that name in any plugin directory.
    #[error("failed to find plugin {plugin:?} in path {dirs:?}")]
    NotFound {
        /// The plugin type.
        plugin: String,
        /// The directories searched.
        dirs: Vec<PathBuf>,
    },
    /// The plugin type is not a plain file name.
    #[error("invalid plugin name {0:?}: must be a file name without '/'")]
    InvalidName(String),
    /// The binary could not be started.
    #[error("failed to start plugin {binary}: {source}")]
    Spawn {
        /// The binary.
        binary: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Talking to the plugin over its pipes failed.
    #[error("I/O with plugin {binary}: {source}")]
    Io {
        /// The binary.
        binary: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The plugin did not finish in time and was killed.
    #[error("plugin {binary} timed out after {timeout:?} and was killed")]
    Timeout {
        /// The binary.
        binary: PathBuf,
        /// The limit.
        timeout: Duration,
    },
    /// The plugin reported a CNI error.
    #[error("plugin {binary} failed: {error}")]
    Failed {
        /// The binary.
        binary: PathBuf,
        /// What it printed.
        error: CniError,
    },
    /// The plugin failed and printed no error object.
    #[error("plugin {binary} failed ({status}) with no error message; stderr: {stderr:?}")]
    NoErrorMessage {
        /// The binary.
        binary: PathBuf,
        /// Its exit status.
        status: ExitStatus,
        /// What it logged.
        stderr: String,
    },
    /// The plugin printed something that is not the JSON expected.
    #[error("plugin {binary} printed invalid output {output:?}: {source}")]
    Garbage {
        /// The binary.
        binary: PathBuf,
        /// The start of what it printed.
        output: String,
        /// The decoding failure.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The plugin succeeded without printing the result it owed.
    #[error("plugin {binary} exited without output, expected a result")]
    NoOutput {
        /// The binary.
        binary: PathBuf,
    },
}

impl ExecError {
    /// The CNI error a plugin delegating to another one should answer with: the
    /// delegate's own error as is, decoding problems as code 6, the rest as internal (999),
    /// as the reference skeleton does for errors that are not CNI errors.
    pub fn to_cni_error(&self) -> CniError {
        match self {
            ExecError::Failed { error, .. } => error.clone(),
            ExecError::Garbage { .. } | ExecError::NoOutput { .. } => {
                CniError::new(ErrorCode::DecodingFailure, self.to_string())
            }
            _ => CniError::new(ErrorCode::INTERNAL, self.to_string()),
        }
    }
}

/// Finds `plugin` in `dirs`, first match wins.
pub fn find_plugin(plugin: &str, dirs: &[PathBuf]) -> Result<PathBuf, ExecError> {
    if plugin.is_empty() || plugin.contains('/') || plugin == "." || plugin == ".." {
        return Err(ExecError::InvalidName(plugin.to_owned()));
    }
    dirs.iter()
        .map(|d| d.join(plugin))
        .find(|p| p.is_file())
        .ok_or_else(|| ExecError::NotFound {
            plugin: plugin.to_owned(),
            dirs: dirs.to_vec(),
        })
}

/// Splits a `CNI_PATH` value (OS list separator) into directories.
pub fn split_path(value: &str) -> Vec<PathBuf> {
    std::env::split_paths(value)
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

/// Runs `binary` with the `CNI_*` variables in `cni_env` (replacing any inherited ones) and
/// `stdin`; returns stdout when it exits 0, kills it after `timeout`.
pub fn exec_plugin(
    binary: &Path,
    cni_env: &[(String, String)],
    stdin: &[u8],
    timeout: Duration,
) -> Result<Vec<u8>, ExecError> {
    let io_err = |source| ExecError::Io {
        binary: binary.to_owned(),
        source,
    };
    let mut cmd = Command::new(binary);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CNI_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(cni_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|source| ExecError::Spawn {
        binary: binary.to_owned(),
        source,
    })?;
    let mut input = child.stdin.take().expect("stdin is piped");
    let stdin_data = stdin.to_vec();
    // Writing and reading on helper threads keeps a plugin that fills a pipe from blocking
    // us while we watch the clock; a plugin that never reads stdin just gets EPIPE.
    let writer = thread::spawn(move || input.write_all(&stdin_data));
    let stdout = read_to_end(child.stdout.take().expect("stdout is piped"));
    let stderr = read_to_end(child.stderr.take().expect("stderr is piped"));
    let status = wait_with_timeout(&mut child, timeout).map_err(io_err)?;
    let Some(status) = status else {
        return Err(ExecError::Timeout {
            binary: binary.to_owned(),
            timeout,
        });
    };
    let _ = writer.join();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
    if !stderr.is_empty() {
        tracing::debug!(binary = %binary.display(), %stderr, "plugin stderr");
    }
    interpret_output(binary, status, stdout, stderr)
}

/// Exit 0: stdout is the answer. Otherwise stdout must hold an error object.
fn interpret_output(
    binary: &Path,
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
) -> Result<Vec<u8>, ExecError> {
    if status.success() {
        return Ok(stdout);
    }
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Err(ExecError::NoErrorMessage {
            binary: binary.to_owned(),
            status,
            stderr,
        });
    }
    match serde_json::from_slice::<CniError>(&stdout) {
        Ok(error) => Err(ExecError::Failed {
            binary: binary.to_owned(),
            error,
        }),
        Err(source) => Err(garbage(binary, &stdout, source)),
    }
}

/// Builds the error for output that is not the JSON expected.
pub(crate) fn garbage(
    binary: &Path,
    output: &[u8],
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> ExecError {
    let text = String::from_utf8_lossy(output);
    ExecError::Garbage {
        binary: binary.to_owned(),
        output: text.chars().take(200).collect(),
        source: source.into(),
    }
}

fn read_to_end(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

/// Waits for the child; kills and reaps it and returns `None` when `timeout` passes.
fn wait_with_timeout(child: &mut Child, timeout: Duration) -> std::io::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            tracing::warn!(pid = child.id(), "killing plugin after timeout");
            child.kill()?;
            child.wait()?;
            return Ok(None);
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}
