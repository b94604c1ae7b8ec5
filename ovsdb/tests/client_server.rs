//! The client against a real ovsdb-server serving OVN_Northbound (Debian's OVN schema):
//! list_dbs, get_schema, transact with every operation, and typed transaction errors.

use ovn_harness::{Db, OvsdbServer};
use ovsdb::client::{Client, Error};
use ovsdb::operation::{Mutator, OperationResult, TransactErrorKind, WaitUntil};
use ovsdb::{Atom, Condition, Mutation, NamedUuid, Operation, Row, Value};

mod common;
use common::start_nb;

const NB: &str = "OVN_Northbound";

fn name_row(name: &str) -> Row {
    Row::new().with("name", Atom::from(name))
}

fn by_name(name: &str) -> Condition {
    Condition::eq("name", Atom::from(name))
}

#[tokio::test]
async fn list_dbs_and_get_schema() {
    let Some(server) = start_nb() else { return };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    let dbs = client.list_dbs().await.unwrap();
    assert!(
        dbs.contains(&NB.to_string()) && dbs.contains(&"_Server".to_string()),
        "{dbs:?}"
    );
    let schema = client.get_schema(NB).await.unwrap();
    assert_eq!(schema.name, NB);
    assert!(schema.table("Logical_Switch_Port").is_some());
    match client.get_schema("Nope").await {
        Err(Error::Rpc { method, error }) => {
            assert_eq!(method, "get_schema");
            assert_eq!(error.error, "unknown database");
        }
        other => panic!("expected an RPC error, got {other:?}"),
    }
    assert_eq!(
        client
            .echo(vec![serde_json::json!("ping"), serde_json::json!(7)])
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn transact_insert_select_update_delete_with_named_uuids() {
    let Some(server) = start_nb() else { return };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    let port = NamedUuid::new("new_port").unwrap();
    let ops = vec![
        Operation::insert(
            "Logical_Switch_Port",
            name_row("p1").with("addresses", Value::set(["00:00:00:00:00:01"])),
        )
        .with_uuid_name(port.clone())
        .into(),
        Operation::insert(
            "Logical_Switch",
            name_row("sw0").with("ports", Value::set([port])),
        )
        .into(),
        Operation::comment("client_server test"),
    ];
    let results = client.transact(NB, &ops).await.unwrap();
    assert_eq!(results.len(), 3);
    let port_uuid = results[0].uuid().unwrap();
    let switch_uuid = results[1].uuid().unwrap();
    assert_eq!(results[2], OperationResult::Empty);

    let select = Operation::select("Logical_Switch")
        .with_condition(by_name("sw0"))
        .with_columns(["_uuid", "ports"]);
    let rows = client.transact(NB, &[select.clone().into()]).await.unwrap();
    let row = &rows[0].rows().unwrap()[0];
    assert_eq!(row.uuid(), Some(switch_uuid));
    // A one-element set arrives as a bare atom; with the schema it decodes as a set.
    assert_eq!(row.get("ports"), Some(&Value::set([port_uuid])));

    let update = Operation::update(
        "Logical_Switch",
        Row::new().with("other_config", Value::map([("k", "v")])),
    )
    .with_condition(Condition::eq("_uuid", Atom::from(switch_uuid)));
    assert_eq!(
        client.transact(NB, &[update.into()]).await.unwrap()[0].count(),
        Some(1)
    );

    let delete = Operation::delete("Logical_Switch").with_condition(by_name("sw0"));
    assert_eq!(
        client.transact(NB, &[delete.into()]).await.unwrap()[0].count(),
        Some(1)
    );
    let rows = client.transact(NB, &[select.into()]).await.unwrap();
    assert_eq!(rows[0].rows().unwrap().len(), 0);
}

#[tokio::test]
async fn mutate_with_every_mutator() {
    let Some(server) = start_nb() else { return };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    let insert = Operation::insert("NB_Global", Row::new().with("nb_cfg", Atom::from(10i64)));
    client.transact(NB, &[insert.into()]).await.unwrap();
    let arithmetic = [
        (Mutator::Add, 5),
        (Mutator::Multiply, 3),
        (Mutator::Subtract, 1),
        (Mutator::Divide, 2),
        (Mutator::Modulo, 8),
    ];
    let mut mutate = Operation::mutate("NB_Global");
    for (mutator, by) in arithmetic {
        mutate = mutate.with_mutation(Mutation::new("nb_cfg", mutator, Atom::from(by as i64)));
    }
    let mutate = mutate
        .with_mutation(Mutation::insert(
            "external_ids",
            Value::map([("a", "1"), ("b", "2")]),
        ))
        .with_mutation(Mutation::delete("external_ids", Value::set(["a"])));
    assert_eq!(
        client.transact(NB, &[mutate.into()]).await.unwrap()[0].count(),
        Some(1)
    );
    let rows = client
        .transact(NB, &[Operation::select("NB_Global").into()])
        .await
        .unwrap();
    let row = &rows[0].rows().unwrap()[0];
    // ((10 + 5) * 3 - 1) / 2 % 8 = 22 % 8 = 6
    assert_eq!(row.get("nb_cfg").and_then(Value::as_integer), Some(6));
    assert_eq!(row.get("external_ids"), Some(&Value::map([("b", "2")])));

    let by_zero =
        Operation::mutate("NB_Global").with_mutation(Mutation::divide("nb_cfg", Atom::from(0i64)));
    let err = transact_error(&client, vec![by_zero.into()]).await;
    assert_eq!(err.kind, TransactErrorKind::DomainError);
    assert_eq!((err.index, err.at_commit), (0, false));
}

async fn transact_error(client: &Client, ops: Vec<Operation>) -> ovsdb::TransactError {
    match client.transact(NB, &ops).await {
        Err(Error::Transact(err)) => err,
        other => panic!("expected a transaction error, got {other:?}"),
    }
}

#[tokio::test]
async fn wait_abort_assert_and_commit() {
    let Some(server) = start_nb() else { return };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    client
        .transact(
            NB,
            &[Operation::insert("Logical_Switch", name_row("w")).into()],
        )
        .await
        .unwrap();
    let wait_ok = Operation::wait(
        "Logical_Switch",
        ["name"],
        WaitUntil::Equal,
        vec![name_row("w")],
    )
    .with_condition(by_name("w"))
    .with_timeout(0);
    let results = client
        .transact(NB, &[wait_ok.into(), Operation::commit(false)])
        .await
        .unwrap();
    assert_eq!(
        results,
        vec![OperationResult::Empty, OperationResult::Empty]
    );

    let wait_unmet = Operation::wait(
        "Logical_Switch",
        ["name"],
        WaitUntil::NotEqual,
        vec![name_row("w")],
    )
    .with_condition(by_name("w"))
    .with_timeout(0);
    let err = transact_error(
        &client,
        vec![Operation::comment("first"), wait_unmet.into()],
    )
    .await;
    assert_eq!(
        (err.kind, err.index, err.operation),
        (TransactErrorKind::TimedOut, 1, Some("wait"))
    );

    let err = transact_error(
        &client,
        vec![
            Operation::insert("Logical_Switch", name_row("x")).into(),
            Operation::abort(),
        ],
    )
    .await;
    assert_eq!(err.kind, TransactErrorKind::Aborted);

    let err = transact_error(&client, vec![Operation::assert_lock("my_lock")]).await;
    assert_eq!(err.kind, TransactErrorKind::NotOwner);
    assert!(client.lock("my_lock").await.unwrap());
    client
        .transact(NB, &[Operation::assert_lock("my_lock")])
        .await
        .unwrap();
}

#[tokio::test]
async fn constraint_and_commit_time_failures_are_typed() {
    let Some(server) = start_nb() else { return };
    let client = Client::connect(&server.unix_remote()).await.unwrap();
    // Enum violation: ACL action must be one of allow/drop/...
    let acl = Row::new()
        .with("action", Atom::from("explode"))
        .with("direction", Atom::from("to-lport"))
        .with("match", Atom::from("1"))
        .with("priority", Atom::from(1i64));
    let err = transact_error(&client, vec![Operation::insert("ACL", acl).into()]).await;
    assert_eq!(
        (err.kind, err.index),
        (TransactErrorKind::ConstraintViolation, 0)
    );
    assert!(err.details.unwrap_or_default().contains("explode"));

    // A strong reference to a missing row fails at commit: one trailing error element.
    let dangling = ovsdb::Uuid::new_random();
    let switch = name_row("ref").with("ports", Value::set([dangling]));
    let err = transact_error(
        &client,
        vec![Operation::insert("Logical_Switch", switch).into()],
    )
    .await;
    assert_eq!(err.kind, TransactErrorKind::ReferentialIntegrity);
    assert!(err.at_commit && err.index == 1, "{err:?}");

    // Address_Set has a unique index on name: the duplicate fails at commit.
    let set = || Operation::insert("Address_Set", name_row("as1")).into();
    client.transact(NB, &[set()]).await.unwrap();
    let err = transact_error(&client, vec![set()]).await;
    assert_eq!(err.kind, TransactErrorKind::ConstraintViolation);
    assert!(err.at_commit, "{err:?}");

    match client.transact("Nope", &[Operation::comment("x")]).await {
        Err(Error::Rpc { error, .. }) => assert_eq!(error.error, "unknown database"),
        other => panic!("{other:?}"),
    }
}

/// Requests and replies far larger than the socket buffers: the client's writes block
/// (and wait for writability) and its reads span many `read` calls, in both directions
/// at once when many such transactions are in flight, over unix and TCP alike.
#[tokio::test]
async fn transactions_larger_than_the_socket_buffers_go_through_whole() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    let server = OvsdbServer::start_tcp(Db::Northbound).expect("start ovsdb-server");
    let tcp = server.tcp_remote().expect("a tcp remote");
    for (round, remote) in [server.unix_remote(), tcp].into_iter().enumerate() {
        let client = Client::connect(&remote).await.unwrap();
        let batch = |prefix: &str| -> Vec<Operation> {
            (0..20_000)
                .map(|i| {
                    Operation::insert("Logical_Switch", name_row(&format!("{prefix}-{i:05}")))
                        .into()
                })
                .collect()
        };
        let (a, b, c) = (
            batch(&format!("a{round}")),
            batch(&format!("b{round}")),
            batch(&format!("c{round}")),
        );
        let (ra, rb, rc) = tokio::join!(
            client.transact(NB, &a),
            client.transact(NB, &b),
            client.transact(NB, &c)
        );
        for results in [ra, rb, rc] {
            let results = results.unwrap();
            assert_eq!(results.len(), 20_000);
            assert!(results.iter().all(|r| r.uuid().is_some()));
        }
        let selected = client
            .transact(NB, &[Operation::select("Logical_Switch").into()])
            .await
            .unwrap();
        assert_eq!(
            selected[0].rows().map(<[Row]>::len),
            Some(60_000 * (round + 1))
        );
    }
}
