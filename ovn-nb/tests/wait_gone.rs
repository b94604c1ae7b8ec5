//! `NbClient::wait_gone`: waits until a row is gone from the replica (deleted by another
//! client), and times out with a typed error naming what it waited for.

use std::time::Duration;

use ovn_nb::{LogicalSwitch, NbClient, NbError};
use ovsdb::typed::DbError;

mod common;

#[tokio::test]
async fn waits_until_a_row_deleted_elsewhere_is_gone() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let watcher = NbClient::connect(&server.unix_remote()).await.unwrap();
    let actor = NbClient::connect(&server.unix_remote()).await.unwrap();
    let mut txn = actor.txn();
    txn.ls_add("doomed").unwrap();
    txn.ls_add("kept").unwrap();
    actor.commit(txn).await.unwrap();
    watcher
        .wait_for::<LogicalSwitch>("doomed", Duration::from_secs(10), |ls| ls.name == "doomed")
        .await
        .unwrap();

    // Still there: the wait ends in a typed timeout naming what it waited for.
    match watcher
        .wait_gone::<LogicalSwitch>("kept gone", Duration::from_millis(200), |ls| {
            ls.name == "kept"
        })
        .await
    {
        Err(NbError::Db(DbError::Timeout(_, what))) => assert_eq!(what, "kept gone"),
        other => panic!("expected a timeout, got {other:?}"),
    }

    let gone = tokio::spawn(async move {
        watcher
            .wait_gone::<LogicalSwitch>("doomed gone", Duration::from_secs(10), |ls| {
                ls.name == "doomed"
            })
            .await
            .map(|()| watcher)
    });
    let mut txn = actor.txn();
    txn.ls_del("doomed").unwrap();
    actor.commit(txn).await.unwrap();
    let watcher = gone.await.unwrap().unwrap();
    assert!(watcher
        .by_name::<LogicalSwitch>("doomed")
        .unwrap()
        .is_none());
    assert!(watcher.by_name::<LogicalSwitch>("kept").unwrap().is_some());
}
