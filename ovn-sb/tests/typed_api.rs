//! Ordinary use of `ovn-sb` needs only `ovn-sb`: the types its API returns
//! (`Stored`, `RowId`, `TypedStore`, the errors) are re-exported, and whether a
//! transaction's outcome is unknown is asked directly of `SbError`.

use std::time::Duration;

use ovn_harness::{Db, OvsdbServer};
use ovn_sb::{Chassis, ClientError, RowId, SbClient, SbError, Stored, TypedStore};

#[tokio::test]
async fn chassis_added_with_ovn_sbctl_reads_back_through_re_exported_types() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovn-sbctl"]) {
        return;
    }
    let server = OvsdbServer::start(Db::Southbound).expect("start SB ovsdb-server");
    let remote = server.unix_remote();
    let sb = SbClient::connect(&remote).await.expect("connect");
    let db = format!("--db={remote}");
    ovn_harness::run(
        "ovn-sbctl",
        &[&db, "chassis-add", "ch1", "geneve", "127.0.0.1"],
    )
    .expect("ovn-sbctl chassis-add");

    let chassis: Stored<Chassis> = sb
        .db()
        .wait_for::<Chassis>("chassis ch1", Duration::from_secs(30), |c| c.name == "ch1")
        .await
        .expect("chassis replicated");
    let id: RowId<Chassis> = chassis.id;
    let store: &TypedStore = sb.store();
    let row = store.get(id).expect("decodes").expect("replicated");
    assert_eq!(row.hostname, "");
    let encaps = sb.encaps("ch1").expect("encaps");
    assert_eq!(encaps.len(), 1);
    assert_eq!(encaps[0].ip, "127.0.0.1");
    assert_eq!(row.encaps, [encaps[0].id].into());
}

#[test]
fn outcome_unknown_is_asked_directly_of_the_typed_error() {
    let lost = SbError::from(ClientError::OutcomeUnknown {
        remote: "unix:/nowhere".to_string(),
        why: ovn_sb::ovsdb::client::GaveUp::ConnectionLost,
    });
    assert!(lost.is_outcome_unknown());
    assert!(!SbError::from(ClientError::Closed).is_outcome_unknown());
}
