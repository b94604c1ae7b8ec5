//! A Service reconcile that fails is retried by the runtime's error policy, without a
//! new event, and converges: the cluster TCP balancer is missing from NB (deleted by
//! hand) while a Service is created, every reconcile of that Service fails, and once
//! the balancer is back, with no change to any Service or EndpointSlice, the VIP
//! appears. A deleted Service still loses its VIP (the orphan sweep) after that.

use kube_ovn_test_support as common;
mod retry_log;
mod svc;

use std::time::Duration;

use kube_ovn_controller::service;
use serde_json::json;
use svc::{
    create_service, delete_service, env, eventually, key, put_slice, service_json, slice_json, WAIT,
};

const FAILED: &str = "service reconcile failed; retrying";

/// Waits until `done` holds; panics naming `what` after [`WAIT`] twice over (the
/// retries back off).
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + 2 * WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_failed_service_reconcile_is_retried_without_a_new_event() {
    retry_log::init();
    let Some(env) = env().await else {
        return;
    };
    let (client, remote) = (&env.client, env.remote.as_str());
    let tcp = "cluster-tcp-loadbalancer";
    common::nbctl(remote, &["lb-del", tcp]);
    let controller = tokio::spawn(service::run(env.ctx.clone()));

    let spec = json!({"clusterIP": "10.96.7.1", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]});
    create_service(client, &service_json("retry", spec)).await;
    put_slice(
        client,
        &slice_json(
            "retry-a",
            "retry",
            "IPv4",
            &[("http", 8080)],
            &[("10.16.7.1", true)],
        ),
    )
    .await;
    // the first reconciles fail on the missing balancer; then, with no new event,
    // the error policy runs it again, and again
    until("two failed reconciles of default/retry", || {
        retry_log::warnings(FAILED, "service=default/retry") >= 2
    })
    .await;
    assert!(
        svc::lb_list(remote).is_empty(),
        "no balancer holds a VIP yet"
    );

    // the balancer comes back; nothing in the API changes
    common::nbctl(
        remote,
        &[
            "create",
            "Load_Balancer",
            &format!("name={tcp}"),
            "protocol=tcp",
        ],
    );
    eventually(remote, "the retried reconcile writes the VIP", |v| {
        v.get(&key(tcp, "10.96.7.1:80")).map(String::as_str) == Some("10.16.7.1:8080")
    })
    .await;

    // deleted: the orphan sweep takes its VIP
    delete_service(client, "retry").await;
    eventually(remote, "the deleted Service's VIP goes", |v| {
        !v.contains_key(&key(tcp, "10.96.7.1:80"))
    })
    .await;
    controller.abort();
}
