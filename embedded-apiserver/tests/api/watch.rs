//! `watcher` and `reflector` streams, including a forced 410 Gone in the
//! middle of a watch (the watcher must relist and carry on).

use super::common::{server, within};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

#[tokio::test]
async fn watcher_survives_forced_410() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    cms.create(&PostParams::default(), &cm("before"))
        .await
        .unwrap();

    let mut events = watcher(cms.clone(), watcher::Config::default()).boxed();
    let mut seen_init_done = false;
    while !seen_init_done {
        match within("initial list", events.next()).await.unwrap() {
            Ok(watcher::Event::InitDone) => seen_init_done = true,
            Ok(_) => {}
            Err(e) => panic!("unexpected watcher error {e}"),
        }
    }
    cms.create(&PostParams::default(), &cm("during"))
        .await
        .unwrap();
    let applied = within("live event", events.next()).await.unwrap().unwrap();
    assert!(
        matches!(applied, watcher::Event::Apply(ref o) if o.metadata.name.as_deref() == Some("during"))
    );

    // Compaction ends the watch; the watcher resumes from its last version,
    // which is now too old: 410 Gone, then a relist.
    server.compact_history();
    cms.create(&PostParams::default(), &cm("after"))
        .await
        .unwrap();
    let (mut got_410, mut relisted, mut seen_after) = (false, false, false);
    while !(got_410 && relisted && seen_after) {
        match within("relist after 410", events.next()).await.unwrap() {
            Err(watcher::Error::WatchError(status)) => {
                assert_eq!(status.code, 410);
                got_410 = true;
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(watcher::Event::InitDone) => relisted = true,
            Ok(watcher::Event::InitApply(o)) | Ok(watcher::Event::Apply(o)) => {
                seen_after |= o.metadata.name.as_deref() == Some("after")
            }
            Ok(_) => {}
        }
    }
    server.shutdown().await;
}

#[tokio::test]
async fn reflector_store_tracks_changes_across_restarts() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(cms.clone(), watcher::Config::default()))
        .applied_objects()
        .boxed();
    // Drive the stream in the background; errors (the forced 410) are expected.
    let driver = tokio::spawn(stream.for_each(|_| async {}));
    within("store ready", reader.wait_until_ready())
        .await
        .unwrap();
    for n in 0..5 {
        cms.create(&PostParams::default(), &cm(&format!("c{n}")))
            .await
            .unwrap();
    }
    server.compact_history();
    cms.delete("c0", &Default::default()).await.unwrap();
    within("store converges", async {
        loop {
            let names: Vec<String> = reader
                .state()
                .iter()
                .filter_map(|o| o.metadata.name.clone())
                .collect();
            if names.len() == 4 && !names.contains(&"c0".to_string()) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    driver.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn raw_watch_from_version_sees_every_change_once_in_order() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    let first = cms.create(&PostParams::default(), &cm("x0")).await.unwrap();
    let from = first.metadata.resource_version.unwrap();
    let writer = {
        let cms = cms.clone();
        tokio::spawn(async move {
            for n in 1..50 {
                cms.create(&PostParams::default(), &cm(&format!("x{n}")))
                    .await
                    .unwrap();
            }
        })
    };
    let mut stream = cms
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    let mut names = Vec::new();
    let mut last_rv = from.parse::<u64>().unwrap();
    while names.len() < 49 {
        match within("watch events", stream.try_next())
            .await
            .unwrap()
            .unwrap()
        {
            WatchEvent::Added(o) => {
                let rv: u64 = o.metadata.resource_version.unwrap().parse().unwrap();
                assert!(rv > last_rv, "resourceVersion went backwards");
                last_rv = rv;
                names.push(o.metadata.name.unwrap());
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let expected: Vec<String> = (1..50).map(|n| format!("x{n}")).collect();
    assert_eq!(names, expected);
    writer.await.unwrap();
    server.shutdown().await;
}

#[tokio::test]
async fn watch_from_compacted_version_is_410_expired() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    let first = cms.create(&PostParams::default(), &cm("y")).await.unwrap();
    server.compact_history();
    let mut stream = cms
        .watch(
            &WatchParams::default(),
            &first.metadata.resource_version.unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    match within("error event", stream.try_next())
        .await
        .unwrap()
        .unwrap()
    {
        WatchEvent::Error(e) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test]
async fn streaming_list_watcher_gets_initial_events_then_changes() {
    let server = server().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.kube_client().unwrap(), "default");
    for n in ["s0", "s1"] {
        cms.create(&PostParams::default(), &cm(n)).await.unwrap();
    }
    let config = watcher::Config::default().streaming_lists();
    let mut events = watcher(cms.clone(), config).boxed();
    let mut initial = Vec::new();
    loop {
        match within("initial events", events.next())
            .await
            .unwrap()
            .unwrap()
        {
            watcher::Event::InitApply(o) => initial.push(o.metadata.name.unwrap()),
            watcher::Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, vec!["s0", "s1"]);
    cms.create(&PostParams::default(), &cm("s2")).await.unwrap();
    match within("live event", events.next()).await.unwrap().unwrap() {
        watcher::Event::Apply(o) => assert_eq!(o.metadata.name.as_deref(), Some("s2")),
        other => panic!("expected Apply, got {other:?}"),
    }
    server.shutdown().await;
}
