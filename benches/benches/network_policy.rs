//! NetworkPolicy at scale into a real NB (ovsdb-server through ovn-harness, unix
//! socket): 5 000 pods in 50 namespaces (their ports made as the Pod reconciler would
//! make them, untimed), then 1 000 policies (20 per namespace; pod selector, a peer
//! pod selector, a namespace+pod selector peer, ports; every other one with an
//! egress ipBlock with except).
//!
//! Printed: the time the reconciler's pass takes to converge from nothing and the NB
//! operations and rows it writes; then one pod's label change: its pass's time and
//! NB operations (bounded by the policies whose selectors name the old or new label,
//! not by the policy count: the same change is measured with 250 policies); and the
//! peer: the raw `ovsdb` client writing the same port groups, address sets and ACLs
//! into a fresh NB in one transaction.
//! Run: `cargo bench -p kube-ovn-benches --bench network_policy`.

use std::collections::BTreeMap;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube_ovn_api::annotations::{IpPair, PodNetwork, Provider};
use kube_ovn_controller::network_policy::names::Family;
use kube_ovn_controller::network_policy::sync;

/// No Node objects: node access groups are left out of the measure.
const NO_NODES: &[k8s_openapi::api::core::v1::Node] = &[];
use ovn_harness::{Db, OvsdbServer};
use ovn_nb::{Acl, AddressSet, LogicalSwitchPort, NbClient, PortGroup};
use ovsdb::client::Client;
use ovsdb::operation::Operation;
use ovsdb::typed::Table;
use ovsdb::value::{NamedUuid, Row, Value};
use serde_json::json;

const NAMESPACES: usize = 50;
const PODS_PER_NS: usize = 100;
const POLICIES_PER_NS: usize = 20;
const NB: &str = "OVN_Northbound";

fn pod(ns: usize, i: usize, app: usize) -> Pod {
    let network = PodNetwork {
        allocated: Some(true),
        ip_address: Some(IpPair::v4(
            [10, 100 + (ns / 100) as u8, ns as u8, i as u8 + 10].into(),
        )),
        ..Default::default()
    };
    let mut annotations = BTreeMap::new();
    network.write_into(&Provider::ovn(), &mut annotations);
    serde_json::from_value(json!({
        "metadata": {"namespace": format!("ns-{ns}"), "name": format!("pod-{i}"),
                     "labels": {"app": format!("app-{app}")}, "annotations": annotations},
        "spec": {"containers": [{"name": "c"}]},
    }))
    .expect("a pod")
}

fn policy(ns: usize, k: usize) -> NetworkPolicy {
    let app = |a: usize| json!({"matchLabels": {"app": format!("app-{}", a % 10)}});
    let mut spec = json!({
        "podSelector": app(k),
        "ingress": [{"from": [{"podSelector": app(k + 1)},
                              {"namespaceSelector": {"matchLabels": {"ns": format!("ns-{}", (ns + 1) % NAMESPACES)}}, "podSelector": app(k)}],
                     "ports": [{"port": 80 + k as i32, "protocol": "TCP"}]}],
    });
    if k % 2 == 0 {
        spec["egress"] = json!([{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}], "ports": [{"port": 53, "protocol": "UDP"}]}]);
    }
    serde_json::from_value(json!({"metadata": {"namespace": format!("ns-{ns}"), "name": format!("np-{k}")}, "spec": spec}))
        .expect("a policy")
}

fn namespaces() -> Vec<Namespace> {
    (0..NAMESPACES)
        .map(|n| serde_json::from_value(json!({"metadata": {"name": format!("ns-{n}"), "labels": {"ns": format!("ns-{n}")}}})).expect("ns"))
        .collect()
}

/// The pods' switches and ports, one transaction per namespace (untimed).
async fn ports(nb: &NbClient) {
    for n in 0..NAMESPACES {
        let mut txn = nb.txn();
        let sw = format!("sw-{n}");
        txn.ls_add(&sw).expect("ls");
        for i in 0..PODS_PER_NS {
            txn.lsp_add(&sw, &format!("pod-{i}.ns-{n}")).expect("lsp");
        }
        nb.commit(txn).await.expect("ports");
    }
}

fn policy_rows(nb: &NbClient) -> usize {
    let s = nb.store();
    s.row_count::<PortGroup>() + s.row_count::<AddressSet>() + s.row_count::<Acl>()
}

/// Converges `policies` from nothing, then relabels pod-0.ns-0 from app-0 to app-5;
/// the label is put back afterwards.
async fn run(nb: &NbClient, policies: &[NetworkPolicy], pods: &mut [Pod], ns: &[Namespace]) {
    let v4 = [Family::V4];
    let start = Instant::now();
    let report = sync(nb, policies, pods.iter(), ns, NO_NODES, &v4)
        .await
        .expect("converge");
    let converge = start.elapsed();
    println!(
        "{} policies over {} pods: converged in {converge:?}: {} NB operations ({} policy level, {} membership), {} rows (port groups + address sets + ACLs)",
        policies.len(), pods.len(), report.policy_ops + report.member_ops, report.policy_ops, report.member_ops, policy_rows(nb)
    );
    let start = Instant::now();
    let again = sync(nb, policies, pods.iter(), ns, NO_NODES, &v4)
        .await
        .expect("no-op pass");
    println!(
        "  unchanged pass: {:?}, {} NB operations",
        start.elapsed(),
        again.policy_ops + again.member_ops
    );
    let old = pods[0].metadata.labels.clone();
    pods[0].metadata.labels = Some(BTreeMap::from([("app".to_string(), "app-5".to_string())]));
    let start = Instant::now();
    let relabel = sync(nb, policies, pods.iter(), ns, NO_NODES, &v4)
        .await
        .expect("relabel");
    println!(
        "  one pod relabelled: pass {:?}, {} NB operations ({} policy level, {} membership)",
        start.elapsed(),
        relabel.policy_ops + relabel.member_ops,
        relabel.policy_ops,
        relabel.member_ops
    );
    pods[0].metadata.labels = old;
}

/// The same port groups, address sets and ACLs through the raw client into a fresh
/// NB that has the same ports, in one transaction.
async fn raw_peer(from: &NbClient) {
    let server = OvsdbServer::start(Db::Northbound).expect("NB");
    let nb = NbClient::connect(&server.unix_remote()).await.expect("NB");
    ports(&nb).await;
    let raw = Client::connect(&server.unix_remote())
        .await
        .expect("raw client");
    let port_uuid: BTreeMap<String, ovsdb::Uuid> = nb
        .store()
        .rows::<LogicalSwitchPort>()
        .expect("ports")
        .into_iter()
        .map(|p| (p.row.name.clone(), p.id.uuid()))
        .collect();
    let source = from.store();
    let port_name: BTreeMap<ovsdb::Uuid, String> = source
        .rows::<LogicalSwitchPort>()
        .expect("ports")
        .into_iter()
        .map(|p| (p.id.uuid(), p.row.name.clone()))
        .collect();
    let mut ops: Vec<Operation> = Vec::new();
    for set in source.rows::<AddressSet>().expect("sets") {
        ops.push(Operation::insert(AddressSet::TABLE_NAME, set.row.to_row()).into());
    }
    let mut acl_names = BTreeMap::new();
    for (i, acl) in source.rows::<Acl>().expect("acls").into_iter().enumerate() {
        let name = NamedUuid::new(format!("acl{i}")).expect("a uuid name");
        acl_names.insert(acl.id.uuid(), name.clone());
        ops.push(
            Operation::insert(Acl::TABLE_NAME, acl.row.to_row())
                .with_uuid_name(name)
                .into(),
        );
    }
    for group in source.rows::<PortGroup>().expect("groups") {
        let ports = group
            .row
            .ports
            .iter()
            .map(|p| port_uuid[&port_name[&p.uuid()]]);
        let acls = group.row.acls.iter().map(|a| acl_names[&a.uuid()].clone());
        let row = Row::new()
            .with("name", group.row.name.clone())
            .with("external_ids", Value::map(group.row.external_ids.clone()))
            .with("ports", Value::set(ports))
            .with("acls", Value::set(acls));
        ops.push(Operation::insert(PortGroup::TABLE_NAME, row).into());
    }
    let start = Instant::now();
    raw.transact(NB, &ops).await.expect("raw batch");
    println!(
        "  raw ovsdb peer: the same {} rows in one transaction: {:?}",
        ops.len(),
        start.elapsed()
    );
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let ns = namespaces();
        let mut pods: Vec<Pod> = (0..NAMESPACES)
            .flat_map(|n| (0..PODS_PER_NS).map(move |i| pod(n, i, i % 10)))
            .collect();
        let all: Vec<NetworkPolicy> = (0..NAMESPACES)
            .flat_map(|n| (0..POLICIES_PER_NS).map(move |k| policy(n, k)))
            .collect();
        for count in [all.len() / 4, all.len()] {
            let server = OvsdbServer::start(Db::Northbound).expect("NB");
            let nb = NbClient::connect(&server.unix_remote()).await.expect("NB");
            ports(&nb).await;
            // a quarter: the first 5 policies of every namespace
            let policies: Vec<NetworkPolicy> = all
                .iter()
                .filter(|p| {
                    count == all.len()
                        || p.metadata.name.as_deref().is_some_and(|n| {
                            n.trim_start_matches("np-")
                                .parse::<usize>()
                                .is_ok_and(|k| k < POLICIES_PER_NS / 4)
                        })
                })
                .cloned()
                .collect();
            run(&nb, &policies, &mut pods, &ns).await;
            if count == all.len() {
                raw_peer(&nb).await;
            }
        }
    });
}
