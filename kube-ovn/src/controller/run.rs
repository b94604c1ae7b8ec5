//! The controller's main loop: the default Subnets, then the Subnet reconciler under
//! kube-rs's runtime `Controller` (a watcher and reflector of Subnets, plus a watch of
//! Namespaces that re-reconciles the Subnets listing a changed namespace).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{watcher, Controller};
use kube::Client;
use ovn_nb::NbClient;

use super::defaults::ensure_default_subnets;
use super::subnet::{self, SubnetContext};
use crate::config::ControllerConfig;
use crate::crd::Subnet;

/// Why the controller stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// Creating the default Subnets failed.
    #[error("creating the default subnets ({default} and {join}) failed")]
    DefaultSubnets {
        /// `--default-ls`.
        default: String,
        /// `--node-switch`.
        join: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

/// Creates the default Subnets if absent, then reconciles Subnets until the process
/// is told to stop (SIGINT/SIGTERM) or the returned future is dropped.
pub async fn run(
    config: Arc<ControllerConfig>,
    client: Client,
    nb: Arc<NbClient>,
) -> Result<(), RunError> {
    let created = ensure_default_subnets(&client, &config)
        .await
        .map_err(|source| RunError::DefaultSubnets {
            default: config.default_subnet.name.clone(),
            join: config.node_switch.name.clone(),
            source,
        })?;
    tracing::info!(?created, "default subnets present");
    let subnets: Api<Subnet> = Api::all(client.clone());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let controller = Controller::new(subnets, watcher::Config::default());
    let store = controller.store();
    let ctx = Arc::new(SubnetContext { client, nb, config });
    controller
        .watches(
            namespaces,
            watcher::Config::default(),
            move |ns: Namespace| {
                let name = ns.metadata.name.unwrap_or_default();
                store
                    .state()
                    .into_iter()
                    .filter(|s| s.spec.namespaces.contains(&name))
                    .map(|s| ObjectRef::from_obj(&*s))
                    .collect::<Vec<_>>()
            },
        )
        .shutdown_on_signal()
        .run(subnet::reconcile, subnet::error_policy, ctx)
        .for_each(|result| async move {
            if let Err(err) = result {
                tracing::debug!(error = %err, "subnet controller event");
            }
        })
        .await;
    Ok(())
}
