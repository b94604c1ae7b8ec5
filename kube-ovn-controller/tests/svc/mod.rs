//! Helpers of the Service tests: a real OVN central with the controller's start-up
//! done, the embedded API server with the CRDs, Services and EndpointSlices as JSON,
//! and the cluster balancers' VIPs as the real `ovn-nbctl lb-list` prints them.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::Handle;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};
use kube::Client;
use kube_ovn_controller::config::ControllerConfig;
use kube_ovn_controller::{bootstrap, Context};
use ovn_harness::OvnCentral;
use ovn_nb::NbClient;
use serde_json::{json, Value};

use crate::common;

/// How long a watch-driven change may take before the test gives up.
pub const WAIT: Duration = Duration::from_secs(30);

pub struct Env {
    pub central: OvnCentral,
    pub server: Handle,
    pub remote: String,
    pub client: Client,
    pub ctx: Arc<Context>,
}

pub async fn env() -> Option<Env> {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_test_writer()
        .try_init();
    let central = common::central()?;
    let remote = central.nb_remote();
    let nb_flag = format!("--ovn-nb-addr={remote}");
    // dual stack: the service CIDR has both families
    let flags = [
        "kube-ovn-controller",
        nb_flag.as_str(),
        "--service-cluster-ip-range=10.96.0.0/12,fd00:10:96::/112",
    ];
    let config = ControllerConfig::parse_from(flags).expect("flags");
    assert!(config.enable_lb, "--enable-lb is on by default");
    let nb = NbClient::connect(&remote).await.expect("NB");
    bootstrap(&nb, &config).await.expect("start-up");
    let (server, client) = crate::common::api_server_with_crds().await;
    let ctx = Arc::new(Context::new(client.clone(), Arc::new(nb), Arc::new(config)));
    Some(Env {
        central,
        server,
        remote,
        client,
        ctx,
    })
}

pub fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

pub fn service_json(name: &str, spec: Value) -> Service {
    from_json(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }))
}

/// The protocol of a slice port named `name`: `dns*` is UDP, `sctp*` SCTP, else TCP.
pub fn protocol_of(name: &str) -> &'static str {
    if name.starts_with("dns") {
        "UDP"
    } else if name.starts_with("sctp") {
        "SCTP"
    } else {
        "TCP"
    }
}

/// An EndpointSlice of Service `svc`: `ports` as (name, port) with the protocol of
/// [`protocol_of`], `endpoints` as (address, ready).
pub fn slice_json(
    name: &str,
    svc: &str,
    family: &str,
    ports: &[(&str, i32)],
    endpoints: &[(&str, bool)],
) -> EndpointSlice {
    let ports: Vec<Value> = ports
        .iter()
        .map(|(n, p)| json!({"name": n, "port": p, "protocol": protocol_of(n)}))
        .collect();
    let endpoints: Vec<Value> = endpoints
        .iter()
        .map(|(a, ready)| json!({"addresses": [a], "conditions": {"ready": ready}}))
        .collect();
    from_json(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"kubernetes.io/service-name": svc}},
        "addressType": family,
        "ports": ports,
        "endpoints": endpoints,
    }))
}

pub async fn create_service(client: &Client, svc: &Service) {
    Api::<Service>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), svc)
        .await
        .unwrap();
}

/// Creates or replaces an EndpointSlice.
pub async fn put_slice(client: &Client, slice: &EndpointSlice) {
    let api = Api::<EndpointSlice>::namespaced(client.clone(), "default");
    let name = slice.metadata.name.clone().unwrap();
    match api.get_opt(&name).await.unwrap() {
        None => {
            api.create(&PostParams::default(), slice).await.unwrap();
        }
        Some(old) => {
            let mut new = slice.clone();
            new.metadata.resource_version = old.metadata.resource_version;
            api.replace(&name, &PostParams::default(), &new)
                .await
                .unwrap();
        }
    }
}

pub async fn delete_service(client: &Client, name: &str) {
    Api::<Service>::namespaced(client.clone(), "default")
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
}

/// The cluster balancers' names.
pub const LBS: [&str; 6] = [
    "cluster-tcp-loadbalancer",
    "cluster-udp-loadbalancer",
    "cluster-sctp-loadbalancer",
    "cluster-tcp-session-loadbalancer",
    "cluster-udp-session-loadbalancer",
    "cluster-sctp-session-loadbalancer",
];

/// Every VIP of the cluster balancers as the real `ovn-nbctl lb-list LB` prints it
/// (it cuts long balancer names, hence one call per balancer): (balancer, VIP) ->
/// backends.
pub fn lb_list(remote: &str) -> BTreeMap<(String, String), String> {
    let mut vips = BTreeMap::new();
    for lb in LBS {
        let out = common::nbctl(remote, &["lb-list", lb]);
        for line in out.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // `UUID LB PROTO VIP IPS`, then `PROTO VIP IPS` for the balancer's next VIPs
            let (vip, ips) = match cols.as_slice() {
                [_, _, _, vip, ips] | [_, vip, ips] => (vip, ips),
                _ => continue,
            };
            vips.insert((lb.to_string(), vip.to_string()), ips.to_string());
        }
    }
    vips
}

pub fn key(lb: &str, vip: &str) -> (String, String) {
    (lb.to_string(), vip.to_string())
}

/// Polls `lb-list` until `check` holds; panics with the last listing after [`WAIT`].
pub async fn eventually(
    remote: &str,
    what: &str,
    check: impl Fn(&BTreeMap<(String, String), String>) -> bool,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let vips = lb_list(remote);
        if check(&vips) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}; lb-list: {vips:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
