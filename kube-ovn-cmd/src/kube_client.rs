//! The Kubernetes client every binary of this crate builds the same way: from the
//! kubeconfig named by `--kubeconfig`, else kube-rs's inference (`$KUBECONFIG`,
//! `~/.kube/config`, in-cluster service account).

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};

/// Why no client could be built; names the kubeconfig it came from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KubeClientError {
    /// The named kubeconfig could not be read or used.
    #[error("kubeconfig {}: {reason}", path.display())]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No kubeconfig was named and none could be inferred.
    #[error("no --kubeconfig, and no in-cluster or $KUBECONFIG configuration: {0}")]
    Infer(#[source] kube::config::InferConfigError),
    /// The configuration was read but the client could not be built from it.
    #[error("building the Kubernetes client: {0}")]
    Build(#[source] kube::Error),
}

/// A kube-rs client for `kubeconfig`, or for the inferred configuration when `None`.
pub async fn kube_client(kubeconfig: Option<&Path>) -> Result<kube::Client, KubeClientError> {
    let config = match kubeconfig {
        Some(path) => {
            let bad = |reason: String| KubeClientError::Kubeconfig {
                path: path.to_path_buf(),
                reason,
            };
            let file = Kubeconfig::read_from(path).map_err(|e| bad(e.to_string()))?;
            kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                .await
                .map_err(|e| bad(e.to_string()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(KubeClientError::Infer)?,
    };
    kube::Client::try_from(config).map_err(KubeClientError::Build)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_kubeconfig_is_named() {
        let path = Path::new("/nonexistent/kubeconfig");
        let Err(err) = kube_client(Some(path)).await else {
            panic!("a client from a kubeconfig that does not exist");
        };
        assert!(matches!(err, KubeClientError::Kubeconfig { .. }), "{err:?}");
        assert!(err.to_string().contains("/nonexistent/kubeconfig"), "{err}");
    }
}
