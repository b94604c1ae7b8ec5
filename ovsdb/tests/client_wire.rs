//! Wire facts of ovsdb-server 3.1 that the client is built on, checked against the real
//! server, plus what the client does with a peer that sends bad bytes.

use std::time::Duration;

use ovn_harness::{Db, OvsdbServer};
use ovsdb::client::{Client, ClientOptions, Error, Event, GaveUp};
use ovsdb::{Atom, Deframer, Message, Operation, Row, Value};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

mod common;
use common::blocking_wait;

const NB: &str = "OVN_Northbound";

fn start_nb(tcp: bool) -> Option<OvsdbServer> {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return None;
    }
    let server = if tcp {
        OvsdbServer::start_tcp(Db::Northbound)
    } else {
        OvsdbServer::start(Db::Northbound)
    };
    Some(server.expect("start ovsdb-server"))
}

fn socket_path(server: &OvsdbServer) -> String {
    server.unix_remote().trim_start_matches("unix:").to_owned()
}

/// Writes `request` on a fresh raw connection and returns the messages received until
/// the server closes the connection or one reply arrives.
async fn raw_exchange(path: &str, request: &str) -> (Vec<Message>, bool) {
    let mut stream = UnixStream::connect(path).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut deframer = Deframer::default();
    let mut buf = vec![0u8; 65536];
    let mut messages = Vec::new();
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("server silent");
        let n = n.unwrap_or(0);
        if n == 0 {
            return (messages, true);
        }
        deframer.push(&buf[..n]);
        while let Some(message) = deframer.next_message().unwrap() {
            messages.push(message);
        }
        if !messages.is_empty() {
            return (messages, false);
        }
    }
}

#[tokio::test]
async fn server_drops_jsonrpc_2_members_and_null_params_but_takes_empty_params() {
    let Some(server) = start_nb(false) else {
        return;
    };
    let path = socket_path(&server);
    let (replies, closed) =
        raw_exchange(&path, r#"{"id":1,"method":"list_dbs","params":[]}"#).await;
    assert!(!closed);
    assert!(
        matches!(&replies[0], Message::Reply { result, .. } if result.get().contains("OVN_Northbound"))
    );
    // What our encoder writes for the same request is byte-identical.
    assert_eq!(
        Message::request(1, "list_dbs", vec![]).to_vec(),
        br#"{"id":1,"method":"list_dbs","params":[]}"#
    );

    let (replies, closed) = raw_exchange(
        &path,
        r#"{"jsonrpc":"2.0","id":1,"method":"list_dbs","params":[]}"#,
    )
    .await;
    assert!(
        closed && replies.is_empty(),
        "a \"jsonrpc\" member must make the server hang up: {replies:?}"
    );
    let (replies, closed) =
        raw_exchange(&path, r#"{"id":1,"method":"list_dbs","params":null}"#).await;
    assert!(
        closed && replies.is_empty(),
        "null params must make the server hang up: {replies:?}"
    );
    let (replies, closed) = raw_exchange(&path, r#"{"id":1,"method":"list_dbs"}"#).await;
    assert!(
        closed && replies.is_empty(),
        "missing params must make the server hang up: {replies:?}"
    );
}

#[tokio::test]
async fn one_element_set_comes_back_as_a_bare_atom() {
    let Some(server) = start_nb(false) else {
        return;
    };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    let port = Row::new()
        .with("name", Atom::from("p"))
        .with("addresses", Value::set(["00:00:00:00:00:01"]));
    let switch_port = ovsdb::NamedUuid::new("p").unwrap();
    let ops = [
        Operation::insert("Logical_Switch_Port", port)
            .with_uuid_name(switch_port.clone())
            .into(),
        Operation::insert(
            "Logical_Switch",
            Row::new().with("ports", Value::set([switch_port])),
        )
        .into(),
    ];
    client.transact(NB, &ops).await.unwrap();
    let raw = client
        .call("transact", vec![json!(NB), json!({"op": "select", "table": "Logical_Switch_Port", "where": [], "columns": ["addresses"]})])
        .await
        .unwrap();
    // addresses is {"type": "string", "min": 0, "max": "unlimited"}, yet one element is bare.
    assert_eq!(raw, json!([{"rows": [{"addresses": "00:00:00:00:00:01"}]}]));
    // Maps are always tagged, even when empty.
    let raw = client
        .call("transact", vec![json!(NB), json!({"op": "select", "table": "Logical_Switch", "where": [], "columns": ["external_ids"]})])
        .await
        .unwrap();
    assert_eq!(raw, json!([{"rows": [{"external_ids": ["map", []]}]}]));
}

#[tokio::test]
async fn server_echo_probe_is_answered_so_an_idle_tcp_session_survives() {
    let Some(server) = start_nb(true) else { return };
    let remote = server.tcp_remote().expect("tcp remote");
    // Our own probes off: only answering the server's echo keeps the session alive.
    let options = ClientOptions::new([remote])
        .unwrap()
        .with_probe_interval(None);
    let client = Client::connect_with(options).await.unwrap();
    let mut events = client.events();
    // The server probes after 5 s of silence and hangs up 5 s later without an answer.
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert!(client.list_dbs().await.is_ok());
    assert!(
        events.try_recv().is_err(),
        "the session must not have been dropped"
    );
}

#[tokio::test]
async fn cancel_is_answered_only_on_db_change_aware_sessions() {
    let Some(server) = start_nb(false) else {
        return;
    };
    let unaware = ClientOptions::new([server.unix_remote()])
        .unwrap()
        .with_db_change_aware(false);
    let unaware = Client::connect_with(unaware).await.unwrap();
    let pending = unaware.transact_request(NB, &blocking_wait());
    unaware.notify("cancel", vec![json!(pending.id())]).unwrap();
    // The server drops the trigger without ever replying.
    let outcome = tokio::time::timeout(Duration::from_millis(1500), pending).await;
    assert!(
        outcome.is_err(),
        "a session that is not db-change-aware gets no reply: {outcome:?}"
    );
    assert!(unaware.list_dbs().await.is_ok());

    let aware = Client::connect(&server.unix_remote()).await.unwrap();
    let pending = aware.transact_request(NB, &blocking_wait());
    aware.notify("cancel", vec![json!(pending.id())]).unwrap();
    match pending.await {
        Err(Error::Rpc { error, .. }) => assert_eq!(error.error, "canceled"),
        other => panic!("expected the \"canceled\" error, got {other:?}"),
    }
    // The client's own cancel resolves the caller's future at once.
    let pending = aware.transact_request(NB, &blocking_wait());
    let id = pending.id();
    let (outcome, canceled) = tokio::join!(pending, aware.cancel(id));
    canceled.unwrap();
    // A transaction given up may have committed: its outcome is unknown.
    assert!(
        matches!(
            outcome,
            Err(Error::OutcomeUnknown {
                why: GaveUp::Canceled,
                ..
            })
        ),
        "{outcome:?} (id {id})"
    );
}

#[tokio::test]
async fn transaction_in_flight_when_the_server_dies_has_unknown_outcome() {
    let Some(mut server) = start_nb(false) else {
        return;
    };
    let options = ClientOptions::new([server.unix_remote()])
        .unwrap()
        .with_connect_timeout(Duration::from_secs(1));
    let client = Client::connect_with(options).await.unwrap();
    let pending = tokio::spawn({
        let client = client.clone();
        async move { client.transact(NB, &blocking_wait()).await }
    });
    // Make sure the request is on the wire before the server goes away.
    client.list_dbs().await.unwrap();
    client.get_schema(NB).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.kill();
    match pending.await.unwrap() {
        Err(Error::OutcomeUnknown { remote, why }) => {
            assert!(remote.starts_with("unix:"));
            assert_eq!(why, GaveUp::ConnectionLost);
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
}

/// A fake server that answers the first request with `reply` bytes.
async fn fake_server(reply: &'static [u8]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake.sock");
    let listener = UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let _ = stream.read(&mut buf).await;
        let _ = stream.write_all(reply).await;
        let _ = stream.shutdown().await;
        // Keep the listener (and later connection attempts) pending.
        let _hold = listener.accept().await;
    });
    (dir, format!("unix:{}", path.display()))
}

#[tokio::test]
async fn bad_bytes_from_the_peer_end_the_session_with_a_typed_reason() {
    let cases: [(&[u8], &str); 4] = [
        (b"{\"id\":1,\"result\":[1,,2],\"error\":null}", "not a valid JSON object"),
        (b"[\"not an object\"]", "unexpected byte"),
        (b"{\"id\":1,\"result\":[\"cut short", "ended in the middle of a message"),
        (b"{\"id\":1,\"result\":[\"01234567890123456789012345678901234567890123456789012345678901234567890123456789\"]}", "exceeds the limit of 64 bytes"),
    ];
    for (reply, reason) in cases {
        let (_dir, remote) = fake_server(reply).await;
        let options = ClientOptions::new([remote])
            .unwrap()
            .with_db_change_aware(false)
            .with_probe_interval(None)
            .with_max_message_len(64);
        let client = Client::connect_with(options).await.unwrap();
        let mut events = client.events();
        match client.list_dbs().await {
            Err(Error::ConnectionLost { method, .. }) => assert_eq!(method, "list_dbs"),
            other => panic!("expected ConnectionLost, got {other:?}"),
        }
        match events.recv().await.unwrap() {
            Event::Disconnected { reason: got, .. } => assert!(got.contains(reason), "{got}"),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test]
async fn our_echo_probe_keeps_a_live_session_and_drops_a_silent_peer() {
    let Some(server) = start_nb(false) else {
        return;
    };
    let probe = Some(Duration::from_millis(200));
    // A live server answers our probes: no disconnect while idle for several intervals.
    let options = ClientOptions::new([server.unix_remote()])
        .unwrap()
        .with_probe_interval(probe);
    let client = Client::connect_with(options).await.unwrap();
    let mut events = client.events();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(
        events.try_recv().is_err(),
        "a live server must not be dropped"
    );
    assert!(client.list_dbs().await.is_ok());

    // A peer that accepts but never answers is dropped after one unanswered probe.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("silent.sock");
    let listener = UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let options = ClientOptions::new([format!("unix:{}", path.display())])
        .unwrap()
        .with_db_change_aware(false)
        .with_probe_interval(probe);
    let silent = Client::connect_with(options).await.unwrap();
    let mut events = silent.events();
    let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("no disconnect");
    match event.unwrap() {
        Event::Disconnected { reason, .. } => {
            assert!(reason.contains("inactivity probe"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}
