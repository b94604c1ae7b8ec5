//! The controller's Event recorder against the embedded API server: a repeat within
//! the aggregation window raises the first Event's count (one line in `kubectl
//! describe`, "x3"), a different message is an Event of its own, and a repeat of an
//! Event that has expired meanwhile records it afresh.

use kube_ovn_test_support as common;

use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube_ovn_controller::events::{EventKind, Recorder};

async fn events_about(api: &Api<Event>, pod: &str) -> Vec<Event> {
    let mut found: Vec<Event> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(pod))
        .collect();
    found.sort_by_key(|e| e.message.clone());
    found
}

#[tokio::test]
async fn repeats_count_on_the_first_event() {
    let (_server, client) = common::api_server_with_crds().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = common::plain_pod("default", "taken", Default::default());
    let pod = pods.create(&PostParams::default(), &pod).await.unwrap();
    let recorder = Recorder::new(client.clone());
    let taken = "subnet ovn-default: address 10.16.0.50 is taken by tour/web-static (ovn)";
    for _ in 0..3 {
        recorder
            .record(&pod, EventKind::Warning, "AcquireAddressFailed", taken)
            .await;
    }
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let found = events_about(&events, "taken").await;
    assert_eq!(found.len(), 1, "{found:#?}");
    let first = &found[0];
    assert_eq!(first.count, Some(3));
    assert_eq!(first.type_.as_deref(), Some("Warning"));
    assert_eq!(first.reason.as_deref(), Some("AcquireAddressFailed"));
    assert_eq!(first.involved_object.uid, pod.metadata.uid);
    assert!(first.last_timestamp >= first.first_timestamp);
    assert_eq!(
        first.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("kube-ovn-controller")
    );

    // another message is another Event
    let outside = "address 10.99.0.1 is outside subnet ovn-default";
    recorder
        .record(&pod, EventKind::Warning, "AcquireAddressFailed", outside)
        .await;
    let found = events_about(&events, "taken").await;
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0].count, Some(1));
    assert_eq!(found[0].message.as_deref(), Some(outside));

    // the first Event expired (deleted): its next repeat is recorded afresh
    let name = first.metadata.name.clone().unwrap();
    events
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    recorder
        .record(&pod, EventKind::Warning, "AcquireAddressFailed", taken)
        .await;
    let found = events_about(&events, "taken").await;
    let again: Vec<_> = found
        .iter()
        .filter(|e| e.message.as_deref() == Some(taken))
        .collect();
    assert_eq!(again.len(), 1, "{found:#?}");
    assert_ne!(again[0].metadata.name.as_deref(), Some(name.as_str()));
    assert_eq!(again[0].count, Some(1));
}
