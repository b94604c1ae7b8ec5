//! One pod's reconcile, an idempotent function of the pod and the cluster: choose the
//! subnet, ask the IPAM (which answers an owner with what it holds), write the port,
//! the IP object and the result annotations where they differ, and keep the subnet's
//! usage figures current. The result write carries the finalizer [`FINALIZER`], so a
//! pod deleted while the controller was down still gives its address back; one
//! deleted before that write is undone by the write's failure or by the deleted-pod
//! worker ([`super::delete::clean_deleted`]).

use std::sync::Arc;
use std::time::Duration;

use ipam::{AllocError, Allocation};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use ovn_nb::NbError;
use serde_json::{json, Value};

use super::allocate::{allocate, is_request_error, Claim};
use super::annotate::{annotation_patch, with_result, NicResult};
use super::choice::{choose, ChoiceSource, SubnetChoice};
use super::delete::cleanup;
pub use super::delete::CleanupReport;
use super::events::{self, ACQUIRE_ADDRESS_FAILED, VALIDATE_FAILED};
use super::port::{delete_port, desired_port, write_port, PortSpec};
use super::{conflict, ip_object, statefulset};
use crate::subnet::ValidSubnet;
use crate::Context;
use kube_ovn_api::annotations::{AnnotationMap, NamespaceAnnotations, PodNetwork, Provider};
use kube_ovn_api::crd::{IPPool, Subnet, IP};
use kube_ovn_api::naming::{pod_owner, pod_port_name, OVN_PROVIDER};
use kube_ovn_api::NamespacedName;

/// The finalizer Kube-OVN puts on the pods it allocated.
pub const FINALIZER: &str = crate::subnet::FINALIZER;

/// How soon a refused pod is looked at again (a conflicting holder may go away).
const REFUSED_RECHECK: Duration = Duration::from_secs(60);

/// Why a reconcile failed; it is retried.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PodError {
    /// An API call failed.
    #[error("pod {pod}: {what} failed")]
    Api {
        /// The pod.
        pod: NamespacedName,
        /// What was being done.
        what: &'static str,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Building or committing the NB transaction of the port failed.
    #[error("pod {pod}: NB transaction on port {port} failed")]
    Nb {
        /// The pod.
        pod: NamespacedName,
        /// The port.
        port: String,
        /// Why.
        #[source]
        source: NbError,
    },
    /// The NB connection is down: the replica may lack what the server has.
    #[error("pod {pod}: NB is not connected; its replica cannot be trusted")]
    NbUnavailable {
        /// The pod.
        pod: NamespacedName,
    },
    /// The IPAM could not serve the subnet (not registered yet).
    #[error("pod {pod}: allocating in subnet {subnet} failed")]
    Alloc {
        /// The pod.
        pod: NamespacedName,
        /// The subnet.
        subnet: String,
        /// Why.
        #[source]
        source: AllocError,
    },
}

/// What one apply did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodOutcome {
    /// A host-network pod: left alone.
    HostNetwork,
    /// The request was refused with a Warning Event; nothing was allocated or written.
    Refused {
        /// The Event's reason.
        reason: &'static str,
        /// The Event's message, naming the offender.
        message: String,
        /// Whether it is looked at again without a change (a conflict may clear).
        retry: bool,
    },
    /// The NIC has its address, port, IP object and annotations.
    Ready(ReadyReport),
    /// A pod that has run to completion (`Succeeded`/`Failed`) gives its address back,
    /// as Kube-OVN does for pods that are no longer alive.
    Finished(CleanupReport),
    /// The pod was deleted (or began terminating) while its network was being written:
    /// what was written is undone at once, not left to the garbage collector.
    Gone(CleanupReport),
}

/// What an apply that succeeded wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyReport {
    /// The subnet.
    pub subnet: String,
    /// The NIC's allocation.
    pub allocation: Allocation,
    /// NB operations sent (0: the port already looked right).
    pub nb_ops: usize,
    /// Whether the IP object was written.
    pub ip_written: bool,
    /// Whether the annotations were patched.
    pub annotations_patched: bool,
    /// Whether the subnet's usage figures were written.
    pub status_written: bool,
}

impl ReadyReport {
    /// Whether the apply changed anything anywhere.
    pub fn wrote_anything(&self) -> bool {
        self.nb_ops > 0 || self.ip_written || self.annotations_patched || self.status_written
    }
}

/// The pod's typed key, `namespace/name` when printed.
pub fn pod_key(pod: &Pod) -> NamespacedName {
    NamespacedName::of(pod)
}

/// The pod's annotations.
pub fn annotation_map(pod: &Pod) -> AnnotationMap {
    pod.metadata.annotations.clone().unwrap_or_default()
}

/// A pod whose containers will not run again (`isPodAlive` false in Kube-OVN).
fn is_finished(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
}

pub(super) fn is_host_network(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.host_network) == Some(true)
}

pub(super) fn api_err(pod: &Pod, what: &'static str) -> impl FnOnce(kube::Error) -> PodError {
    let pod = pod_key(pod);
    move |source| PodError::Api { pod, what, source }
}

/// Publishes the refusal and returns it.
async fn refuse(
    ctx: &Context,
    pod: &Pod,
    reason: &'static str,
    message: String,
    retry: bool,
) -> PodOutcome {
    tracing::warn!(pod = %pod_key(pod), reason, %message, "pod network request refused; nothing allocated");
    events::warn(ctx, pod, reason, &message).await;
    PodOutcome::Refused {
        reason,
        message,
        retry,
    }
}

/// The namespace's binding annotations and the IPPools, for the subnet choice.
async fn choice_inputs(
    ctx: &Context,
    pod: &Pod,
) -> Result<(NamespaceAnnotations, Vec<IPPool>), PodError> {
    let ns_name = pod.metadata.namespace.as_deref().unwrap_or_default();
    let ns = ctx
        .get_cluster::<Namespace>(ns_name)
        .await
        .map_err(api_err(pod, "reading its namespace"))?;
    let map: AnnotationMap = ns
        .and_then(|n| n.metadata.annotations.clone())
        .unwrap_or_default();
    let (ns_annotations, _) = NamespaceAnnotations::parse_lenient(&map);
    let pools: Vec<IPPool> = ctx
        .list_all::<IPPool>()
        .await
        .map_err(api_err(pod, "listing IPPools"))?
        .iter()
        .map(|p| IPPool::clone(p))
        .collect();
    Ok((ns_annotations, pools))
}

/// Allocates for the pod's claim, settling a conflicting re-claim; `Err(refusal)`
/// inside when the request is the pod's fault.
async fn allocate_for(
    ctx: &Context,
    pod: &Pod,
    choice: &SubnetChoice,
    claim: &Claim,
) -> Result<Result<Allocation, AllocError>, PodError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let owner = pod_owner(
        ns,
        pod.metadata.name.as_deref().unwrap_or_default(),
        OVN_PROVIDER,
    );
    if matches!(claim, Claim::Reclaim { .. }) {
        if let Ok(Some(held)) = ctx.ipam.get(&choice.subnet, &owner) {
            return Ok(Ok(held));
        }
    }
    match allocate(&ctx.ipam, &owner, choice, claim) {
        Err(
            AllocError::AddressTaken { owner: holder, .. }
            | AllocError::MacTaken { owner: holder, .. },
        ) if matches!(claim, Claim::Reclaim { .. }) => {
            conflict::resolve(ctx, pod, &owner, choice, claim, &holder).await
        }
        other => Ok(other),
    }
}

/// Commits the port; a port of that name on another switch is removed first.
async fn commit_port(ctx: &Context, pod: &Pod, spec: &PortSpec) -> Result<usize, PodError> {
    let nb_err = |source| PodError::Nb {
        pod: pod_key(pod),
        port: spec.name.clone(),
        source,
    };
    let mut txn = ctx.nb.txn();
    match write_port(&mut txn, spec) {
        Err(NbError::WrongOwner { owner, .. }) => {
            tracing::info!(port = %spec.name, from = %owner, to = %spec.switch, "moving the port to its subnet's switch");
            let mut del = ctx.nb.txn();
            delete_port(&mut del, &spec.name).map_err(nb_err)?;
            ctx.nb.commit(del).await.map_err(nb_err)?;
            txn = ctx.nb.txn();
            write_port(&mut txn, spec).map_err(nb_err)?;
        }
        other => other.map_err(nb_err)?,
    }
    let ops = txn.ops().len();
    if ops > 0 {
        ctx.nb.commit(txn).await.map_err(nb_err)?;
    }
    Ok(ops)
}

/// The pod's primary NIC annotations; every malformed one refused with an Event.
async fn parse_network(
    ctx: &Context,
    pod: &Pod,
    provider: &Provider,
    map: &AnnotationMap,
) -> Result<PodNetwork, PodOutcome> {
    let (net, errors) = PodNetwork::parse_lenient(provider, map);
    if errors.is_empty() {
        return Ok(net);
    }
    let message = errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    for err in &errors {
        events::warn(ctx, pod, VALIDATE_FAILED, &err.to_string()).await;
    }
    tracing::warn!(pod = %pod_key(pod), %message, "malformed annotations; nothing changed");
    Err(PodOutcome::Refused {
        reason: VALIDATE_FAILED,
        message,
        retry: false,
    })
}

/// Where the NIC's address comes from, and the address.
struct Placed {
    choice: SubnetChoice,
    valid: ValidSubnet,
    allocation: Allocation,
    /// The IPAM held this allocation for the pod before: its usage did not change.
    was_held: bool,
}

/// The chosen subnet, checked to exist and be valid.
async fn subnet_of(
    ctx: &Context,
    pod: &Pod,
    choice: &SubnetChoice,
) -> Result<Result<ValidSubnet, PodOutcome>, PodError> {
    let Some(subnet) = ctx
        .get_cluster::<Subnet>(&choice.subnet)
        .await
        .map_err(api_err(pod, "reading its subnet"))?
    else {
        let msg = format!(
            "subnet {} ({:?}) does not exist",
            choice.subnet, choice.source
        );
        return Ok(Err(refuse(ctx, pod, VALIDATE_FAILED, msg, true).await));
    };
    Ok(
        match ctx
            .subnets
            .validations
            .of(&subnet, &ctx.config.cluster_router)
        {
            Ok(v) => Ok(v),
            Err(e) => {
                let msg = format!("subnet {} is invalid: {e}", choice.subnet);
                Err(refuse(ctx, pod, VALIDATE_FAILED, msg, true).await)
            }
        },
    )
}

/// The choice of a pod that reclaims an address its annotations place on a named
/// subnet (no IPPool) and that the IPAM already holds for it there: [`choose`] would
/// pick that subnet and [`allocate_for`] answer with the held address whatever the
/// namespace and the IPPools say, so they are not read. This is every pod at a
/// controller's start-up and every pod reconciled again after its own annotations.
fn held_choice(ctx: &Context, pod: &Pod, net: &PodNetwork) -> Option<SubnetChoice> {
    if net.ip_pool.is_some() || !matches!(Claim::of(net), Claim::Reclaim { .. }) {
        return None;
    }
    let subnet = net.logical_switch.clone()?;
    let owner = pod_owner(
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
        OVN_PROVIDER,
    );
    ctx.ipam.get(&subnet, &owner).ok().flatten()?;
    Some(SubnetChoice {
        subnet,
        pools: Vec::new(),
        pool_required: false,
        source: ChoiceSource::PodLogicalSwitch,
        alternatives: Vec::new(),
    })
}

/// Chooses the subnet and allocates; a subnet the namespace lists after a full one
/// is tried next (Kube-OVN takes the first with room).
async fn place(
    ctx: &Context,
    pod: &Pod,
    net: &PodNetwork,
) -> Result<Result<Placed, PodOutcome>, PodError> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let first = match held_choice(ctx, pod, net) {
        Some(held) => held,
        None => {
            let (ns_annotations, pools) = choice_inputs(ctx, pod).await?;
            let default = &ctx.config.default_subnet.name;
            match choose(net, ns, &ns_annotations, &pools, default) {
                Ok(c) => c,
                Err(err) => {
                    let msg = err.to_string();
                    return Ok(Err(refuse(ctx, pod, VALIDATE_FAILED, msg, true).await));
                }
            }
        }
    };
    let owner = pod_owner(
        ns,
        pod.metadata.name.as_deref().unwrap_or_default(),
        OVN_PROVIDER,
    );
    let mut candidates = vec![first.clone()];
    candidates.extend(first.alternatives.iter().map(|subnet| SubnetChoice {
        subnet: subnet.clone(),
        pools: Vec::new(),
        alternatives: Vec::new(),
        ..first.clone()
    }));
    let claim = Claim::of(net);
    for (i, choice) in candidates.iter().enumerate() {
        let valid = match subnet_of(ctx, pod, choice).await? {
            Ok(v) => v,
            Err(refused) => return Ok(Err(refused)),
        };
        let held = ctx.ipam.get(&choice.subnet, &owner).ok().flatten();
        match allocate_for(ctx, pod, choice, &claim).await? {
            Ok(allocation) => {
                let choice = choice.clone();
                return Ok(Ok(Placed {
                    choice,
                    valid,
                    allocation,
                    was_held: held == Some(allocation),
                }));
            }
            Err(AllocError::Exhausted { .. }) if i + 1 < candidates.len() => continue,
            Err(err) if is_request_error(&err) => {
                let msg = err.to_string();
                return Ok(Err(
                    refuse(ctx, pod, ACQUIRE_ADDRESS_FAILED, msg, true).await
                ));
            }
            Err(source) => {
                return Err(PodError::Alloc {
                    pod: pod_key(pod),
                    subnet: choice.subnet.clone(),
                    source,
                })
            }
        }
    }
    unreachable!("the first candidate always answers")
}

/// Gives the pod's primary NIC its address, port, IP object and annotations.
pub async fn apply(ctx: &Context, pod: &Pod) -> Result<PodOutcome, PodError> {
    if is_host_network(pod) {
        return Ok(PodOutcome::HostNetwork);
    }
    if is_finished(pod) {
        return Ok(PodOutcome::Finished(cleanup(ctx, pod).await?));
    }
    let (ns, name) = (
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default(),
    );
    let provider = Provider::ovn();
    let map = annotation_map(pod);
    let net = match parse_network(ctx, pod, &provider, &map).await {
        Ok(net) => net,
        Err(refused) => return Ok(refused),
    };
    let Placed {
        choice,
        valid,
        allocation,
        was_held,
    } = match place(ctx, pod, &net).await? {
        Ok(placed) => placed,
        Err(refused) => return Ok(refused),
    };
    let port_name = pod_port_name(ns, name, OVN_PROVIDER);
    let port_security = net.port_security == Some(true);
    let spec = desired_port(
        &port_name,
        ns,
        name,
        &choice.subnet,
        &allocation,
        port_security,
    );
    let nb_ops = commit_port(ctx, pod, &spec).await?;

    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    let pod_type = statefulset::owner(pod).map(|_| statefulset::POD_TYPE);
    let holder = ip_object::IpHolder {
        name: &port_name,
        pod: name,
        namespace: ns,
        node,
        pod_type,
    };
    let wanted_ip = ip_object::desired_ip(&holder, &choice.subnet, &allocation);
    let api = Api::<IP>::all(ctx.client.clone());
    let ip_written = ip_object::ensure_ip(&api, &wanted_ip, ctx.cached::<IP>(None, &port_name))
        .await
        .map_err(api_err(pod, "writing its IP object"))?;

    // the port is in NB: the CNI may go on (`routed`)
    let result = NicResult {
        subnet: choice.subnet.clone(),
        cidr: valid.cidr,
        gateway: valid.gateway,
        allocation,
        routed: true,
    };
    let patch = result_patch(
        pod,
        annotation_patch(&map, &provider, &with_result(&net, &result)),
    );
    let annotations_patched = match patch {
        Some(patch) => {
            let api = Api::<Pod>::namespaced(ctx.client.clone(), ns);
            match api
                .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                Ok(_) => true,
                Err(err) => {
                    return match gone_while_written(&api, name, &err).await {
                        true => Ok(PodOutcome::Gone(cleanup(ctx, pod).await?)),
                        false => Err(api_err(pod, "patching its annotations")(err)),
                    }
                }
            }
        }
        None => false,
    };
    // the figures change only with the IPAM (the Subnet reconciler writes them once
    // the IPAM is rebuilt, and whoever allocates or releases afterwards)
    let status_written = if was_held {
        false
    } else {
        ctx.write_usage(&choice.subnet)
            .await
            .map_err(api_err(pod, "writing its subnet's usage"))?
    };
    let report = ReadyReport {
        subnet: choice.subnet,
        allocation,
        nb_ops,
        ip_written,
        annotations_patched,
        status_written,
    };
    if report.wrote_anything() {
        tracing::info!(pod = %pod_key(pod), ?report, "pod network reconciled");
    }
    Ok(PodOutcome::Ready(report))
}

fn has_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

/// The result annotations' patch with [`FINALIZER`] added in the same write (a
/// strategic merge patch: finalizers merge as a set, so another controller's are
/// kept). One write per pod instead of two; a pod deleted before this write lands
/// never had the finalizer, and [`apply`] undoes its network itself.
fn result_patch(pod: &Pod, annotations: Option<Value>) -> Option<Value> {
    if has_finalizer(pod) {
        return annotations;
    }
    let mut patch = annotations.unwrap_or_else(|| json!({ "metadata": {} }));
    patch["metadata"]["finalizers"] = json!([FINALIZER]);
    Some(patch)
}

/// Whether the result patch failed because the pod is gone or terminating (a
/// terminating object takes no new finalizer: 422), rather than for a reason a retry
/// may cure.
async fn gone_while_written(api: &Api<Pod>, name: &str, err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(resp) if resp.code == 404 => true,
        kube::Error::Api(resp) if resp.code == 422 => match api.get_opt(name).await {
            Ok(None) => true,
            Ok(Some(pod)) => pod.metadata.deletion_timestamp.is_some(),
            Err(_) => false,
        },
        _ => false,
    }
}

/// Takes [`FINALIZER`] off a terminating pod whose network is gone: a JSON patch
/// that tests the entry first, so a list changed meanwhile makes it fail and retry.
async fn release_finalizer(ctx: &Context, pod: &Pod) -> Result<(), PodError> {
    let Some(index) = pod
        .metadata
        .finalizers
        .as_ref()
        .and_then(|f| f.iter().position(|f| f == FINALIZER))
    else {
        return Ok(());
    };
    let path = format!("/metadata/finalizers/{index}");
    let patch: json_patch::Patch = serde_json::from_value(json!([
        { "op": "test", "path": path, "value": FINALIZER },
        { "op": "remove", "path": path },
    ]))
    .expect("a well-formed JSON patch");
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    match Api::<Pod>::namespaced(ctx.client.clone(), ns)
        .patch(name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(resp)) if resp.code == 404 => Ok(()),
        Err(err) => Err(api_err(pod, "removing its finalizer")(err)),
    }
}

/// What is left of a terminating pod's grace period: kube-apiserver sets its
/// deletionTimestamp to the end of it, and kubelet moves it to now once the
/// containers are gone. Until then the pod keeps its address, so no new pod is given
/// one the old containers may still use (Kube-OVN waits the grace period too). None
/// when it has run out or the pod is not terminating.
fn grace_left(pod: &Pod, now: k8s_openapi::jiff::Timestamp) -> Option<Duration> {
    let end = pod.metadata.deletion_timestamp.as_ref()?.0;
    let left = end.duration_since(now);
    if left.is_positive() {
        Duration::try_from(left).ok()
    } else {
        None
    }
}

/// The reconcile `kube::runtime::Controller` runs. Host-network pods are left alone;
/// a terminating pod, once its grace period is over, gives its network back and then
/// its [`FINALIZER`]; any other
/// pod goes to [`apply`], whose result write adds the finalizer.
pub async fn reconcile(pod: Arc<Pod>, ctx: Arc<Context>) -> Result<Action, PodError> {
    if is_host_network(&pod) {
        return Ok(Action::await_change());
    }
    let _serial = ctx.pods.locks.lock(&pod_key(&pod)).await;
    if pod.metadata.deletion_timestamp.is_some() {
        if let Some(left) = grace_left(&pod, k8s_openapi::jiff::Timestamp::now()) {
            // its containers may still run and use the address
            return Ok(Action::requeue(left));
        }
        // a terminating pod without the finalizer may still hold an address: it
        // began terminating between its allocation and its result write
        cleanup(&ctx, &pod).await?;
        release_finalizer(&ctx, &pod).await?;
        return Ok(Action::await_change());
    }
    Ok(match apply(&ctx, &pod).await? {
        PodOutcome::Refused { retry: true, .. } => Action::requeue(REFUSED_RECHECK),
        _ => Action::await_change(),
    })
}

/// Retries a failed reconcile after a pause.
pub fn error_policy(pod: Arc<Pod>, error: &PodError, _ctx: Arc<Context>) -> Action {
    tracing::warn!(pod = %pod_key(&pod), error = %error, "pod reconcile failed; retrying");
    Action::requeue(Duration::from_secs(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::{SignedDuration, Timestamp};

    fn terminating_at(end: Option<Timestamp>) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.deletion_timestamp = end.map(Time);
        pod
    }

    #[test]
    fn a_terminating_pod_keeps_its_network_until_its_grace_period_ends() {
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let later = now.checked_add(SignedDuration::from_secs(30)).unwrap();
        assert_eq!(
            grace_left(&terminating_at(Some(later)), now),
            Some(Duration::from_secs(30))
        );
        // kubelet is done (deletionTimestamp moved to now) or the grace ran out
        assert_eq!(grace_left(&terminating_at(Some(now)), now), None);
        let earlier = now.checked_sub(SignedDuration::from_secs(5)).unwrap();
        assert_eq!(grace_left(&terminating_at(Some(earlier)), now), None);
        assert_eq!(grace_left(&terminating_at(None), now), None);
    }
}
