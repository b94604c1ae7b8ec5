//! Monitors against a real ovsdb-server (OVN_Northbound): monitor_cond/update2,
//! monitor_cond_since/update3 on a standalone server, monitor_cond_change,
//! monitor_cancel, own updates before the transact reply, locks, and a server restart
//! under an open client.

use std::time::Duration;

use ovsdb::client::{Client, ClientOptions, Event, MonitorMethod, MonitorRequest};
use ovsdb::{Atom, Condition, Operation, Row, Store, Uuid, Writer};
use tokio::sync::broadcast;

mod common;
use common::start_nb;

const NB: &str = "OVN_Northbound";

async fn add_switch(client: &Client, name: &str) -> Uuid {
    let op = Operation::insert("Logical_Switch", Row::new().with("name", Atom::from(name)));
    client.transact(NB, &[op.into()]).await.unwrap()[0]
        .uuid()
        .unwrap()
}

fn names(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = store
        .rows("Logical_Switch")
        .iter()
        .filter_map(|(_, row)| row.get("name").and_then(|v| v.as_str()).map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Waits (bounded) for an event matching `pred`.
async fn wait_event(
    events: &mut broadcast::Receiver<Event>,
    pred: impl Fn(&Event) -> bool,
) -> Event {
    let wait = async {
        loop {
            match events.recv().await {
                Ok(event) if pred(&event) => return event,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(e) => panic!("event channel closed: {e}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .expect("event did not arrive")
}

#[tokio::test]
async fn own_updates_are_in_the_cache_when_transact_returns() {
    let Some(server) = start_nb() else { return };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    let monitor = client
        .monitor(NB, vec![MonitorRequest::table("Logical_Switch")])
        .await
        .unwrap();
    let store = monitor.store();
    for i in 0..50 {
        let uuid = add_switch(&client, &format!("own{i}")).await;
        // No waiting: the update2/update3 for our transaction preceded its reply.
        let row = store
            .get("Logical_Switch", &uuid)
            .expect("own insert not yet in the cache");
        assert_eq!(
            row.get("name").and_then(|v| v.as_str()),
            Some(format!("own{i}").as_str())
        );
    }
    assert_eq!(store.len("Logical_Switch"), 50);
}

#[tokio::test]
async fn monitor_cond_update2_and_condition_change() {
    let Some(server) = start_nb() else { return };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    add_switch(&client, "a").await;
    add_switch(&client, "b").await;
    let schema = client.get_schema(NB).await.unwrap();
    let only_a = MonitorRequest::table("Logical_Switch")
        .with_columns(["name", "other_config"])
        .with_conditions(vec![Condition::eq("name", Atom::from("a"))]);
    let monitor = client
        .monitor_with(NB, vec![only_a], MonitorMethod::Cond, Writer::new(schema))
        .await
        .unwrap();
    let store = monitor.store();
    assert_eq!(names(&store), ["a"]);
    assert_eq!(
        monitor.last_txn_id(),
        None,
        "monitor_cond has no transaction ids"
    );

    // A modify of a monitored row arrives as an update2 diff.
    let update = Operation::update(
        "Logical_Switch",
        Row::new().with("other_config", ovsdb::Value::map([("k", "v")])),
    )
    .with_condition(Condition::eq("name", Atom::from("a")));
    client.transact(NB, &[update.into()]).await.unwrap();
    let a = store.find("Logical_Switch", |_| true);
    assert_eq!(
        a[0].1.get("other_config"),
        Some(&ovsdb::Value::map([("k", "v")]))
    );

    let only_b = MonitorRequest::table("Logical_Switch")
        .with_conditions(vec![Condition::eq("name", Atom::from("b"))]);
    let old_id = monitor.id().unwrap();
    monitor.change_conditions(vec![only_b]).await.unwrap();
    assert_ne!(monitor.id().unwrap(), old_id);
    assert_eq!(names(&store), ["b"]);
    // Later notifications use the new id and still reach the replica.
    let c = add_switch(&client, "c").await;
    assert!(
        store.get("Logical_Switch", &c).is_none(),
        "c does not match the condition"
    );
    let update_b = Operation::update(
        "Logical_Switch",
        Row::new().with("other_config", ovsdb::Value::map([("x", "y")])),
    )
    .with_condition(Condition::eq("name", Atom::from("b")));
    client.transact(NB, &[update_b.into()]).await.unwrap();
    assert_eq!(
        store.find("Logical_Switch", |_| true)[0]
            .1
            .get("other_config"),
        Some(&ovsdb::Value::map([("x", "y")]))
    );
}

#[tokio::test]
async fn monitor_cond_since_on_standalone_has_nil_txn_id_and_cancel_stops_updates() {
    let Some(server) = start_nb() else { return };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    add_switch(&client, "before").await;
    let monitor = client
        .monitor(NB, vec![MonitorRequest::table("Logical_Switch")])
        .await
        .unwrap();
    let store = monitor.store();
    assert_eq!(names(&store), ["before"]);
    // Standalone: found=false with the all-zero id, and update3 carries it too.
    assert_eq!(monitor.last_txn_id(), Some(Uuid::NIL));
    add_switch(&client, "during").await;
    assert_eq!(names(&store), ["before", "during"]);
    assert_eq!(monitor.last_txn_id(), Some(Uuid::NIL));

    monitor.cancel().await.unwrap();
    add_switch(&client, "after").await;
    // Make sure any stray notification would have been processed: one more round trip.
    client.list_dbs().await.unwrap();
    assert_eq!(names(&store), ["before", "during"]);
}

#[tokio::test]
async fn lock_steal_unlock_with_notifications() {
    let Some(server) = start_nb() else { return };
    let a = Client::connect(&server.unix_remote()).await.unwrap();
    let b = Client::connect(&server.unix_remote()).await.unwrap();
    let mut b_events = b.events();
    assert!(a.lock("leader").await.unwrap());
    assert!(!b.lock("leader").await.unwrap(), "b must queue behind a");
    a.unlock("leader").await.unwrap();
    let granted = wait_event(&mut b_events, |e| matches!(e, Event::Locked { .. })).await;
    assert_eq!(
        granted,
        Event::Locked {
            lock: "leader".into()
        }
    );

    let mut a_events = a.events();
    assert!(a.steal("leader").await.unwrap());
    let stolen = wait_event(&mut b_events, |e| matches!(e, Event::Stolen { .. })).await;
    assert_eq!(
        stolen,
        Event::Stolen {
            lock: "leader".into()
        }
    );
    a.unlock("leader").await.unwrap();
    assert!(
        a_events.try_recv().is_err(),
        "a got no lock notification of its own"
    );
}

#[tokio::test]
async fn restart_of_a_standalone_server_reconnects_and_the_cache_converges() {
    let Some(mut server) = start_nb() else { return };
    let options = ClientOptions::new([server.unix_remote()])
        .unwrap()
        .with_database(NB)
        .with_backoff(Duration::from_millis(50), Duration::from_millis(500));
    let client = Client::connect_with(options).await.unwrap();
    let mut events = client.events();
    let monitor = client
        .monitor(NB, vec![MonitorRequest::table("Logical_Switch")])
        .await
        .unwrap();
    let store = monitor.store();
    add_switch(&client, "s1").await;

    server.restart().expect("restart ovsdb-server");
    wait_event(&mut events, |e| matches!(e, Event::Connected { .. })).await;
    // Another writer changes the database; our replica must follow.
    let other = Client::connect(&server.unix_remote()).await.unwrap();
    add_switch(&other, "s2").await;
    add_switch(&client, "s3").await;
    assert_eq!(names(&store), ["s1", "s2", "s3"]);

    let fresh = client
        .transact(NB, &[Operation::select("Logical_Switch").into()])
        .await
        .unwrap();
    let fresh_rows = fresh[0].rows().unwrap();
    assert_eq!(fresh_rows.len(), store.len("Logical_Switch"));
    for row in fresh_rows {
        let cached = store
            .get("Logical_Switch", &row.uuid().unwrap())
            .expect("row in cache");
        assert_eq!(cached.get("name"), row.get("name"));
    }
}
