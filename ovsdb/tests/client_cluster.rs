//! A three-member Raft cluster of OVN_Northbound on 127.0.0.1 (free ports): the client
//! finds the leader through `_Server.Database`, survives the leader being killed in the
//! middle of a stream of transactions without losing or duplicating any it reported
//! committed, and resumes its monitor with `monitor_cond_since` (a delta, not a full
//! download).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use ovn_harness::{Db, RaftCluster};
use ovsdb::client::{Client, ClientOptions, Error, MonitorRequest};
use ovsdb::{Atom, Condition, Operation, Row, Uuid};

const NB: &str = "OVN_Northbound";

fn start_cluster() -> Option<RaftCluster> {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl"]) {
        return None;
    }
    Some(RaftCluster::start(Db::Northbound, 3).expect("start a 3-member raft cluster"))
}

/// What `_Server.Database` of the connected server says about NB: (leader, model).
async fn server_role(client: &Client) -> (bool, String) {
    let select =
        Operation::select("Database").with_condition(Condition::eq("name", Atom::from(NB)));
    let rows = client.transact("_Server", &[select.into()]).await.unwrap();
    let row = &rows[0].rows().unwrap()[0];
    let leader = row.get("leader").and_then(|v| v.as_bool()).unwrap();
    let model = row
        .get("model")
        .and_then(|v| v.as_str())
        .unwrap()
        .to_owned();
    (leader, model)
}

async fn all_switches(client: &Client) -> HashMap<Uuid, String> {
    let rows = client
        .transact(NB, &[Operation::select("Logical_Switch").into()])
        .await
        .unwrap();
    rows[0]
        .rows()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.uuid().unwrap(),
                r.get("name").and_then(|v| v.as_str()).unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_leader_loses_and_duplicates_nothing_and_resumes_by_delta() {
    let Some(mut cluster) = start_cluster() else {
        return;
    };
    let leader = cluster.leader().unwrap();
    // Put a follower first so the client has to skip it.
    let mut remotes = cluster.remotes();
    let n = remotes.len();
    remotes.rotate_left((leader + 1) % n);
    let options = ClientOptions::new(&remotes)
        .unwrap()
        .with_database(NB)
        .with_backoff(Duration::from_millis(50), Duration::from_millis(500))
        .with_connect_timeout(Duration::from_secs(10));
    let client = Client::connect_with(options).await.unwrap();
    assert_eq!(server_role(&client).await, (true, "clustered".to_owned()));
    assert_eq!(
        client.current_remote(),
        Some(cluster.remotes()[leader].clone())
    );

    let monitor = client
        .monitor(NB, vec![MonitorRequest::table("Logical_Switch")])
        .await
        .unwrap();
    let store = monitor.store();
    assert_ne!(
        monitor.last_txn_id(),
        Some(Uuid::NIL),
        "a clustered server gives real transaction ids"
    );

    let writer = tokio::spawn({
        let client = client.clone();
        async move {
            let (mut committed, mut unknown, mut failed) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..300 {
                let name = format!("t{i}");
                let op = Operation::insert(
                    "Logical_Switch",
                    Row::new().with("name", Atom::from(name.as_str())),
                );
                match client.transact(NB, &[op.into()]).await {
                    Ok(_) => committed.push(name),
                    Err(Error::OutcomeUnknown { .. }) => unknown.push(name),
                    Err(e) => failed.push((name, e.to_string())),
                }
            }
            (committed, unknown, failed)
        }
    });
    // Let the stream get going, then kill the leader by pid.
    while store.len("Logical_Switch") < 60 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(cluster.pid(leader).is_some());
    cluster.kill(leader); // SIGKILL by pid
    let (committed, unknown, failed) = writer.await.unwrap();
    assert!(
        committed.len() >= 250,
        "{} committed, unknown {unknown:?}, failed {failed:?}",
        committed.len()
    );

    let fresh = all_switches(&client).await;
    let mut seen = HashSet::new();
    for name in fresh.values() {
        assert!(seen.insert(name.clone()), "{name} is in the database twice");
    }
    for name in &committed {
        assert!(
            seen.contains(name),
            "{name} was reported committed but is missing"
        );
    }
    for (name, _) in &failed {
        assert!(
            !seen.contains(name),
            "{name} was reported failed but is present"
        );
    }
    // Now on the new leader, whose replica equals a fresh read.
    assert!(server_role(&client).await.0);
    let cached: HashMap<Uuid, String> = store
        .rows("Logical_Switch")
        .into_iter()
        .map(|(uuid, row)| {
            (
                uuid,
                row.get("name").and_then(|v| v.as_str()).unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(cached, fresh);
    // The monitor resumed with monitor_cond_since found=true: only the first load was full.
    assert_eq!(monitor.full_loads(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_are_used_only_when_allowed() {
    let Some(cluster) = start_cluster() else {
        return;
    };
    let leader = cluster.leader().unwrap();
    let follower = cluster.remotes()[(leader + 1) % 3].clone();

    let strict = ClientOptions::new([follower.as_str()])
        .unwrap()
        .with_database(NB)
        .with_connect_timeout(Duration::from_millis(500));
    match Client::connect_with(strict).await {
        Err(Error::NoServer { last_reason, .. }) => {
            assert!(last_reason.contains("not the leader"), "{last_reason}")
        }
        other => panic!("a follower must be refused in leader-only mode: {other:?}"),
    }

    let relaxed = ClientOptions::new([follower.as_str()])
        .unwrap()
        .with_database(NB)
        .with_leader_only(false);
    let client = Client::connect_with(relaxed).await.unwrap();
    assert_eq!(server_role(&client).await, (false, "clustered".to_owned()));
    let monitor = client
        .monitor(NB, vec![MonitorRequest::table("Logical_Switch")])
        .await
        .unwrap();
    let op = Operation::insert(
        "Logical_Switch",
        Row::new().with("name", Atom::from("via-follower")),
    );
    let uuid = client.transact(NB, &[op.into()]).await.unwrap()[0]
        .uuid()
        .unwrap();
    assert!(monitor.store().get("Logical_Switch", &uuid).is_some());
}
