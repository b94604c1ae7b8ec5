//! A failed NetworkPolicy pass is retried on the reconciler's timer, without a new
//! event: the NB ovsdb-server is frozen (SIGSTOP) while a policy is created, so each
//! pass's first transaction times out (the controller's NB client here gives up on a
//! request after a second); after two such failures the server is thawed, and with
//! no further change in the cluster the policy's port group and ACLs appear.

use kube_ovn_test_support as common;
mod retry_log;

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::{Config, EmbeddedApiServer};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, PostParams};
use kube_ovn_controller::config::ControllerConfig;
use kube_ovn_controller::{network_policy, Context};
use ovn_nb::{NbClient, PortGroup};
use ovsdb::client::Client;
use ovsdb::ClientOptions;
use serde_json::json;

const FAILED: &str = "network policy pass failed; retrying";
/// How long a watch-driven change, or a retry after backoff, may take.
const WAIT: Duration = Duration::from_secs(90);

/// A process stopped with SIGSTOP until this is dropped.
struct Frozen(u32);

impl Frozen {
    fn new(pid: u32) -> Frozen {
        signal("-STOP", pid);
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        signal("-CONT", self.0);
    }
}

fn signal(which: &str, pid: u32) {
    let status = Command::new("kill")
        .args([which, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {which} {pid}");
}

async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_pass_is_retried_on_the_timer_without_a_new_event() {
    retry_log::init();
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    let config = ControllerConfig::parse_from([
        "kube-ovn-controller",
        &format!("--ovn-nb-addr={remote}"),
        "--enable-np",
    ])
    .expect("flags");
    let options = ClientOptions::new([remote.as_str()])
        .expect("remote")
        .with_database("OVN_Northbound");
    let raw = Client::connect_with(options).await.expect("NB");
    let nb = NbClient::with_client(raw.with_request_timeout(Some(Duration::from_secs(1))))
        .await
        .expect("NB replica");
    let nb = Arc::new(nb);
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.kube_client().expect("a client");
    let pp = PostParams::default();
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "retry"}})).expect("a Namespace");
    Api::<Namespace>::all(client.clone())
        .create(&pp, &ns)
        .await
        .expect("namespace");
    let ctx = Arc::new(Context::new(client.clone(), nb.clone(), Arc::new(config)));
    let reconciler = tokio::spawn(network_policy::run(ctx, None));

    let pid = central.nb.pid().expect("NB runs");
    let frozen = Frozen::new(pid);
    let policy: NetworkPolicy = serde_json::from_value(json!({
        "metadata": {"namespace": "retry", "name": "deny-all"},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }))
    .expect("a NetworkPolicy");
    Api::<NetworkPolicy>::namespaced(client.clone(), "retry")
        .create(&pp, &policy)
        .await
        .expect("policy");
    // the pass the policy started fails, and so does the timer's next one: no event
    // came in between
    until("two failed passes", || retry_log::warnings(FAILED, "") >= 2).await;
    drop(frozen);

    until("the policy's port group with its ACLs", || {
        nb.by_name::<PortGroup>("deny.all.retry")
            .ok()
            .flatten()
            .is_some_and(|g| !g.row.acls.is_empty())
    })
    .await;
    reconciler.abort();
}
