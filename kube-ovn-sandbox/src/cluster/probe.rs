//! `matrix`: every pod pair probed over real traffic against the independent
//! NetworkPolicy evaluator ([`crate::matrix`]).

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use super::apply::client;
use super::error::SandboxError;
use super::layout::{Names, StateLayout};
use super::record::SandboxRecord;
use super::status::load_state;
use crate::matrix::{load_cluster_with, run_matrix, MatrixReport, MatrixSpec};
use crate::pod_status::declared_ports;
use crate::policy_eval::Protocol;
use kube_ovn_api::annotations::{PodNetwork, Provider};

/// What `matrix` probes.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Only pods of these namespaces (all when empty).
    pub namespaces: Vec<String>,
    /// Destination ports.
    pub ports: Vec<u16>,
    /// Protocols.
    pub protocols: Vec<Protocol>,
}

/// The report and the pods left out, each with why.
#[derive(Debug)]
pub struct ProbeOutcome {
    /// Every probe.
    pub report: MatrixReport,
    /// `namespace/name: why`.
    pub left_out: Vec<String>,
}

/// Probes the sandbox's pods. Left out, and said so: pods that do not serve every
/// probed port and protocol (the evaluator knows policies, not listeners), and pods
/// on private subnets, which isolate beyond what NetworkPolicy says.
pub async fn run_probe(
    layout: &StateLayout,
    opts: &ProbeOptions,
) -> Result<ProbeOutcome, SandboxError> {
    let state = load_state(layout)?;
    let record =
        SandboxRecord::load(&layout.record())?.ok_or_else(|| SandboxError::NotRunning {
            dir: layout.dir().to_path_buf(),
            file: layout.record(),
        })?;
    let names = Names::new(&record.prefix);
    let client = client(&state.kubeconfig).await?;
    let private: Vec<String> = Api::<kube_ovn_api::crd::Subnet>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(SandboxError::api("listing subnets"))?
        .items
        .into_iter()
        .filter(|s| s.spec.private == Some(true))
        .filter_map(|s| s.metadata.name)
        .collect();
    let mut left_out = Vec::new();
    let wanted: Vec<(u16, Protocol)> = opts
        .ports
        .iter()
        .flat_map(|port| opts.protocols.iter().map(move |p| (*port, *p)))
        .collect();
    let pod_prefix = names.pod_netns_prefix();
    let (pods, eval) = load_cluster_with(&client, &opts.namespaces, |pod: &Pod| {
        let id = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let netns = crate::netns::netns_path(&format!("{pod_prefix}{uid}"));
        if !running || !netns.exists() {
            left_out.push(format!("{id}: not running"));
            return None::<PathBuf>;
        }
        let (net, _) = PodNetwork::parse_lenient(
            &Provider::ovn(),
            &pod.metadata.annotations.clone().unwrap_or_default(),
        );
        if let Some(subnet) = net.logical_switch.filter(|s| private.contains(s)) {
            left_out.push(format!("{id}: on private subnet {subnet}"));
            return None;
        }
        let serves = declared_ports(pod);
        if let Some((port, proto)) = wanted.iter().find(|w| !serves.contains(w)) {
            left_out.push(format!("{id}: serves no {port}/{proto}"));
            return None;
        }
        Some(netns)
    })
    .await?;
    let spec = MatrixSpec {
        ports: opts.ports.clone(),
        protocols: opts.protocols.clone(),
        timeout: Duration::from_secs(1),
        concurrency: 16,
        retries: 3,
        retry_delay: Duration::from_secs(1),
    };
    let report = run_matrix(&pods, &eval, &spec).await;
    Ok(ProbeOutcome { report, left_out })
}
