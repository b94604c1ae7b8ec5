//! Honest outcomes: a transaction given up (timeout) reports that its outcome is unknown,
//! a read-only request keeps `Canceled` / `TimedOut`; a raw monitor request is refused
//! with a typed error instead of wrecking the session; locks come back after a
//! reconnect, with an event.

use std::time::Duration;

use ovsdb::client::{Client, ClientOptions, Error, Event, GaveUp};
use ovsdb::{Atom, Operation, Row};
use serde_json::json;
use tokio::net::UnixListener;
use tokio::sync::broadcast;

mod common;
use common::{blocking_wait, start_nb};

const NB: &str = "OVN_Northbound";

/// The next event that is not a connect, or a panic after 10 s.
async fn next_event(events: &mut broadcast::Receiver<Event>, what: &str) -> Event {
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .unwrap_or_else(|_| panic!("no event while waiting for {what}"))
        .unwrap()
}

#[tokio::test]
async fn a_timed_out_transaction_has_an_unknown_outcome() {
    let Some(server) = start_nb() else {
        return;
    };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    let hasty = client.with_request_timeout(Some(Duration::from_millis(200)));
    assert_eq!(hasty.request_timeout(), Some(Duration::from_millis(200)));
    match hasty.transact(NB, &blocking_wait()).await {
        Err(Error::OutcomeUnknown { remote, why }) => {
            assert_eq!(remote, server.unix_remote());
            assert_eq!(why, GaveUp::TimedOut(Duration::from_millis(200)));
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    // The session is intact, and a quick transaction through the same handle commits.
    let op = Operation::insert("Logical_Switch", Row::new().with("name", Atom::from("q")));
    assert!(hasty.transact(NB, &[op.into()]).await.is_ok());
    assert!(client.list_dbs().await.is_ok());
}

#[tokio::test]
async fn a_read_only_request_keeps_canceled_and_times_out_as_such() {
    // A peer that accepts and never answers: with no set-up requests, it is "connected".
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mute.sock");
    let _listener = UnixListener::bind(&path).unwrap();
    let options = ClientOptions::new([format!("unix:{}", path.display())])
        .unwrap()
        .with_db_change_aware(false)
        .with_probe_interval(None);
    let client = Client::connect_with(options).await.unwrap();
    let hasty = client.with_request_timeout(Some(Duration::from_millis(100)));
    match hasty.echo(vec![json!("x")]).await {
        Err(Error::TimedOut { method, after }) => {
            assert_eq!(method, "echo");
            assert_eq!(after, Duration::from_millis(100));
        }
        other => panic!("expected TimedOut, got {other:?}"),
    }
    let pending = client.request("echo", &json!([]));
    let id = pending.id();
    let (outcome, canceled) = tokio::join!(pending, client.cancel(id));
    canceled.unwrap();
    assert!(
        matches!(outcome, Err(Error::Canceled { id: got }) if got == id),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_raw_monitor_request_is_refused_and_the_session_survives() {
    let Some(server) = start_nb() else {
        return;
    };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    let mut events = client.events();
    for method in ["monitor", "monitor_cond", "monitor_cond_since"] {
        let params = json!([NB, "raw", {"Logical_Switch": {}}]);
        match client.request(method, &params).await {
            Err(Error::UseMonitorApi { method: refused }) => assert_eq!(refused, method),
            other => panic!("{method} through request: {other:?}"),
        }
    }
    // Changes the refused monitors would have reported: the session stays up.
    for i in 0..3 {
        let name = format!("ls{i}");
        let op = Operation::insert("Logical_Switch", Row::new().with("name", Atom::from(name)));
        client.transact(NB, &[op.into()]).await.unwrap();
    }
    assert!(client.list_dbs().await.is_ok());
    assert!(
        events.try_recv().is_err(),
        "no disconnect, no other event: {:?}",
        events.try_recv()
    );
}

#[tokio::test]
async fn a_lock_is_asked_for_again_after_a_reconnect_with_an_event() {
    let Some(mut server) = start_nb() else {
        return;
    };
    let options = ClientOptions::new([server.unix_remote()])
        .unwrap()
        .with_backoff(Duration::from_millis(20), Duration::from_millis(200));
    let owner = Client::connect_with(options).await.unwrap();
    assert!(owner.lock("leader").await.unwrap());
    let mut events = owner.events();
    server.restart().unwrap();
    assert!(matches!(
        next_event(&mut events, "the disconnect").await,
        Event::Disconnected { .. }
    ));
    assert!(matches!(
        next_event(&mut events, "the reconnect").await,
        Event::Connected { .. }
    ));
    assert_eq!(
        next_event(&mut events, "the lock").await,
        Event::Locked {
            lock: "leader".into()
        }
    );
    // The server agrees: another session must queue for it.
    let other = Client::connect(&server.unix_remote()).await.unwrap();
    let mut other_events = other.events();
    assert!(!other.lock("leader").await.unwrap());
    // Released, it goes to the session queued for it.
    owner.unlock("leader").await.unwrap();
    assert_eq!(
        next_event(&mut other_events, "the handover").await,
        Event::Locked {
            lock: "leader".into()
        }
    );
}
