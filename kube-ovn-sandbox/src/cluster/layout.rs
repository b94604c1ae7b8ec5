//! Where the sandbox keeps its files, and how it names what it creates.

use std::path::{Path, PathBuf};

/// The default prefix of everything the sandbox names on the host: node namespaces
/// `sandbox-n1`, ..., the underlay `sandbox-ul`, pod namespaces `sandbox-p-<uid>`.
pub const DEFAULT_PREFIX: &str = "sandbox-";

/// The files under one state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateLayout {
    dir: PathBuf,
}

impl StateLayout {
    /// The layout of `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> StateLayout {
        StateLayout { dir: dir.into() }
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The kubeconfig of the embedded API server.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// The record of the running sandbox ([`super::SandboxRecord`]).
    pub fn record(&self) -> PathBuf {
        self.dir.join("sandbox-processes.json")
    }

    /// `sandbox.json`, which `kubectl ko` reads.
    pub fn ko_state(&self) -> PathBuf {
        kubectl_ko::target::SandboxState::path(&self.dir)
    }

    /// The supervisor's log (its tracing output and that of the tasks it runs).
    pub fn supervisor_log(&self) -> PathBuf {
        self.dir.join("supervisor.log")
    }

    /// The logs of `kube-ovn-controller` and the daemons.
    pub fn log_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }

    /// Per-node files: the CNI binary, the conflist, the daemon's socket, the CNI cache.
    pub fn node_dir(&self, node: &str) -> PathBuf {
        self.dir.join("nodes").join(node)
    }

    /// The daemon's JSON-RPC socket of `node`.
    pub fn daemon_socket(&self, node: &str) -> PathBuf {
        self.node_dir(node).join("kube-ovn-daemon.sock")
    }

    /// Where `node`'s daemon installs its conflist.
    pub fn cni_conf_dir(&self, node: &str) -> PathBuf {
        self.node_dir(node).join("net.d")
    }

    /// Where `node`'s CNI binary is installed.
    pub fn cni_bin_dir(&self, node: &str) -> PathBuf {
        self.node_dir(node).join("bin")
    }

    /// Every file and directory the sandbox writes in the state directory, for `down`.
    pub fn owned_paths(&self) -> Vec<PathBuf> {
        vec![
            self.ko_state(),
            self.kubeconfig(),
            self.supervisor_log(),
            self.log_dir(),
            self.dir.join("nodes"),
            self.record(),
        ]
    }
}

/// The names the sandbox with `prefix` gives what it creates on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Names {
    pub(crate) prefix: String,
}

impl Names {
    pub(crate) fn new(prefix: &str) -> Names {
        Names {
            prefix: prefix.to_string(),
        }
    }

    /// The namespace (= chassis = Kubernetes node) name of node `i` (from 1), as
    /// [`ovn_harness::Cluster::start`] names it.
    pub(crate) fn node(&self, i: usize) -> String {
        format!("{}n{i}", self.prefix)
    }

    /// The underlay's namespace, as [`ovn_harness::Cluster::start`] names it.
    pub(crate) fn underlay(&self) -> String {
        format!("{}ul", self.prefix)
    }

    /// The prefix of pod namespaces (the node agent appends the pod's uid).
    pub(crate) fn pod_netns_prefix(&self) -> String {
        format!("{}p-", self.prefix)
    }

    /// True for a namespace name this sandbox makes.
    pub(crate) fn owns_netns(&self, name: &str) -> bool {
        let Some(rest) = name.strip_prefix(&self.prefix) else {
            return false;
        };
        rest == "ul"
            || rest.starts_with("p-")
            || rest
                .strip_prefix('n')
                .is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_owned_are_nodes_underlay_and_pods_only() {
        let names = Names::new("sandbox-");
        assert_eq!(names.node(2), "sandbox-n2");
        for ours in ["sandbox-n1", "sandbox-n12", "sandbox-ul", "sandbox-p-1234"] {
            assert!(names.owns_netns(ours), "{ours}");
        }
        for theirs in [
            "sandbox-n",
            "sandbox-nx",
            "sandbox-other",
            "sbx-n1",
            "sandbox-ul2",
        ] {
            assert!(!names.owns_netns(theirs), "{theirs}");
        }
    }
}
