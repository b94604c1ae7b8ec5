//! A request made on an idle connection is written and read by its caller's task (no hop
//! through the connection task). These tests pin down what that must not change: call
//! order on the wire, the server's `echo` answered while a caller reads, the socket
//! handed back to the connection task when a caller finishes or gives up, and many tasks
//! of a multi-threaded runtime sharing one connection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ovsdb::client::{Client, ClientOptions, Monitor, MonitorRequest};
use ovsdb::{Atom, Deframer, Message, Operation, Row, Store};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;

mod common;
use common::{blocking_wait, start_nb};

const NB: &str = "OVN_Northbound";

fn insert_switch(name: &str) -> Operation {
    Operation::insert("Logical_Switch", Row::new().with("name", Atom::from(name))).into()
}

/// Monitors `Logical_Switch`; the monitor must be kept for its store to stay current.
async fn monitor_switches(client: &Client) -> (Monitor, Store) {
    let monitor = client
        .monitor(NB, vec![MonitorRequest::table("Logical_Switch")])
        .await
        .unwrap();
    let store = monitor.store();
    (monitor, store)
}

fn has_switch(store: &Store, name: &str) -> bool {
    store
        .rows("Logical_Switch")
        .iter()
        .any(|(_, row)| row.get("name").and_then(|v| v.as_str()) == Some(name))
}

/// Waits (bounded) until another client's insert of `name` reached `store`: only the
/// connection task can have read it, since no request of ours is in flight.
async fn until_replicated(store: &Store, name: &str) {
    let wait = async {
        while !has_switch(store, name) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .unwrap_or_else(|_| panic!("{name} never reached the cache: nobody reads the socket"));
}

#[tokio::test]
async fn the_socket_goes_back_to_the_connection_task_after_a_caller_read_it() {
    let Some(server) = start_nb() else { return };
    // No probe timer: nothing but a hand-back may wake the connection task.
    let options = ClientOptions::new([server.unix_remote()])
        .unwrap()
        .with_probe_interval(None);
    let client = Client::connect_with(options).await.unwrap();
    let other = Client::connect(&server.unix_remote()).await.unwrap();
    let (_monitor, store) = monitor_switches(&client).await;

    // Requests on the idle connection, each read by this task; afterwards the
    // connection task must be listening again.
    for i in 0..5 {
        client
            .transact(NB, &[insert_switch(&format!("own{i}"))])
            .await
            .unwrap();
    }
    other
        .transact(NB, &[insert_switch("theirs1")])
        .await
        .unwrap();
    until_replicated(&store, "theirs1").await;

    // A caller that starts reading and then gives up (its future is dropped while the
    // server holds the transaction) must hand the socket back too.
    let pending = client.transact_request(NB, &blocking_wait());
    let gave_up = tokio::time::timeout(Duration::from_millis(200), pending).await;
    assert!(
        gave_up.is_err(),
        "the wait cannot be satisfied: {gave_up:?}"
    );
    other
        .transact(NB, &[insert_switch("theirs2")])
        .await
        .unwrap();
    until_replicated(&store, "theirs2").await;

    // And the session is still usable, with its own updates applied before the reply.
    let uuid = client
        .transact(NB, &[insert_switch("own-last")])
        .await
        .unwrap()[0]
        .uuid()
        .unwrap();
    assert!(store.get("Logical_Switch", &uuid).is_some());
}

/// What a scripted peer saw: the method of each request and notification, and `reply`
/// for each reply it got.
type Log = Arc<Mutex<Vec<String>>>;

/// A fake server on a unix socket that logs what arrives and answers each request with
/// an empty result; with `probe_first`, it first sends its own `echo` and holds the
/// answer until the client has replied to it.
async fn scripted_peer(probe_first: bool) -> (tempfile::TempDir, String, Log) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("peer.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let log: Log = Arc::default();
    let seen = log.clone();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut deframer = Deframer::default();
        let mut buf = vec![0u8; 4096];
        let mut held: Option<serde_json::Value> = None;
        loop {
            let n = match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            deframer.push(&buf[..n]);
            while let Some(message) = deframer.next_message().unwrap() {
                let mut out = Vec::new();
                match message {
                    Message::Request { id, method, .. } => {
                        seen.lock().unwrap().push(method);
                        if probe_first {
                            held = Some(id);
                            out = br#"{"id":"peer-echo","method":"echo","params":[]}"#.to_vec();
                        } else {
                            out = format!(r#"{{"id":{id},"result":[],"error":null}}"#).into_bytes();
                        }
                    }
                    Message::Notification { method, .. } => {
                        seen.lock().unwrap().push(method);
                    }
                    Message::Reply { id, .. } => {
                        seen.lock().unwrap().push(format!("reply {id}"));
                        if let Some(held) = held.take() {
                            out = format!(r#"{{"id":{held},"result":["done"],"error":null}}"#)
                                .into_bytes();
                        }
                    }
                    Message::Error { .. } => seen.lock().unwrap().push("error".into()),
                }
                if stream.write_all(&out).await.is_err() {
                    return;
                }
            }
        }
    });
    (dir, format!("unix:{}", path.display()), log)
}

fn plain_options(remote: &str) -> ClientOptions {
    ClientOptions::new([remote])
        .unwrap()
        .with_db_change_aware(false)
        .with_probe_interval(None)
}

#[tokio::test]
async fn requests_and_notifications_leave_in_the_order_they_were_made() {
    let (_dir, remote, log) = scripted_peer(false).await;
    let client = Client::connect_with(plain_options(&remote)).await.unwrap();
    // `a` finds the connection idle and is written at once by this task; the
    // notification goes through the connection task's queue, and `b`, made while that
    // notification is still queued, must not overtake it.
    let a = client.request("a", &json!([]));
    client.notify("n1", vec![]).unwrap();
    let b = client.request("b", &json!([]));
    let (a, b) = tokio::join!(a, b);
    a.unwrap();
    b.unwrap();
    client.notify("n2", vec![]).unwrap();
    client.request("c", &json!([])).await.unwrap();
    assert_eq!(*log.lock().unwrap(), ["a", "n1", "b", "n2", "c"]);
}

async fn answered(client: &Client, method: &str) -> Box<serde_json::value::RawValue> {
    tokio::time::timeout(Duration::from_secs(10), client.request(method, &json!([])))
        .await
        .expect("the echo was not answered, so the reply never came")
        .unwrap()
}

#[tokio::test]
async fn the_servers_echo_is_answered_while_a_caller_reads_its_own_reply() {
    let (_dir, remote, log) = scripted_peer(true).await;
    let client = Client::connect_with(plain_options(&remote)).await.unwrap();
    // The first request also lets the connection task run once; from then on it only
    // runs when woken, and the second request is read by this task alone.
    answered(&client, "warm").await;
    // The peer answers only after our answer to its echo: the task reading (this one)
    // must also write that answer.
    let reply = answered(&client, "r").await;
    assert_eq!(reply.get(), r#"["done"]"#);
    let echo = r#"reply "peer-echo""#;
    assert_eq!(*log.lock().unwrap(), ["warm", echo, "r", echo]);
}

#[test]
fn many_tasks_on_a_multi_threaded_runtime_share_one_connection() {
    let Some(server) = start_nb() else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = Client::connect(&server.unix_remote()).await.unwrap();
        let other = Client::connect(&server.unix_remote()).await.unwrap();
        let (_monitor, store) = monitor_switches(&client).await;
        // Updates caused by another client keep arriving while our tasks read inline,
        // queue, hand the socket back and give up on requests.
        let theirs = tokio::spawn(async move {
            for i in 0..200 {
                other
                    .transact(NB, &[insert_switch(&format!("other-{i}"))])
                    .await
                    .unwrap();
            }
        });
        let tasks: Vec<_> = (0..8)
            .map(|task| {
                let client = client.clone();
                let store = store.clone();
                tokio::spawn(async move {
                    for i in 0..100 {
                        if i % 25 == 0 {
                            // A request given up before its reply.
                            let blocked = client.transact_request(NB, &blocking_wait());
                            let _ = tokio::time::timeout(Duration::from_millis(5), blocked).await;
                        }
                        let name = format!("t{task}-{i}");
                        let uuid = client.transact(NB, &[insert_switch(&name)]).await.unwrap()[0]
                            .uuid()
                            .unwrap();
                        // Whoever read the reply applied the update before it.
                        assert!(store.get("Logical_Switch", &uuid).is_some(), "{name}");
                    }
                })
            })
            .collect();
        for task in tasks {
            tokio::time::timeout(Duration::from_secs(60), task)
                .await
                .expect("a task stalled: a reply was never read")
                .unwrap();
        }
        theirs.await.unwrap();
        until_replicated(&store, "other-199").await;
        assert_eq!(store.len("Logical_Switch"), 8 * 100 + 200);
    });
}
