//! One Subnet's reconcile, a function of the cluster's desired state: validate, write
//! its NB rows (or nothing, for an invalid one), bind its namespaces, and set its
//! conditions as Kube-OVN does (`patchSubnetStatus`). Deleting a Subnet goes through
//! the finalizer [`FINALIZER`]: its rows are removed before the object goes.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{finalizer, Event};
use ovn_nb::{LogicalRouter, NbError};
use serde_json::json;

use super::desired::{delete_subnet, write_subnet};
use super::gateway::{
    delete_gateway_policies, reconcile_gateway, GatewayOutcome, GatewayProblem,
    REASON_GATEWAY_FAILED,
};
use super::namespaces;
use super::validate::{validate, vpc_of, SubnetInvalid, ValidSubnet};
use crate::bootstrap::random_mac;
use kube_ovn_api::crd::conditions::{self, ConditionStatus, ERROR, READY, VALIDATED};
use kube_ovn_api::crd::Subnet;

/// The finalizer Kube-OVN's controller puts on the objects whose rows it owns.
pub const FINALIZER: &str = "kubeovn.io/kube-ovn-controller";
/// Condition reason of a Subnet that fails validation.
pub const REASON_INVALID: &str = "ValidateLogicalSwitchFailed";
/// Condition reason of a validated Subnet.
pub const REASON_VALID: &str = "ValidateLogicalSwitchSuccess";
/// Condition reason of a Subnet whose rows are in place.
pub const REASON_READY: &str = "ResetLogicalSwitchAclSuccess";

/// How soon an invalid Subnet is looked at again: an overlap it was refused for may
/// go away with another Subnet.
const INVALID_RECHECK: Duration = Duration::from_secs(300);

/// The shared controller context; kept under its old name for the subnet reconciler's
/// callers.
pub type SubnetContext = crate::Context;

/// Why a reconcile failed; it is retried.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubnetError {
    /// Listing Subnets or Namespaces failed.
    #[error("subnet {subnet}: listing {what} failed")]
    List {
        /// The subnet.
        subnet: String,
        /// `subnets` or `namespaces`.
        what: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Writing the status or a namespace's annotations failed.
    #[error("subnet {subnet}: writing {what} failed")]
    Write {
        /// The subnet.
        subnet: String,
        /// `status` or `namespace annotations`.
        what: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The VPC's router is not in NB (no Vpc reconciler creates custom VPCs yet).
    #[error("subnet {subnet}: router {router} of its VPC does not exist in NB")]
    RouterMissing {
        /// The subnet.
        subnet: String,
        /// The router.
        router: String,
    },
    /// Building or committing the NB transaction failed.
    #[error("subnet {subnet}: NB transaction failed")]
    Nb {
        /// The subnet.
        subnet: String,
        /// Why.
        #[source]
        source: NbError,
    },
    /// Adding or removing the finalizer failed, or the step it guards did.
    #[error("subnet {subnet}: finalizer {FINALIZER}")]
    Finalizer {
        /// The subnet.
        subnet: String,
        /// Why.
        #[source]
        source: Box<kube::runtime::finalizer::Error<SubnetError>>,
    },
}

/// What one apply did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// The validation error, reported in the conditions (None: valid).
    pub invalid: Option<SubnetInvalid>,
    /// NB operations sent (0: the rows already looked right).
    pub nb_ops: usize,
    /// Whether the status was written.
    pub status_written: bool,
    /// Namespaces whose binding annotations were patched.
    pub namespaces_patched: usize,
    /// Whether Kube-OVN's defaults were written into empty spec fields.
    pub spec_defaulted: bool,
    /// Why the centralized gateway was left as it was (reported in the conditions).
    pub gateway_problem: Option<GatewayProblem>,
}

impl ApplyReport {
    /// Whether the apply changed anything anywhere.
    pub fn wrote_anything(&self) -> bool {
        self.nb_ops > 0 || self.status_written || self.namespaces_patched > 0 || self.spec_defaulted
    }
}

fn name_of(subnet: &Subnet) -> String {
    subnet.metadata.name.clone().unwrap_or_default()
}

/// The cluster's Subnets and Namespaces, as one reconcile sees them.
struct Cluster {
    subnets: Vec<Subnet>,
    namespaces: Vec<Namespace>,
}

async fn read_cluster(ctx: &SubnetContext, subnet: &str) -> Result<Cluster, SubnetError> {
    let list = |what| {
        move |source| SubnetError::List {
            subnet: subnet.to_string(),
            what,
            source,
        }
    };
    let params = ListParams::default();
    let subnets = Api::<Subnet>::all(ctx.client.clone())
        .list(&params)
        .await
        .map_err(list("subnets"))?
        .items;
    let namespaces = Api::<Namespace>::all(ctx.client.clone())
        .list(&params)
        .await
        .map_err(list("namespaces"))?
        .items;
    Ok(Cluster {
        subnets,
        namespaces,
    })
}

/// The valid Subnets that are not being deleted, and the default one among them.
fn valid_subnets(
    ctx: &SubnetContext,
    cluster: &Cluster,
) -> (Vec<ValidSubnet>, Option<ValidSubnet>) {
    let vpc = &ctx.config.cluster_router;
    let valid: Vec<ValidSubnet> = cluster
        .subnets
        .iter()
        .filter(|s| s.metadata.deletion_timestamp.is_none())
        .filter_map(|s| validate(s, &cluster.subnets, vpc).ok())
        .collect();
    let default_name = &ctx.config.default_subnet.name;
    let default = valid.iter().find(|s| &s.name == default_name).cloned();
    (valid, default)
}

/// Sets the three standard conditions from the validation outcome; whether any changed.
fn set_conditions(
    status: &mut Vec<conditions::Condition>,
    invalid: Option<&SubnetInvalid>,
    gateway: Option<&GatewayProblem>,
) -> bool {
    let now = || Time(k8s_openapi::jiff::Timestamp::now());
    let (t, f) = (ConditionStatus::True, ConditionStatus::False);
    let table = match (invalid, gateway) {
        (None, Some(problem)) => {
            let msg = problem.to_string();
            [
                (ERROR, t.clone(), REASON_GATEWAY_FAILED, msg.clone()),
                (VALIDATED, t, REASON_VALID, String::new()),
                (READY, f, REASON_GATEWAY_FAILED, msg),
            ]
        }
        (Some(e), _) => {
            let msg = e.to_string();
            [
                (ERROR, t, REASON_INVALID, msg.clone()),
                (VALIDATED, f.clone(), REASON_INVALID, msg.clone()),
                (READY, f, REASON_INVALID, msg),
            ]
        }
        (None, None) => [
            (ERROR, f, REASON_READY, String::new()),
            (VALIDATED, t.clone(), REASON_VALID, String::new()),
            (READY, t, REASON_READY, String::new()),
        ],
    };
    let mut changed = false;
    for (type_, state, reason, message) in table {
        changed |= conditions::set(status, type_, state, reason, &message, now());
    }
    changed
}

async fn write_status(
    ctx: &SubnetContext,
    subnet: &Subnet,
    invalid: Option<&SubnetInvalid>,
    gateway: &GatewayOutcome,
) -> Result<bool, SubnetError> {
    let mut conds = subnet
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let current = subnet
        .status
        .as_ref()
        .and_then(|s| s.activate_gateway.clone());
    let active = gateway.active.as_ref().filter(|a| **a != current);
    if !set_conditions(&mut conds, invalid, gateway.problem.as_ref()) && active.is_none() {
        return Ok(false);
    }
    let name = name_of(subnet);
    let mut patch = json!({ "status": { "conditions": conds } });
    if let Some(active) = active {
        // null removes the field (merge patch)
        patch["status"]["activateGateway"] = json!(active);
    }
    Api::<Subnet>::all(ctx.client.clone())
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| SubnetError::Write {
            subnet: name,
            what: "status",
            source,
        })?;
    Ok(true)
}

async fn write_nb(ctx: &SubnetContext, valid: &ValidSubnet) -> Result<usize, SubnetError> {
    let nb_err = |source| SubnetError::Nb {
        subnet: valid.name.clone(),
        source,
    };
    if ctx
        .nb
        .by_name::<LogicalRouter>(&valid.vpc)
        .map_err(nb_err)?
        .is_none()
    {
        return Err(SubnetError::RouterMissing {
            subnet: valid.name.clone(),
            router: valid.vpc.clone(),
        });
    }
    let mut txn = ctx.nb.txn();
    write_subnet(&mut txn, valid, &random_mac()).map_err(nb_err)?;
    let ops = txn.ops().len();
    if ops > 0 {
        ctx.nb.commit(txn).await.map_err(nb_err)?;
    }
    Ok(ops)
}

async fn bind_namespaces(
    ctx: &SubnetContext,
    cluster: &Cluster,
    subnet: &Subnet,
) -> Result<usize, SubnetError> {
    let (valid, default) = valid_subnets(ctx, cluster);
    let name = name_of(subnet);
    let affected = namespaces::affected(&name, &subnet.spec.namespaces, &cluster.namespaces);
    let api = Api::<Namespace>::all(ctx.client.clone());
    namespaces::sync(
        &api,
        &cluster.namespaces,
        &affected,
        &valid,
        default.as_ref(),
    )
    .await
    .map_err(|source| SubnetError::Write {
        subnet: name,
        what: "namespace annotations",
        source,
    })
}

/// Makes NB, the namespaces and the status match `subnet`'s spec. An invalid Subnet
/// gets its conditions and nothing else.
pub async fn apply(ctx: &SubnetContext, subnet: &Subnet) -> Result<ApplyReport, SubnetError> {
    let name = name_of(subnet);
    let cluster = read_cluster(ctx, &name).await?;
    let mut report = ApplyReport::default();
    match validate(subnet, &cluster.subnets, &ctx.config.cluster_router) {
        Err(invalid) => {
            tracing::warn!(subnet = %name, %invalid, "subnet is invalid; nothing written to NB");
            report.status_written =
                write_status(ctx, subnet, Some(&invalid), &GatewayOutcome::default()).await?;
            report.invalid = Some(invalid);
        }
        Ok(valid) => {
            report.spec_defaulted = write_spec_defaults(ctx, subnet, &valid).await?;
            register_in_ipam(ctx, subnet);
            report.nb_ops = write_nb(ctx, &valid).await?;
            report.nb_ops += super::acl::write_acls(ctx, subnet, &valid).await?;
            report.nb_ops += crate::service::attach_cluster_lbs(ctx, subnet, &valid).await?;
            let gateway = reconcile_gateway(ctx, subnet, &valid).await?;
            report.nb_ops += gateway.nb_ops;
            report.namespaces_patched = bind_namespaces(ctx, &cluster, subnet).await?;
            report.status_written = write_status(ctx, subnet, None, &gateway).await?;
            report.gateway_problem = gateway.problem;
            // the usage figures, from the IPAM (pods keep them current afterwards)
            report.status_written |=
                crate::pod::status::write_usage(ctx, &name)
                    .await
                    .map_err(|source| SubnetError::Write {
                        subnet: name.clone(),
                        what: "status usage",
                        source,
                    })?;
        }
    }
    tracing::info!(subnet = %name, ?report, "subnet reconciled");
    Ok(report)
}

/// Writes the defaults Kube-OVN writes into a valid Subnet's empty spec fields
/// ([`super::defaults`]); the write brings one more, quiet, reconcile.
async fn write_spec_defaults(
    ctx: &SubnetContext,
    subnet: &Subnet,
    valid: &ValidSubnet,
) -> Result<bool, SubnetError> {
    let Some(patch) = super::defaults::missing_spec_defaults(subnet, valid) else {
        return Ok(false);
    };
    let name = name_of(subnet);
    Api::<Subnet>::all(ctx.client.clone())
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| SubnetError::Write {
            subnet: name.clone(),
            what: "spec defaults",
            source,
        })?;
    Ok(true)
}

/// Makes the IPAM know a valid Subnet's addresses. Validation already checked what the
/// IPAM checks, so a refusal here is logged, not retried.
fn register_in_ipam(ctx: &SubnetContext, subnet: &Subnet) {
    let name = name_of(subnet);
    let Some(spec) = kube_ovn_api::naming::ipam_spec(subnet) else {
        return;
    };
    if let Err(err) = ctx.ipam.add_or_update_subnet(&name, &spec) {
        tracing::warn!(subnet = %name, error = %err, "the IPAM refused the subnet");
    }
}

/// Removes `subnet`'s NB rows and its namespaces' binding to it; NB operations sent.
pub async fn cleanup(ctx: &SubnetContext, subnet: &Subnet) -> Result<usize, SubnetError> {
    let name = name_of(subnet);
    let router = vpc_of(subnet, &ctx.config.cluster_router);
    let nb_err = |source| SubnetError::Nb {
        subnet: name.clone(),
        source,
    };
    let mut txn = ctx.nb.txn();
    delete_subnet(&mut txn, &name, &router).map_err(nb_err)?;
    delete_gateway_policies(&mut txn, &router, &name).map_err(nb_err)?;
    let ops = txn.ops().len();
    if ops > 0 {
        ctx.nb.commit(txn).await.map_err(nb_err)?;
    }
    let cluster = read_cluster(ctx, &name).await?;
    // the subnet is being deleted, so it is no longer among the valid ones
    let mut unlisted = subnet.clone();
    unlisted.spec.namespaces.clear();
    bind_namespaces(ctx, &cluster, &unlisted).await?;
    ctx.ipam.delete_subnet(&name);
    ctx.pods.usage_written.forget(&name);
    ctx.subnets.validations.forget(subnet);
    tracing::info!(subnet = %name, ops, "subnet rows removed");
    Ok(ops)
}

/// The reconcile `kube::runtime::Controller` runs: finalizer first, then
/// [`apply`] or [`cleanup`].
pub async fn reconcile(
    subnet: Arc<Subnet>,
    ctx: Arc<SubnetContext>,
) -> Result<Action, SubnetError> {
    let name = name_of(&subnet);
    let api = Api::<Subnet>::all(ctx.client.clone());
    finalizer(&api, FINALIZER, subnet, |event| async {
        match event {
            Event::Apply(subnet) => {
                let report = apply(&ctx, &subnet).await?;
                Ok(match report.invalid {
                    Some(_) => Action::requeue(INVALID_RECHECK),
                    None => Action::await_change(),
                })
            }
            Event::Cleanup(subnet) => {
                cleanup(&ctx, &subnet).await?;
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|source| SubnetError::Finalizer {
        subnet: name,
        source: Box::new(source),
    })
}

/// Retries a failed reconcile after a pause.
pub fn error_policy(subnet: Arc<Subnet>, error: &SubnetError, _ctx: Arc<SubnetContext>) -> Action {
    tracing::warn!(subnet = %name_of(&subnet), error = %error, "subnet reconcile failed; retrying");
    Action::requeue(Duration::from_secs(5))
}
