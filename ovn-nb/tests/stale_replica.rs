//! No write silently does nothing: two clients on one real NB ovsdb-server; one
//! deletes a row while the other, from a replica that still shows it, writes to
//! it. The write fails with a typed error naming the row and nothing of its
//! transaction is committed; "if exists" removals stay idempotent.

mod common;

use std::time::Duration;

use ovn_nb::*;

/// Two clients on `remote`; the second has replicated switch `ls` (and its ports).
async fn two_clients_seeing(remote: &str, ls: &str, ports: &[&str]) -> (NbClient, NbClient) {
    let deleter = NbClient::connect(remote).await.expect("connect deleter");
    let mut txn = deleter.txn();
    txn.ls_add(ls).unwrap();
    for port in ports {
        txn.lsp_add(ls, port).unwrap();
    }
    deleter.commit(txn).await.expect("create switch");
    let stale = NbClient::connect(remote)
        .await
        .expect("connect stale writer");
    let wanted = ports.len();
    stale
        .wait_for::<LogicalSwitch>(ls, Duration::from_secs(30), |row| {
            row.name == ls && row.ports.len() == wanted
        })
        .await
        .expect("second replica shows the switch");
    (deleter, stale)
}

async fn delete_switch(nb: &NbClient, ls: &str) {
    let mut txn = nb.txn();
    txn.ls_del(ls).unwrap();
    nb.commit(txn).await.expect("delete switch");
}

fn names(remote: &str, table: &str) -> Vec<String> {
    let mut names: Vec<String> = common::nbctl_rows(remote, table)
        .iter()
        .map(|row| row["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

fn assert_row_gone(result: Result<impl std::fmt::Debug, NbError>, table: &str, name: &str) {
    match result {
        Err(NbError::RowGone {
            table: gone_table,
            name: gone_name,
            ..
        }) => {
            assert_eq!(gone_table, table);
            assert_eq!(gone_name.as_deref(), Some(name));
        }
        other => panic!("expected {table} {name:?} to be reported gone, got {other:?}"),
    }
}

#[tokio::test]
async fn port_added_to_a_switch_deleted_meanwhile_is_a_typed_error_and_commits_nothing() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let (deleter, stale) = two_clients_seeing(&remote, "ls1", &[]).await;
    let mut keep = deleter.txn();
    keep.ls_add("kept").unwrap();
    deleter.commit(keep).await.unwrap();

    let mut txn = stale.txn();
    txn.ls_add("ls-new").unwrap();
    txn.lsp_add("ls1", "p1").unwrap();
    delete_switch(&deleter, "ls1").await;
    assert_row_gone(stale.commit(txn).await, LogicalSwitch::TABLE_NAME, "ls1");

    assert_eq!(names(&remote, "Logical_Switch"), ["kept"]);
    assert!(names(&remote, "Logical_Switch_Port").is_empty());
}

#[tokio::test]
async fn setting_columns_of_a_port_deleted_meanwhile_is_a_typed_error() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let (deleter, stale) = two_clients_seeing(&remote, "ls1", &["p1"]).await;

    let mut set_addresses = stale.txn();
    set_addresses
        .lsp_set_addresses("p1", ["00:00:00:00:00:01 10.0.0.2"])
        .unwrap();
    let mut set_keys = stale.txn();
    set_keys
        .ls_set_other_config("ls1", [("subnet".to_string(), "10.0.0.0/24".to_string())])
        .unwrap();
    delete_switch(&deleter, "ls1").await;

    assert_row_gone(
        stale.commit(set_addresses).await,
        LogicalSwitchPort::TABLE_NAME,
        "p1",
    );
    assert_row_gone(
        stale.commit(set_keys).await,
        LogicalSwitch::TABLE_NAME,
        "ls1",
    );
    assert!(names(&remote, "Logical_Switch").is_empty());
}

#[tokio::test]
async fn if_exists_removals_of_rows_deleted_meanwhile_still_commit() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let (deleter, stale) = two_clients_seeing(&remote, "ls1", &["p1"]).await;

    let mut txn = stale.txn();
    txn.if_exists().lsp_del("p1").unwrap();
    txn.if_exists().ls_del("ls1").unwrap();
    txn.ls_add("ls2").unwrap();
    delete_switch(&deleter, "ls1").await;
    stale
        .commit(txn)
        .await
        .expect("removals of gone rows are no-ops");

    assert_eq!(names(&remote, "Logical_Switch"), ["ls2"]);
    assert!(names(&remote, "Logical_Switch_Port").is_empty());
}

#[tokio::test]
async fn switch_name_taken_meanwhile_is_already_exists_and_commits_nothing() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let first = NbClient::connect(&remote).await.expect("connect first");
    let second = NbClient::connect(&remote).await.expect("connect second");

    let mut late = second.txn();
    late.ls_add("ls1").unwrap();
    late.lsp_add("ls1", "p-late").unwrap();
    let mut early = first.txn();
    early.ls_add("ls1").unwrap();
    first.commit(early).await.expect("first creates ls1");

    match second.commit(late).await {
        Err(NbError::AlreadyExists { table, name }) => {
            assert_eq!((table, name.as_str()), (LogicalSwitch::TABLE_NAME, "ls1"));
        }
        other => panic!("expected ls1 to already exist, got {other:?}"),
    }
    assert_eq!(names(&remote, "Logical_Switch"), ["ls1"]);
    assert!(names(&remote, "Logical_Switch_Port").is_empty());
}

#[tokio::test]
async fn typed_layer_reports_a_failed_row_exists_guard_as_row_gone() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let (deleter, stale) = two_clients_seeing(&remote, "ls1", &[]).await;
    let ls1 = stale.by_name::<LogicalSwitch>("ls1").unwrap().unwrap().id;
    delete_switch(&deleter, "ls1").await;

    let set_subnet = ovn_nb::ovsdb::typed::update(LogicalSwitch::ROW_UUID.eq(ls1))
        .set(LogicalSwitch::OTHER_CONFIG.to([("subnet".to_string(), "10.0.0.0/24".to_string())]));
    let ops = vec![
        ovn_nb::ovsdb::typed::row_exists(ls1),
        TypedOp::from(set_subnet),
    ];
    match stale.db().transact(ops).await {
        Err(DbError::RowGone { table, uuid, index }) => {
            assert_eq!(
                (table, uuid, index),
                (LogicalSwitch::TABLE_NAME, ls1.uuid(), 0)
            );
        }
        other => panic!("expected the guard to report ls1 gone, got {other:?}"),
    }
}

#[test]
fn outcome_unknown_is_asked_directly_of_the_typed_error() {
    let lost = NbError::from(ClientError::OutcomeUnknown {
        remote: "unix:/nowhere".to_string(),
        why: ovn_nb::ovsdb::client::GaveUp::ConnectionLost,
    });
    assert!(lost.is_outcome_unknown());
    let refused = NbError::from(ClientError::Closed);
    assert!(!refused.is_outcome_unknown());
}
