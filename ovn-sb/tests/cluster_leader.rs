//! `SbClient` on a three-member Southbound Raft cluster: `connect` and `connect_with`
//! (options naming no database) check `OVN_Southbound` through `_Server` and settle on
//! the leader even when the followers come first in the remote list; `with_client`
//! keeps the choice of the client it is given (leader-only off: the first member,
//! a follower); with the leader and a follower killed, the member left has no
//! majority and a fresh client is refused rather than handed its replica.

use ovn_harness::{Db, RaftCluster};
use ovn_sb::ovsdb::client::{Client, ClientOptions};
use ovn_sb::{Chassis, ClientError, DbError, SbClient, SbError};

fn start_cluster() -> Option<RaftCluster> {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl"]) {
        return None;
    }
    Some(RaftCluster::start(Db::Southbound, 3).expect("start a 3-member SB raft cluster"))
}

fn chassis_names(sb: &SbClient) -> Vec<String> {
    sb.store()
        .rows::<Chassis>()
        .unwrap()
        .into_iter()
        .map(|c| c.row.name)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sb_clients_use_the_leader_by_default_and_refuse_a_member_without_quorum() {
    let Some(mut cluster) = start_cluster() else {
        return;
    };
    let leader = cluster.leader().unwrap();
    let remotes = cluster.remotes();
    // the followers first, the leader last
    let ordered: Vec<String> = (1..=3).map(|k| remotes[(leader + k) % 3].clone()).collect();
    let all = ordered.join(",");
    let first_follower = ordered[0].clone();

    let sb = SbClient::connect(&all).await.unwrap();
    assert_eq!(
        sb.db().client().current_remote(),
        Some(remotes[leader].clone())
    );
    let sb = SbClient::connect_with(ClientOptions::new([all.as_str()]).unwrap())
        .await
        .unwrap();
    assert_eq!(
        sb.db().client().current_remote(),
        Some(remotes[leader].clone())
    );

    // a write through the leader, seen by a client that its options keep on a follower
    let db = format!("--db={}", remotes[leader]);
    ovn_harness::run(
        "ovn-sbctl",
        &[&db, "chassis-add", "ch1", "geneve", "127.0.0.1"],
    )
    .expect("ovn-sbctl chassis-add");
    let options = ClientOptions::new([all.as_str()])
        .unwrap()
        .with_database("OVN_Southbound")
        .with_leader_only(false);
    let client = Client::connect_with(options).await.unwrap();
    let on_follower = SbClient::with_client(client).await.unwrap();
    assert_eq!(
        on_follower.db().client().current_remote(),
        Some(first_follower)
    );
    on_follower
        .db()
        .wait_for::<Chassis>("chassis ch1", std::time::Duration::from_secs(30), |c| {
            c.name == "ch1"
        })
        .await
        .expect("the follower's replica has the chassis");
    assert_eq!(chassis_names(&on_follower), vec!["ch1".to_string()]);
    drop((sb, on_follower));

    // the leader and one follower killed: the survivor has no majority
    let survivor = (leader + 2) % 3;
    cluster.kill(leader);
    cluster.kill((leader + 1) % 3);
    match SbClient::connect(&all).await {
        Err(SbError::Db(DbError::Client(ClientError::NoServer { rejected, .. }))) => {
            let why = rejected
                .iter()
                .find(|r| r.remote == remotes[survivor])
                .expect("the survivor was tried");
            assert!(
                why.reason.contains("leader") || why.reason.contains("majority"),
                "{why}"
            );
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(sb) => panic!(
            "a replica from {:?}, which has no quorum, was handed back",
            sb.db().client().current_remote()
        ),
    }
}
