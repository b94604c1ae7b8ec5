//! Leader election on a coordination.k8s.io Lease by two contenders, with
//! optimistic concurrency deciding every race (kube-rs has no built-in
//! elector, so a minimal one is written here the way client-go's works).

use super::common::{server, within};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::Duration;

const LEASE: &str = "controller-leader";
const DURATION_SECS: i64 = 1;

fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

fn lease_body(holder: &str, resource_version: Option<String>) -> Lease {
    let t = now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    let mut lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": LEASE},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": DURATION_SECS,
                 "acquireTime": t, "renewTime": t}
    }))
    .unwrap();
    lease.metadata.resource_version = resource_version;
    lease
}

fn expired(lease: &Lease) -> bool {
    let v = serde_json::to_value(lease).unwrap();
    let renewed: jiff::Timestamp = v["spec"]["renewTime"].as_str().unwrap().parse().unwrap();
    renewed + jiff::SignedDuration::from_secs(DURATION_SECS) < now()
}

/// One election round: true if `me` holds the lease afterwards.
async fn try_acquire(api: &Api<Lease>, me: &str) -> bool {
    match api.get_opt(LEASE).await.unwrap() {
        None => api
            .create(&PostParams::default(), &lease_body(me, None))
            .await
            .is_ok(),
        Some(current) => {
            let holder = current
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.clone());
            if holder.as_deref() != Some(me) && !expired(&current) {
                return false;
            }
            let body = lease_body(me, current.metadata.resource_version.clone());
            match api.replace(LEASE, &PostParams::default(), &body).await {
                Ok(_) => true,
                Err(kube::Error::Api(s)) if s.code == 409 => false,
                Err(e) => panic!("unexpected error {e}"),
            }
        }
    }
}

#[tokio::test]
async fn two_contenders_one_leader_then_failover() {
    let server = server().await;
    let api: Api<Lease> = Api::namespaced(server.kube_client().unwrap(), "kube-system");

    // Both race for a lease that does not exist yet: exactly one wins, on
    // every round, while the winner keeps renewing.
    for _ in 0..5 {
        let (a, b) = tokio::join!(try_acquire(&api, "a"), try_acquire(&api, "b"));
        assert!(a ^ b, "exactly one leader per round (a={a}, b={b})");
    }
    let leader = api
        .get(LEASE)
        .await
        .unwrap()
        .spec
        .unwrap()
        .holder_identity
        .unwrap();
    let follower = if leader == "a" { "b" } else { "a" };

    // The leader stops renewing; the follower takes over once the lease expires.
    within("failover", async {
        while !try_acquire(&api, follower).await {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let holder = api
        .get(LEASE)
        .await
        .unwrap()
        .spec
        .unwrap()
        .holder_identity
        .unwrap();
    assert_eq!(holder, follower);
    assert!(
        !try_acquire(&api, &leader).await,
        "the old leader must not win back a live lease"
    );

    // Two writers holding the same stale copy: optimistic concurrency lets
    // only the first through.
    let stale = api.get(LEASE).await.unwrap();
    let first = lease_body(follower, stale.metadata.resource_version.clone());
    let second = lease_body(&leader, stale.metadata.resource_version.clone());
    api.replace(LEASE, &PostParams::default(), &first)
        .await
        .unwrap();
    let err = api
        .replace(LEASE, &PostParams::default(), &second)
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 409));
    server.shutdown().await;
}
