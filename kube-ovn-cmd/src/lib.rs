//! What Kube-OVN's long-running commands (controller, daemon, `kubectl ko`, the sandbox)
//! share: the Kubernetes client built from `--kubeconfig` ([`kube_client`]) flags
//! taken as Kube-OVN's Go commands take them ([`flags`]), the shutdown signal
//! ([`shutdown_signal`]) and an error printed with its causes ([`Causes`]).

mod causes;
pub mod flags;
pub mod kube_client;
mod shutdown;

pub use causes::Causes;
pub use kube_client::{kube_client, KubeClientError};
pub use shutdown::shutdown_signal;
