//! What can go wrong in `up`, `status`, `matrix` and `down`.

use std::path::PathBuf;

/// A sandbox command's failure, naming what failed on which object.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// `--nodes` out of range.
    #[error("--nodes must be 1 to {max}, not {given}")]
    NodeCount {
        /// What was asked for.
        given: usize,
        /// [`super::MAX_NODES`].
        max: usize,
    },
    /// A manifest file cannot be read.
    #[error("cannot read manifest {path}")]
    ManifestRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A manifest document is not a Kubernetes object.
    #[error("manifest {path}, document {index}: {reason}")]
    ManifestInvalid {
        /// The file.
        path: PathBuf,
        /// Which YAML document (from 1).
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The API server refused an object.
    #[error("applying {kind} {name} from {path}")]
    Apply {
        /// The object's kind.
        kind: String,
        /// `namespace/name` or `name`.
        name: String,
        /// The manifest it came from.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<kube::Error>,
    },
    /// A manifest names a kind the API server does not serve.
    #[error("manifest {path}: the API server does not serve {api_version} {kind}")]
    UnknownKind {
        /// The file.
        path: PathBuf,
        /// `apiVersion`.
        api_version: String,
        /// `kind`.
        kind: String,
    },
    /// There is no sandbox in the state directory.
    #[error(
        "no sandbox in {dir}: {file} is missing (run `kube-ovn-sandbox up --state-dir {dir}`)"
    )]
    NotRunning {
        /// The state directory.
        dir: PathBuf,
        /// The file that should be there.
        file: PathBuf,
    },
    /// A state file is unreadable or malformed.
    #[error("state file {path} is unreadable: {reason}")]
    StateFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A file or directory in the state directory could not be written or removed.
    #[error("i/o error on {path}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A name the sandbox would make is taken by something that is not ours.
    #[error("network namespace {netns} already exists and is not this sandbox's (another sandbox with prefix {prefix:?}? pick another --prefix or run its `down`)")]
    NameTaken {
        /// The namespace.
        netns: String,
        /// The sandbox's name prefix.
        prefix: String,
    },
    /// The supervisor exited or never reported ready.
    #[error("the sandbox supervisor {what}; last lines of {log}:\n{tail}")]
    Supervisor {
        /// What happened (`exited during start-up`, `was not ready within 180s`).
        what: String,
        /// Its log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// Starting the OVN part failed.
    #[error("starting OVN: {0}")]
    Harness(#[from] ovn_harness::HarnessError),
    /// A part could not be started.
    #[error("cannot start {what}")]
    Spawn {
        /// Which part.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A part started but did not become ready.
    #[error("{what} was not ready within {secs}s; last lines of {log}:\n{tail}")]
    NotReady {
        /// Which part.
        what: String,
        /// The bound.
        secs: u64,
        /// Its log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// An API request failed.
    #[error("API request failed: {what}")]
    Api {
        /// What was asked.
        what: String,
        /// Why.
        #[source]
        source: Box<kube::Error>,
    },
    /// The kubeconfig cannot be used.
    #[error("kubeconfig {path}: {reason}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Pods did not reach Running in time.
    #[error("pods not Running after {secs}s: {stuck}")]
    PodsStuck {
        /// The bound.
        secs: u64,
        /// `namespace/name (phase: reason)` for each.
        stuck: String,
    },
    /// The embedded API server did not start.
    #[error("the embedded API server did not start: {0}")]
    ApiServer(String),
    /// A node agent could not be set up.
    #[error(transparent)]
    Agent(#[from] crate::agent::AgentError),
    /// The matrix could not load the cluster.
    #[error(transparent)]
    Matrix(#[from] crate::matrix::MatrixError),
    /// Writing `sandbox.json` failed.
    #[error(transparent)]
    State(#[from] kubectl_ko::KoError),
    /// Bad command-line input.
    #[error("{0}")]
    Usage(String),
    /// `down` could not undo everything; each failure is listed.
    #[error("down left things behind:\n  {}", .0.join("\n  "))]
    Leftovers(Vec<String>),
}

impl SandboxError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> SandboxError {
        let path = path.into();
        move |source| SandboxError::Io { path, source }
    }

    pub(crate) fn api(what: impl Into<String>) -> impl FnOnce(kube::Error) -> SandboxError {
        let what = what.into();
        move |source| SandboxError::Api {
            what,
            source: Box::new(source),
        }
    }
}
