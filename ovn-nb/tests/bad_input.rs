//! Bad input is a typed error and nothing is written: unknown table or column,
//! wrong type, an enum value outside the schema, a dangling reference, and the
//! idempotency contract (`may_exist` / `if_exists`).

mod common;

use ovn_nb::*;
use ovsdb::operation::TransactErrorKind;
use ovsdb::schema::ValidationError;
use ovsdb::typed::{DbError, RowId, TypedOp};
use ovsdb::value::{Row, Uuid, Value};

/// Every table's row count as `ovn-nbctl` sees it.
fn snapshot(remote: &str) -> Vec<(String, usize)> {
    [
        "Logical_Switch",
        "Logical_Switch_Port",
        "ACL",
        "Logical_Router",
        "DHCP_Options",
    ]
    .iter()
    .map(|t| (t.to_string(), common::nbctl_rows(remote, t).len()))
    .collect()
}

async fn expect_invalid(nb: &NbClient, op: TypedOp) -> ValidationError {
    match nb.db().transact(vec![op]).await {
        Err(DbError::Invalid { index: 0, error }) => *error,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[tokio::test]
async fn schema_violations_are_typed_errors_and_write_nothing() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let nb = NbClient::connect(&remote).await.expect("connect");
    let mut txn = nb.txn();
    txn.ls_add("ls1").unwrap();
    nb.commit(txn).await.unwrap();
    let before = snapshot(&remote);

    let unknown_table = TypedOp::Insert {
        table: "No_Such_Table",
        uuid: Uuid::new_random(),
        row: Row::new(),
    };
    assert!(
        matches!(expect_invalid(&nb, unknown_table).await, ValidationError::UnknownTable { table } if table == "No_Such_Table")
    );

    let ls = nb.by_name::<LogicalSwitch>("ls1").unwrap().unwrap().id;
    let unknown_column = TypedOp::Update {
        table: "Logical_Switch",
        clauses: LogicalSwitch::ROW_UUID.eq(ls).into_clauses(),
        row: Row::new().with("no_such_column", "x"),
    };
    assert!(
        matches!(expect_invalid(&nb, unknown_column).await, ValidationError::UnknownColumn { column, .. } if column == "no_such_column")
    );

    let wrong_type = TypedOp::Update {
        table: "Logical_Switch",
        clauses: LogicalSwitch::ROW_UUID.eq(ls).into_clauses(),
        row: Row::new().with("name", Value::scalar(42i64)),
    };
    assert!(
        matches!(expect_invalid(&nb, wrong_type).await, ValidationError::InvalidValue { column, .. } if column == "name")
    );

    // an enum value outside the schema, through the typed API's catch-all
    let mut txn = nb.txn();
    let acl = AclSpec {
        action: AclAction::Other("permit-everything".into()),
        r#match: "ip4".into(),
        ..Default::default()
    };
    txn.acl_add(&AclTarget::Switch("ls1".into()), acl).unwrap();
    match nb.commit(txn).await {
        Err(NbError::Db(DbError::Invalid { error, .. })) => match *error {
            ValidationError::InvalidValue { table, column, .. } => {
                assert_eq!((table.as_str(), column.as_str()), ("ACL", "action"))
            }
            other => panic!("expected an invalid value, got {other}"),
        },
        other => panic!("expected an enum violation, got {other:?}"),
    }

    // a dangling reference: caught by the server, the whole transaction fails
    let mut txn = nb.txn();
    txn.ls_add("ls2").unwrap();
    txn.lsp_add("ls1", "p1").unwrap();
    // Logical_Switch.acls is a strong reference (a weak one would just be dropped)
    let dangling: RowId<Acl> = RowId::random();
    txn.push(
        ovsdb::typed::mutate(LogicalSwitch::ROW_UUID.eq(ls))
            .with([LogicalSwitch::ACLS.insert([dangling])]),
    );
    match nb.commit(txn).await {
        Err(NbError::Db(DbError::Client(ovsdb::client::Error::Transact(e)))) => {
            assert_eq!(e.kind, TransactErrorKind::ReferentialIntegrity, "{e}");
        }
        other => panic!("expected a referential integrity violation, got {other:?}"),
    }
    assert_eq!(snapshot(&remote), before, "nothing was written");
    assert!(nb.by_name::<LogicalSwitch>("ls2").unwrap().is_none());
}

#[tokio::test]
async fn may_exist_and_if_exists_make_commands_idempotent() {
    let Some(server) = common::nb_server() else {
        return;
    };
    let remote = server.unix_remote();
    let nb = NbClient::connect(&remote).await.expect("connect");
    for _ in 0..2 {
        let mut txn = nb.txn();
        txn.may_exist().ls_add("ls1").unwrap();
        txn.may_exist().lsp_add("ls1", "p1").unwrap();
        txn.may_exist().lr_add("lr1").unwrap();
        txn.may_exist().pg_add("pg1", &["p1"]).unwrap();
        txn.may_exist()
            .address_set_add("as1", ["10.0.0.1"])
            .unwrap();
        let acl = AclSpec {
            r#match: "ip4".into(),
            priority: 10,
            ..Default::default()
        };
        txn.may_exist()
            .acl_add(&AclTarget::PortGroup("pg1".into()), acl)
            .unwrap();
        let route = RouteSpec {
            ip_prefix: "0.0.0.0/0".into(),
            nexthop: "10.0.0.254".into(),
            ..Default::default()
        };
        txn.may_exist().lr_route_add("lr1", route).unwrap();
        nb.commit(txn).await.unwrap();
    }
    assert_eq!(common::nbctl_rows(&remote, "Logical_Switch").len(), 1);
    assert_eq!(common::nbctl_rows(&remote, "Logical_Switch_Port").len(), 1);
    assert_eq!(common::nbctl_rows(&remote, "ACL").len(), 1);
    assert_eq!(
        common::nbctl_rows(&remote, "Logical_Router_Static_Route").len(),
        1
    );

    let mut txn = nb.txn();
    assert!(matches!(
        txn.ls_add("ls1"),
        Err(NbError::AlreadyExists {
            table: "Logical_Switch",
            ..
        })
    ));
    assert!(matches!(txn.lsp_del("nope"), Err(NbError::NotFound { .. })));
    txn.if_exists().lsp_del("nope").unwrap();
    txn.ls_add("ls2").unwrap();
    assert!(matches!(
        txn.lsp_add("ls2", "p1"),
        Err(NbError::WrongOwner { .. })
    ));
    txn.lsp_del("p1").unwrap();
    txn.lsp_add("ls2", "p1").unwrap(); // moved within one transaction
    nb.commit(txn).await.unwrap();
    assert_eq!(
        common::nbctl(&remote, &["lsp-list", "ls2"])
            .split_whitespace()
            .nth(1),
        Some("(p1)")
    );
    assert_eq!(common::nbctl(&remote, &["lsp-list", "ls1"]).trim(), "");

    let mut txn = nb.txn();
    txn.ls_del("ls1").unwrap();
    txn.if_exists().ls_del("ls1").unwrap();
    nb.commit(txn).await.unwrap();
    assert_eq!(common::nbctl(&remote, &["ls-list"]).lines().count(), 1);
}
