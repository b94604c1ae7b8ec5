//! Watch semantics kube-apiserver's watch cache has: selector exits carry
//! the previous object, slow watchers are closed, and a resourceVersion
//! from the future is refused rather than accepted.

use super::tests::{cm, drain, opts, rt, watch_all};
use super::*;
use crate::selector::LabelSelector;

fn labelled(name: &str, tier: &str) -> Value {
    let mut o = cm(name);
    o["metadata"]["labels"] = json!({"tier": tier});
    o
}

#[test]
fn leaving_a_selector_is_deleted_with_the_previous_object_at_the_new_version() {
    let mut state = State::new(100);
    let cms = rt(&state, "", "v1", "configmaps");
    state
        .create(&cms, Some("default"), labelled("a", "web"), &opts())
        .unwrap();
    let mut watch = watch_all(Some(state.resource_version()));
    watch.filter.labels = LabelSelector::parse("tier=web").unwrap();
    let mut rx = state.watch(watch).unwrap();
    let moved = state
        .update(
            &cms,
            Some("default"),
            "a",
            labelled("a", "db"),
            Part::Main,
            &opts(),
        )
        .unwrap();
    let Some(WatchMsg::Event(EventType::Deleted, object)) = rx.try_next() else {
        panic!("expected a DELETED event");
    };
    assert_eq!(
        object["metadata"]["labels"]["tier"], "web",
        "the previous object"
    );
    assert_eq!(
        object["metadata"]["resourceVersion"], moved["metadata"]["resourceVersion"],
        "stamped with the event's resourceVersion"
    );
    assert!(rx.try_next().is_none());
}

#[test]
fn a_watcher_that_falls_behind_is_closed_and_resumes_from_history() {
    let mut state = State::new(100);
    state.set_watch_buffer(4);
    let cms = rt(&state, "", "v1", "configmaps");
    let start = state.resource_version();
    let mut rx = state.watch(watch_all(Some(start))).unwrap();
    for n in 0..10 {
        state
            .create(&cms, Some("default"), cm(&format!("cm{n}")), &opts())
            .unwrap();
    }
    assert_eq!(state.watcher_count(), 0, "the slow watcher was dropped");
    let seen = drain(&mut rx);
    assert_eq!(seen.len(), 4, "what fitted in its buffer, then the end");
    // The client resumes from the last resourceVersion it saw and misses nothing.
    let last: u64 = seen[3].2.parse().unwrap();
    let mut resumed = state.watch(watch_all(Some(last))).unwrap();
    let rest: Vec<String> = drain(&mut resumed).into_iter().map(|e| e.1).collect();
    assert_eq!(rest, ["cm4", "cm5", "cm6", "cm7", "cm8", "cm9"]);
}

#[test]
fn a_watch_from_a_future_resource_version_is_too_large() {
    let mut state = State::new(100);
    let current = state.resource_version();
    let err = state.watch(watch_all(Some(current + 5))).unwrap_err();
    assert_eq!(err.reason, crate::error::Reason::Timeout);
    assert_eq!(err.code(), 504);
    assert!(err.message.contains("Too large resource version"), "{err}");
    assert_eq!(
        err.to_status()["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert_eq!(state.watcher_count(), 0);
    assert!(state.watch(watch_all(Some(current))).is_ok());
}
