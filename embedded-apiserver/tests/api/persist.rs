//! Durability and resourceVersions across a crash, and watches from a
//! resourceVersion the server has not reached.

use super::common::{server, within};
use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

fn cm(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": value}})).unwrap()
}

fn rv(c: &ConfigMap) -> u64 {
    c.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

async fn start(state: &Path) -> Handle {
    EmbeddedApiServer::start(Config {
        state_file: Some(state.to_path_buf()),
        // No checkpoint can happen during the test: only the journal
        // stands between an acknowledged write and a crash.
        flush_interval: Duration::from_secs(3600),
        ..Config::default()
    })
    .await
    .expect("server starts")
}

#[tokio::test]
async fn a_crash_loses_no_acknowledged_write_and_reuses_no_resource_version() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let server = start(&state).await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    cms.create(&PostParams::default(), &cm("a", "1"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm("gone", "1"))
        .await
        .unwrap();
    let updated = cms
        .replace("a", &PostParams::default(), &cm("a", "2"))
        .await
        .unwrap();
    cms.delete("gone", &Default::default()).await.unwrap();
    let last_seen = server.resource_version();
    let namespaces: Api<Namespace> = Api::all(server.kube_client().unwrap());
    let default_uid = namespaces.get("default").await.unwrap().metadata.uid;
    drop(server); // a crash: no shutdown, no checkpoint

    let server = start(&state).await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    let restored = cms
        .get("a")
        .await
        .expect("the acknowledged create survives");
    assert_eq!(restored.data, updated.data, "and so does the update");
    assert_eq!(rv(&restored), rv(&updated));
    assert!(
        cms.get_opt("gone").await.unwrap().is_none(),
        "and the delete"
    );
    let namespaces: Api<Namespace> = Api::all(server.kube_client().unwrap());
    assert_eq!(
        namespaces.get("default").await.unwrap().metadata.uid,
        default_uid,
        "the built-in namespaces are the same objects"
    );
    let next = cms
        .create(&PostParams::default(), &cm("b", "1"))
        .await
        .unwrap();
    assert!(
        rv(&next) > last_seen,
        "no resourceVersion handed out before the crash is handed out again"
    );
    server.shutdown().await;

    // A clean shutdown checkpoints; the next start still has everything.
    let server = start(&state).await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    assert!(cms.get_opt("b").await.unwrap().is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn a_watch_from_a_future_resource_version_ends_with_too_large() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    let future = (server.resource_version() + 1000).to_string();
    let events: Vec<_> = within(
        "the watch to end",
        cms.watch(&WatchParams::default(), &future)
            .await
            .unwrap()
            .try_collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    let [WatchEvent::Error(status)] = events.as_slice() else {
        panic!("expected one ERROR event, got {events:?}");
    };
    assert_eq!(status.code, 504);
    assert_eq!(status.reason, "Timeout");
    assert!(
        status.message.contains("Too large resource version"),
        "{}",
        status.message
    );
    assert_eq!(server.watch_count(), 0);
}

#[tokio::test]
async fn a_watch_from_the_next_resource_version_waits_for_it() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    let next = (server.resource_version() + 1).to_string();
    let watching = {
        let cms = cms.clone();
        tokio::spawn(async move {
            let mut stream = cms
                .watch(&WatchParams::default(), &next)
                .await
                .unwrap()
                .boxed();
            stream.next().await
        })
    };
    // Two writes: the first reaches the watched version, the second is the
    // first change after it.
    cms.create(&PostParams::default(), &cm("first", "1"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm("second", "1"))
        .await
        .unwrap();
    let event = within("the first event", watching).await.unwrap();
    match event {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("second")),
        other => panic!("expected ADDED second, got {other:?}"),
    }
}
