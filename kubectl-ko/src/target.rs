//! Where the databases and nodes are.
//!
//! **Sandbox mode.** The sandbox keeps a state directory holding `sandbox.json`
//! ([`SandboxState`]): the NB and SB remotes (unix sockets), the kubeconfig of its API
//! server, and per node its name, network namespace, Open_vSwitch database socket and
//! the directory of its `ovs-vswitchd` / `ovn-controller` control sockets. The directory
//! is `--state-dir`, else `$KUBE_OVN_SANDBOX`, else [`DEFAULT_STATE_DIR`]
//! (`/var/lib/kube-ovn-sandbox`). The sandbox writes the file with [`SandboxState::save`].
//!
//! **Cluster mode** (no state file in the default directory): as Kube-OVN's plugin, the
//! tools run by exec in the `ovn-central` pods (the one labelled `ovn-nb-leader=true` /
//! `ovn-sb-leader=true`, container `ovn-central`) and the node's `ovs-ovn` pod (label
//! `app=ovs`, container `openvswitch`) in `kube-system`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;
use serde::{Deserialize, Serialize};

use super::error::KoError;

/// The state directory when neither `--state-dir` nor `$KUBE_OVN_SANDBOX` is given.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/kube-ovn-sandbox";
/// The environment variable naming the state directory.
pub const STATE_DIR_ENV: &str = "KUBE_OVN_SANDBOX";
/// The file in the state directory.
pub const STATE_FILE: &str = "sandbox.json";
/// Kube-OVN's namespace (`KUBE_OVN_NS` in its plugin).
pub const KUBE_OVN_NAMESPACE: &str = "kube-system";

/// `<state-dir>/sandbox.json`, written by the sandbox and read by `kubectl ko`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxState {
    /// The NB database remote, `unix:/.../ovnnb_db.sock`.
    pub nb_remote: String,
    /// The SB database remote, `unix:/.../ovnsb_db.sock`.
    pub sb_remote: String,
    /// The kubeconfig of the sandbox's API server.
    pub kubeconfig: PathBuf,
    /// The nodes, in start order.
    pub nodes: Vec<SandboxNode>,
}

/// One sandbox node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxNode {
    /// The node's name (= its chassis name).
    pub name: String,
    /// The network namespace its daemons run in.
    pub netns: String,
    /// Its Open_vSwitch database, `unix:/.../db.sock`.
    pub ovs_remote: String,
    /// Where `ovs-vswitchd.ctl`, `ovn-controller.PID.ctl` and `BRIDGE.mgmt` are
    /// (`OVS_RUNDIR` for `ovs-ofctl` / `ovs-appctl`).
    pub ctl_dir: PathBuf,
}

impl SandboxState {
    /// The state file of directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(STATE_FILE)
    }

    /// Reads `<dir>/sandbox.json`.
    pub fn load(dir: &Path) -> Result<SandboxState, KoError> {
        let path = Self::path(dir);
        let text = std::fs::read_to_string(&path).map_err(|source| KoError::StateMissing {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| KoError::StateMalformed { path, source })
    }

    /// Writes `<dir>/sandbox.json` atomically (a temporary file renamed over it), so a
    /// reader never sees half a file and a failed write keeps the previous one.
    pub fn save(&self, dir: &Path) -> Result<(), KoError> {
        let path = Self::path(dir);
        let tmp = dir.join(format!(".{STATE_FILE}.tmp"));
        let text = serde_json::to_string_pretty(self).expect("plain data serializes");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|source| KoError::StateWrite { path, source })
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Result<&SandboxNode, KoError> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| KoError::UnknownNode {
                node: name.to_string(),
                known: self
                    .nodes
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            })
    }
}

/// Where the state directory comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateDir {
    /// `--state-dir` or `$KUBE_OVN_SANDBOX`: the file must be there.
    Explicit(PathBuf),
    /// [`DEFAULT_STATE_DIR`]: without the file, cluster mode.
    Default,
}

impl StateDir {
    /// `--state-dir` first, then the environment.
    pub fn from_flag_or_env(flag: Option<PathBuf>) -> StateDir {
        flag.or_else(|| std::env::var_os(STATE_DIR_ENV).map(PathBuf::from))
            .map(StateDir::Explicit)
            .unwrap_or(StateDir::Default)
    }

    /// The sandbox state, or None for cluster mode.
    pub fn load(&self) -> Result<Option<SandboxState>, KoError> {
        match self {
            StateDir::Explicit(dir) => SandboxState::load(dir).map(Some),
            StateDir::Default => {
                let dir = Path::new(DEFAULT_STATE_DIR);
                if SandboxState::path(dir).exists() {
                    SandboxState::load(dir).map(Some)
                } else {
                    Ok(None)
                }
            }
        }
    }
}

/// Which database or node a tool runs against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// The NB database (the NB leader's `ovn-central` pod).
    Nb,
    /// The SB database (the SB leader's `ovn-central` pod).
    Sb,
    /// A node's Open_vSwitch (its `ovs-ovn` pod).
    Node(String),
}

/// A tool run, built but not started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// On this host.
    Local {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment.
        env: BTreeMap<String, String>,
    },
    /// By exec in a pod (`kubectl exec -n NS POD -c CONTAINER -- COMMAND...`).
    Exec {
        /// The pod's namespace.
        namespace: String,
        /// The pod.
        pod: String,
        /// The container.
        container: String,
        /// The command line.
        command: Vec<String>,
    },
}

impl Invocation {
    /// The program run (for messages).
    pub fn program(&self) -> &str {
        match self {
            Invocation::Local { program, .. } => program,
            Invocation::Exec { command, .. } => command.first().map_or("", String::as_str),
        }
    }
}

/// How `tool` runs against `place` in the sandbox: `ovn-*ctl --db=REMOTE ARGS` for the
/// central databases; for a node, `ip netns exec NETNS TOOL ...` with `--db` (vsctl) or
/// `OVS_RUNDIR` (so `ovs-ofctl BRIDGE` / `ovs-appctl` find the node's sockets).
pub fn sandbox_invocation(
    state: &SandboxState,
    place: &Place,
    tool: &str,
    args: &[String],
) -> Result<Invocation, KoError> {
    let mut env = BTreeMap::new();
    let (program, mut full) = match place {
        Place::Nb => (tool.to_string(), vec![format!("--db={}", state.nb_remote)]),
        Place::Sb => (tool.to_string(), vec![format!("--db={}", state.sb_remote)]),
        Place::Node(name) => {
            let node = state.node(name)?;
            let rundir = node.ctl_dir.display().to_string();
            env.insert("OVS_RUNDIR".to_string(), rundir.clone());
            env.insert("OVN_RUNDIR".to_string(), rundir);
            let mut pre = vec![
                "netns".to_string(),
                "exec".to_string(),
                node.netns.clone(),
                tool.to_string(),
            ];
            if tool == "ovs-vsctl" {
                pre.push(format!("--db={}", node.ovs_remote));
            }
            ("ip".to_string(), pre)
        }
    };
    full.extend_from_slice(args);
    Ok(Invocation::Local {
        program,
        args: full,
        env,
    })
}

fn label<'p>(pod: &'p Pod, key: &str) -> Option<&'p str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn is_running(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// Kube-OVN's choice of pod for `place` among `pods` (all of `kube-system`): the running
/// `app=ovn-central` pod labelled `ovn-nb-leader=true` (`ovn-sb-leader=true`), or the
/// running `app=ovs` pod whose `spec.nodeName` is the node. Returns (pod, container).
pub fn pick_pod<'p>(pods: &'p [Pod], place: &Place) -> Result<(&'p Pod, &'static str), KoError> {
    let found = pods.iter().filter(|p| is_running(p)).find(|p| match place {
        Place::Nb | Place::Sb => {
            let leader = if *place == Place::Nb {
                "ovn-nb-leader"
            } else {
                "ovn-sb-leader"
            };
            label(p, "app") == Some("ovn-central") && label(p, leader) == Some("true")
        }
        Place::Node(node) => {
            label(p, "app") == Some("ovs")
                && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node)
        }
    });
    let (role, container) = match place {
        Place::Nb => (
            "ovn-central (ovn-nb-leader=true)".to_string(),
            "ovn-central",
        ),
        Place::Sb => (
            "ovn-central (ovn-sb-leader=true)".to_string(),
            "ovn-central",
        ),
        Place::Node(node) => (format!("ovs-ovn (app=ovs) on node {node}"), "openvswitch"),
    };
    found.map(|p| (p, container)).ok_or(KoError::NoPod {
        role,
        namespace: KUBE_OVN_NAMESPACE.to_string(),
    })
}

/// The exec Kube-OVN's plugin runs: `TOOL ARGS...` in the chosen pod's container (the
/// tools there find their databases by their defaults).
pub fn cluster_invocation(
    pods: &[Pod],
    place: &Place,
    tool: &str,
    args: &[String],
) -> Result<Invocation, KoError> {
    let (pod, container) = pick_pod(pods, place)?;
    let mut command = vec![tool.to_string()];
    command.extend_from_slice(args);
    Ok(Invocation::Exec {
        namespace: KUBE_OVN_NAMESPACE.to_string(),
        pod: pod.metadata.name.clone().unwrap_or_default(),
        container: container.to_string(),
        command,
    })
}
