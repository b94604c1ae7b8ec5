//! Schema compatibility at connect, against a real ovsdb-server whose schema
//! was changed online with `ovsdb-client convert`: a column the server lacks
//! is left out of what is sent, a column it adds is ignored, and a column whose
//! type changed is a clear error.

mod common;

use ovn_nb::*;
use ovsdb::typed::{CompatError, DbError};
use serde_json::{json, Value as Json};

/// Converts the server's database to the vendored schema edited by `edit`.
fn convert(server: &ovn_harness::OvsdbServer, edit: impl FnOnce(&mut Json)) {
    let mut schema: Json = serde_json::from_str(SCHEMA_JSON).unwrap();
    edit(&mut schema);
    schema["version"] = json!("7.99.0");
    let path = server.dir().join("edited.ovsschema");
    std::fs::write(&path, schema.to_string()).unwrap();
    ovn_harness::run(
        "ovsdb-client",
        &["convert", &server.unix_remote(), &path.to_string_lossy()],
    )
    .expect("convert");
}

fn select_acls(remote: &str) -> Vec<Json> {
    let select = json!(["OVN_Northbound", {"op": "select", "table": "ACL", "where": []}]);
    let out = ovn_harness::run("ovsdb-client", &["transact", remote, &select.to_string()])
        .expect("select");
    let reply: Json = serde_json::from_str(&out).unwrap();
    reply[0]["rows"].as_array().unwrap().clone()
}

#[tokio::test]
async fn missing_columns_are_not_sent_and_extra_columns_are_ignored() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    convert(&server, |s| {
        let acl = &mut s["tables"]["ACL"]["columns"];
        acl.as_object_mut().unwrap().remove("label");
        acl["tier"] =
            json!({"type": {"key": {"type": "integer", "minInteger": 0, "maxInteger": 3}}});
    });
    let nb = NbClient::connect(&remote)
        .await
        .expect("connect to the converted server");
    let missing: Vec<(&str, &str)> = nb.db().compat().missing_columns().collect();
    assert_eq!(missing, [("ACL", "label")]);
    assert_eq!(nb.db().compat().extra_column_count(), 1);

    let mut txn = nb.txn();
    txn.ls_add("ls1").unwrap();
    let acl = AclSpec {
        r#match: "ip4".into(),
        priority: 5,
        label: 9,
        action: AclAction::Drop,
        ..Default::default()
    };
    txn.acl_add(&AclTarget::Switch("ls1".into()), acl).unwrap();
    nb.commit(txn)
        .await
        .expect("commit without the missing column");
    // ovn-nbctl refuses a schema without ACL.label, so read with ovsdb-client
    let rows = select_acls(&remote);
    assert_eq!(rows.len(), 1);
    assert!(rows[0].get("label").is_none());
    assert_eq!(rows[0]["tier"], 0);
    assert_eq!(rows[0]["priority"], 5);

    // a row written by another client with the new column set decodes fine
    let uuid = common::atom(&rows[0]["_uuid"]);
    let update = json!(["OVN_Northbound", {"op": "update", "table": "ACL", "where": [["_uuid", "==", ["uuid", uuid]]], "row": {"tier": 2}}]);
    ovn_harness::run("ovsdb-client", &["transact", &remote, &update.to_string()])
        .expect("update tier");
    let ls = nb.by_name::<LogicalSwitch>("ls1").unwrap().unwrap();
    let id = *ls.acls.iter().next().unwrap();
    nb.db().client().echo(vec![]).await.unwrap();
    let acl = nb.store().get(id).unwrap().expect("acl replicated");
    assert_eq!((acl.priority, acl.action), (5, AclAction::Drop));
}

#[tokio::test]
async fn a_changed_column_type_is_a_clear_error() {
    let Some(server) = common::nb_server() else {
        return;
    };
    convert(&server, |s| {
        s["tables"]["Logical_Switch_Port"]["columns"]["tag"] =
            json!({"type": {"key": "string", "min": 0, "max": 1}});
    });
    match NbClient::connect(&server.unix_remote()).await {
        Err(NbError::Db(DbError::Compat(CompatError::TypeMismatch {
            mismatches,
            server_version,
            ..
        }))) => {
            assert_eq!(server_version, "7.99.0");
            assert_eq!(mismatches.len(), 1);
            assert_eq!(
                (mismatches[0].table.as_str(), mismatches[0].column.as_str()),
                ("Logical_Switch_Port", "tag")
            );
            let message = CompatError::TypeMismatch {
                model_version: "7.0.0".into(),
                server_version,
                mismatches,
            }
            .to_string();
            assert!(
                message.contains("column Logical_Switch_Port.tag changed type"),
                "{message}"
            );
        }
        other => panic!("expected a type mismatch, got {other:?}"),
    }
}
