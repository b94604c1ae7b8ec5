//! A replica that diverged from the server heals, loudly: a scripted server sends an
//! update for a row the client never saw; the client forgets its transaction id, reloads
//! the monitor from scratch on the same connection, ends with the server's true content
//! and reports [`Event::Resynced`].

use std::time::Duration;

use ovsdb::client::{Client, Event, MonitorRequest};
use ovsdb::{Deframer, Message, Uuid};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

const ZERO: &str = "00000000-0000-0000-0000-000000000000";
const ROW_A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const ROW_X: &str = "aaaaaaaa-0000-4000-8000-000000000002";
const TXN_1: &str = "11111111-0000-4000-8000-000000000001";
const TXN_2: &str = "11111111-0000-4000-8000-000000000002";
const TXN_3: &str = "11111111-0000-4000-8000-000000000003";

fn schema() -> Value {
    json!({"name": "Toy", "version": "1.0.0", "tables": {
        "T": {"columns": {"name": {"type": "string"}}}}})
}

/// One accepted connection, driven by the test script.
struct Scripted {
    stream: UnixStream,
    deframer: Deframer,
}

impl Scripted {
    /// The next request (answering `echo` probes on the way): `(id, method, params)`.
    async fn request(&mut self) -> (Value, String, Value) {
        loop {
            while let Some(message) = self.deframer.next_message().unwrap() {
                match message {
                    Message::Request { id, method, params } if method == "echo" => {
                        let params: Value = serde_json::from_str(params.get()).unwrap();
                        self.reply(id, params).await;
                    }
                    Message::Request { id, method, params } => {
                        return (id, method, serde_json::from_str(params.get()).unwrap());
                    }
                    _ => {}
                }
            }
            let mut buf = [0u8; 65536];
            let n = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut buf))
                .await
                .expect("the client sent nothing more")
                .unwrap();
            assert!(n > 0, "the client closed the connection");
            self.deframer.push(&buf[..n]);
        }
    }

    /// The next request, which must be `method`.
    async fn expect(&mut self, method: &str) -> (Value, Value) {
        let (id, got, params) = self.request().await;
        assert_eq!(got, method, "params {params}");
        (id, params)
    }

    async fn reply(&mut self, id: Value, result: Value) {
        let text = json!({"id": id, "result": result, "error": null}).to_string();
        self.stream.write_all(text.as_bytes()).await.unwrap();
    }

    async fn notify(&mut self, method: &str, params: Value) {
        let text = json!({"id": null, "method": method, "params": params}).to_string();
        self.stream.write_all(text.as_bytes()).await.unwrap();
    }
}

#[tokio::test]
async fn an_update_for_an_unknown_row_reloads_the_monitor_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scripted.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut peer = Scripted {
            stream,
            deframer: Deframer::default(),
        };
        let (id, _) = peer.expect("set_db_change_aware").await;
        peer.reply(id, json!({})).await;
        let (id, _) = peer.expect("get_schema").await;
        peer.reply(id, schema()).await;
        let (id, params) = peer.expect("monitor_cond_since").await;
        let monitor = params[1].clone();
        peer.reply(
            id,
            json!([false, TXN_1, {"T": {ROW_A: {"initial": {"name": "a"}}}}]),
        )
        .await;
        // A row the client never saw: the update cannot apply.
        peer.notify(
            "update3",
            json!([monitor, TXN_2, {"T": {ROW_X: {"modify": {"name": "x"}}}}]),
        )
        .await;
        let (id, params) = peer.expect("monitor_cancel").await;
        assert_eq!(params, json!([monitor]));
        peer.reply(id, json!({})).await;
        let (id, params) = peer.expect("monitor_cond_since").await;
        assert_eq!(params[1], monitor);
        assert_eq!(
            params[3],
            json!(ZERO),
            "the transaction id must be forgotten"
        );
        peer.reply(
            id,
            json!([false, TXN_3, {"T": {
                ROW_A: {"initial": {"name": "a"}},
                ROW_X: {"initial": {"name": "x"}}}}]),
        )
        .await;
        peer
    });

    let client = Client::connect(&format!("unix:{}", path.display()))
        .await
        .unwrap();
    let mut events = client.events();
    let monitor = client
        .monitor("Toy", vec![MonitorRequest::table("T")])
        .await
        .unwrap();
    let resynced = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match events.recv().await.unwrap() {
                Event::Resynced { monitor, reason } => return (monitor, reason),
                Event::Disconnected { reason, .. } => panic!("the connection ended: {reason}"),
                _ => {}
            }
        }
    })
    .await
    .expect("no Resynced event");
    assert_eq!(resynced.0, monitor.id().unwrap());
    assert!(resynced.1.contains("update3"), "{}", resynced.1);
    let _peer = server.await.unwrap();

    let store = monitor.store();
    let mut names: Vec<(Uuid, String)> = store
        .rows("T")
        .into_iter()
        .map(|(uuid, row)| (uuid, row.get("name").unwrap().as_str().unwrap().to_owned()))
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            (ROW_A.parse().unwrap(), "a".to_owned()),
            (ROW_X.parse().unwrap(), "x".to_owned())
        ]
    );
    assert_eq!(monitor.last_txn_id(), Some(TXN_3.parse().unwrap()));
    assert_eq!(monitor.full_loads(), 2);
    assert_eq!(
        client.current_remote(),
        Some(format!("unix:{}", path.display()))
    );
}
