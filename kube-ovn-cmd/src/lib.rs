//! What Kube-OVN's long-running commands (controller, daemon, `kubectl ko`, the sandbox)
//! share: the Kubernetes client built from `--kubeconfig` ([`kube_client`]) and flags
//! taken as Kube-OVN's Go commands take them ([`flags`]).

pub mod flags;
pub mod kube_client;

pub use kube_client::{kube_client, KubeClientError};
