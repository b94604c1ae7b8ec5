//! What can go wrong in a `kubectl ko` command, each naming its offender.

use std::path::PathBuf;

/// A `kubectl ko` failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KoError {
    /// `--state-dir` or `KUBE_OVN_SANDBOX` names a directory without `sandbox.json`.
    #[error("no sandbox state at {}: {source}", path.display())]
    StateMissing {
        /// The file looked for.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// `sandbox.json` is not the sandbox's JSON.
    #[error("sandbox state {} is malformed: {source}", path.display())]
    StateMalformed {
        /// The file read.
        path: PathBuf,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// Writing `sandbox.json` failed.
    #[error("cannot write sandbox state {}: {source}", path.display())]
    StateWrite {
        /// The file written.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A node the target does not know.
    #[error("unknown node {node:?} (known: {known})")]
    UnknownNode {
        /// The name asked for.
        node: String,
        /// The nodes there are, comma-separated.
        known: String,
    },
    /// A pod that does not exist.
    #[error("pod {namespace}/{name} not found")]
    UnknownPod {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// An argument in the wrong form.
    #[error("bad argument {value:?}: {reason}")]
    BadArgument {
        /// The offending text.
        value: String,
        /// The expected form.
        reason: String,
    },
    /// A pod without the annotations a command needs.
    #[error("pod {pod} is not ready for this: {reason}")]
    PodNotAllocated {
        /// `namespace/name`.
        pod: String,
        /// What is missing.
        reason: String,
    },
    /// Cluster mode: no pod carries the role (app=ovn-central leader, app=ovs on a node).
    #[error("no {role} pod found in namespace {namespace}")]
    NoPod {
        /// What was looked for.
        role: String,
        /// The namespace searched.
        namespace: String,
    },
    /// A command this target cannot serve.
    #[error("{what} is not supported {mode}")]
    Unsupported {
        /// The command.
        what: String,
        /// Where (`in cluster mode`).
        mode: String,
    },
    /// A tool could not be started.
    #[error("cannot run {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A tool ran and failed.
    #[error("{program} failed: {stderr}")]
    Tool {
        /// The program.
        program: String,
        /// Its standard error.
        stderr: String,
    },
    /// The Kubernetes API failed.
    #[error("kubernetes API: {context}: {source}")]
    Kube {
        /// What was being done.
        context: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// The kubeconfig could not be loaded.
    #[error("kubeconfig {path}: {reason}")]
    Kubeconfig {
        /// The file (or `default`).
        path: String,
        /// Why.
        reason: String,
    },
    /// An OVSDB database could not be read.
    #[error("{db} at {remote}: {reason}")]
    Db {
        /// `OVN_Northbound`, `OVN_Southbound` or `Open_vSwitch`.
        db: String,
        /// The remote.
        remote: String,
        /// The client's error.
        reason: String,
    },
}
