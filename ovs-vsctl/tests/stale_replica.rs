//! No write silently does nothing: two clients on one real Open_vSwitch
//! ovsdb-server; one deletes a bridge while the other, from a replica that still
//! shows it, adds a port to it. The add fails with a typed error naming the
//! bridge, nothing of its transaction is committed, and "if exists" removals stay
//! idempotent.

use std::time::Duration;

use ovn_harness::{Db, OvsdbServer};
use ovs_vsctl::*;

fn server() -> Option<OvsdbServer> {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-vsctl"]) {
        return None;
    }
    Some(OvsdbServer::start(Db::OpenVswitch).expect("start Open_vSwitch ovsdb-server"))
}

fn vsctl(remote: &str, args: &[&str]) -> Vec<String> {
    let db = format!("--db={remote}");
    let mut all = vec![db.as_str(), "--no-wait"];
    all.extend_from_slice(args);
    let out =
        ovn_harness::run("ovs-vsctl", &all).unwrap_or_else(|e| panic!("ovs-vsctl {args:?}: {e}"));
    out.lines().map(str::to_string).collect()
}

/// Two clients on `remote`; the second has replicated bridge `br` with port `port`.
async fn two_clients_seeing(remote: &str, br: &str, port: &str) -> (VsClient, VsClient) {
    let deleter = VsClient::connect(remote).await.expect("connect deleter");
    let mut txn = deleter.txn();
    txn.add_br(br).unwrap();
    txn.add_port(br, port, InterfaceSpec::default()).unwrap();
    deleter.commit(txn).await.expect("create bridge");
    let stale = VsClient::connect(remote)
        .await
        .expect("connect stale writer");
    // the bridge's own internal port plus `port`
    stale
        .db()
        .wait_for::<Bridge>(br, Duration::from_secs(30), |row| {
            row.name == br && row.ports.len() == 2
        })
        .await
        .expect("second replica shows the bridge");
    (deleter, stale)
}

async fn delete_bridge(vs: &VsClient, br: &str) {
    let mut txn = vs.txn();
    txn.del_br(br).unwrap();
    vs.commit(txn).await.expect("delete bridge");
}

fn assert_row_gone(result: Result<(), VsError>, table: &str, name: &str) {
    match result {
        Err(VsError::RowGone {
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
async fn port_added_to_a_bridge_deleted_meanwhile_is_a_typed_error_and_commits_nothing() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    let (deleter, stale) = two_clients_seeing(&remote, "br1", "p0").await;

    let mut txn = stale.txn();
    txn.add_br("br-new").unwrap();
    txn.add_port("br1", "p1", InterfaceSpec::default()).unwrap();
    delete_bridge(&deleter, "br1").await;
    assert_row_gone(stale.commit(txn).await, Bridge::TABLE_NAME, "br1");

    assert!(vsctl(&remote, &["list-br"]).is_empty());
    assert!(
        vsctl(&remote, &["--columns=name", "--bare", "list", "Port"])
            .iter()
            .all(|line| line.is_empty())
    );
}

#[tokio::test]
async fn setting_an_interface_deleted_meanwhile_is_a_typed_error() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    let (deleter, stale) = two_clients_seeing(&remote, "br1", "p0").await;

    let mut txn = stale.txn();
    let iface_id = [("iface-id".to_string(), "pod1".to_string())].into();
    txn.set_interface_external_ids("p0", iface_id).unwrap();
    delete_bridge(&deleter, "br1").await;
    assert_row_gone(stale.commit(txn).await, Interface::TABLE_NAME, "p0");
}

#[tokio::test]
async fn if_exists_removals_of_rows_deleted_meanwhile_still_commit() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    let (deleter, stale) = two_clients_seeing(&remote, "br1", "p0").await;

    let mut txn = stale.txn();
    txn.if_exists().del_port("p0").unwrap();
    txn.if_exists().del_br("br1").unwrap();
    txn.add_br("br2").unwrap();
    delete_bridge(&deleter, "br1").await;
    stale
        .commit(txn)
        .await
        .expect("removals of gone rows are no-ops");

    assert_eq!(vsctl(&remote, &["list-br"]), ["br2"]);
}

#[tokio::test]
async fn bridge_name_taken_meanwhile_is_already_exists_and_commits_nothing() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    let first = VsClient::connect(&remote).await.expect("connect first");
    let mut init = first.txn();
    init.root().unwrap();
    first.commit(init).await.expect("create the root row");
    let second = VsClient::connect(&remote).await.expect("connect second");
    second
        .db()
        .wait_for::<OpenVSwitch>("root row", Duration::from_secs(30), |_| true)
        .await
        .expect("second replica shows the root row");

    let mut late = second.txn();
    late.add_br("br-late").unwrap();
    late.add_br("br1").unwrap();
    let mut early = first.txn();
    early.add_br("br1").unwrap();
    first.commit(early).await.expect("first creates br1");

    match second.commit(late).await {
        Err(VsError::AlreadyExists { table, name }) => {
            assert_eq!((table, name.as_str()), (Bridge::TABLE_NAME, "br1"));
        }
        other => panic!("expected br1 to already exist, got {other:?}"),
    }
    assert_eq!(vsctl(&remote, &["list-br"]), ["br1"]);
}

#[tokio::test]
async fn root_row_created_meanwhile_is_already_exists() {
    let Some(server) = server() else { return };
    let remote = server.unix_remote();
    let first = VsClient::connect(&remote).await.expect("connect first");
    let second = VsClient::connect(&remote).await.expect("connect second");

    let mut late = second.txn();
    late.add_br("br-late").unwrap();
    let mut early = first.txn();
    early.add_br("br1").unwrap();
    first
        .commit(early)
        .await
        .expect("first creates the root and br1");

    match second.commit(late).await {
        Err(VsError::AlreadyExists { table, name }) => {
            assert_eq!((table, name.as_str()), (OpenVSwitch::TABLE_NAME, "."));
        }
        other => panic!("expected the root row to already exist, got {other:?}"),
    }
    assert_eq!(vsctl(&remote, &["list-br"]), ["br1"]);
}

#[test]
fn outcome_unknown_is_asked_directly_of_the_typed_error() {
    let lost = VsError::from(ClientError::OutcomeUnknown {
        remote: "unix:/nowhere".to_string(),
        why: ovs_vsctl::ovsdb::client::GaveUp::ConnectionLost,
    });
    assert!(lost.is_outcome_unknown());
    assert!(!VsError::from(ClientError::Closed).is_outcome_unknown());
}
