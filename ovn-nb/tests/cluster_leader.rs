//! `NbClient::connect` on a three-member Raft cluster uses the leader only: with the
//! leader and a follower killed, the member left has no majority and a fresh client must
//! not hand back its (possibly stale) replica; once a member is back, the client settles
//! on the new leader with a replica equal to the leader's contents.

use std::collections::BTreeSet;
use std::time::Duration;

use ovn_harness::{Db, RaftCluster};
use ovn_nb::{LogicalSwitch, NbClient, NbError};
use ovsdb::client::{Client, ClientOptions, Error as ClientError};
use ovsdb::typed::DbError;
use ovsdb::Operation;

fn start_cluster() -> Option<RaftCluster> {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl"]) {
        return None;
    }
    Some(RaftCluster::start(Db::Northbound, 3).expect("start a 3-member NB raft cluster"))
}

/// Switch names as the server at `remote` has them, read without any `_Server` check.
async fn names_on(remote: &str) -> BTreeSet<String> {
    let client = Client::connect(remote).await.unwrap();
    let rows = client
        .transact(
            "OVN_Northbound",
            &[Operation::select("Logical_Switch").into()],
        )
        .await
        .unwrap();
    rows[0]
        .rows()
        .unwrap()
        .iter()
        .map(|r| r.get("name").and_then(|v| v.as_str()).unwrap().to_owned())
        .collect()
}

fn replica_names(nb: &NbClient) -> BTreeSet<String> {
    nb.store()
        .rows::<LogicalSwitch>()
        .unwrap()
        .into_iter()
        .map(|ls| ls.row.name)
        .collect()
}

async fn add_switch(nb: &NbClient, name: &str) {
    let mut txn = nb.txn();
    txn.ls_add(name).unwrap();
    nb.commit(txn).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_without_quorum_is_refused_and_the_new_leader_is_found() {
    let Some(mut cluster) = start_cluster() else {
        return;
    };
    let all = cluster.remotes().join(",");
    let leader = cluster.leader().unwrap();
    {
        let nb = NbClient::connect(&all).await.unwrap();
        assert_eq!(
            nb.db().client().current_remote(),
            Some(cluster.remotes()[leader].clone()),
            "the default connect settles on the leader"
        );
        for i in 0..5 {
            add_switch(&nb, &format!("ls{i}")).await;
        }
    }

    // Kill the leader and one follower (SIGKILL by pid): the survivor has no majority.
    let follower = (leader + 1) % 3;
    let survivor = (leader + 2) % 3;
    cluster.kill(leader);
    cluster.kill(follower);
    match NbClient::connect(&all).await {
        Err(NbError::Db(DbError::Client(ClientError::NoServer { rejected, .. }))) => {
            let why = &rejected[survivor];
            assert_eq!(why.remote, cluster.remotes()[survivor]);
            assert!(
                why.reason.contains("leader") || why.reason.contains("majority"),
                "{why}"
            );
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(nb) => panic!(
            "a replica from {:?}, which has no quorum, was handed back",
            nb.db().client().current_remote()
        ),
    }

    // A client waiting for a usable server gets one once a majority is back.
    let options = ClientOptions::new([all.as_str()])
        .unwrap()
        .with_backoff(Duration::from_millis(50), Duration::from_millis(500))
        .with_connect_timeout(Duration::from_secs(60));
    let waiting = tokio::spawn(NbClient::connect_with(options));
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.restart(follower).unwrap();
    let nb = waiting.await.unwrap().unwrap();
    let new_leader = cluster.wait_leader().unwrap();
    let leader_remote = cluster.remotes()[new_leader].clone();
    assert_eq!(
        nb.db().client().current_remote(),
        Some(leader_remote.clone())
    );
    let expected = names_on(&leader_remote).await;
    assert_eq!(expected.len(), 5);
    assert_eq!(replica_names(&nb), expected);
    // Writes go through (a write through the cut-off member used to hang).
    add_switch(&nb, "after").await;
    assert!(replica_names(&nb).contains("after"));
}
