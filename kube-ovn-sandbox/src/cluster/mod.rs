//! The sandbox as one command: `kube-ovn-sandbox up|status|matrix|down`.
//!
//! `up` starts a detached *supervisor* process (`kube-ovn-sandbox supervise`, in its
//! own process group) and waits for it to report ready. The supervisor owns every
//! part as its children, so they outlive the `up` command without being `--detach`ed:
//! the OVN central and the simulated nodes ([`ovn_harness::Cluster`]), the embedded
//! API server, `kube-ovn-controller`, one `kube-ovn-daemon` per node (which also keeps
//! its node's host side: `ovn0` on the join network, routes, natOutgoing), and, as
//! tasks of its own, the node agents, the scheduler, the workload and EndpointSlice
//! controllers (the embedded API server gives Services their ClusterIPs). It records every pid in the state directory
//! ([`SandboxRecord`]) and writes `sandbox.json` for `kubectl ko`. On SIGTERM it stops
//! them all.
//!
//! `down` asks the supervisor to stop, then kills by pid whatever of its process group
//! is left (a killed supervisor leaves its children running) and removes the
//! namespaces and files the sandbox made. It never looks processes up by name: other
//! people run ovsdb-servers on the same machine.

mod apply;
mod down;
mod error;
mod layout;
mod probe;
mod process;
mod record;
mod status;
mod supervisor;
mod up;

pub use apply::{apply_manifests, load_manifests, wait_pods_running, Manifest};
pub use down::{down, DownReport};
pub use error::SandboxError;
pub use layout::{StateLayout, DEFAULT_PREFIX};
pub use probe::{run_probe, ProbeOptions, ProbeOutcome};
pub use record::SandboxRecord;
pub use status::{status, StatusReport};
pub use supervisor::{supervise, SuperviseOptions};
pub use up::{up, UpOptions, UpOutcome};

/// The most nodes `up` starts: the underlay is one /24, and each node costs about
/// 40 MB and a share of two busy cores.
pub const MAX_NODES: usize = 16;
