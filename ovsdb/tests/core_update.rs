//! Monitor updates: decoding the notifications captured from ovsdb-server 3.1 (see
//! `fixtures/capture.py`), the update2 diff rules, and a golden cross-check: a replica fed
//! by `update2` diffs must equal one fed by full-row RFC 7047 `update`s after every
//! transaction of the capture.

use std::sync::Arc;

use ovsdb::cache::Writer;
use ovsdb::schema::{DatabaseSchema, TableSchema};
use ovsdb::update::{
    apply_modify, MonitorCondSinceReply, RowUpdate, RowUpdate2, TableUpdates, TableUpdates2,
    Update2Notification, Update3Notification, UpdateNotification,
};
use ovsdb::value::{Row, Uuid, Value};
use serde_json::Value as Json;

fn nb() -> Arc<DatabaseSchema> {
    let text = std::fs::read_to_string("/usr/share/ovn/ovn-nb.ovsschema")
        .expect("OVN NB schema installed");
    Arc::new(DatabaseSchema::from_json_str(&text).unwrap())
}

fn fixture(name: &str) -> Json {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// The transactions of the capture, in the order they ran.
const SEQUENCE: &[&str] = &[
    "transact_insert_switch_and_port",
    "transact_update_for_diffs",
    "transact_mutate_set_and_map",
    "transact_select",
    "transact_insert_with_uuid",
    "transact_insert_with_uuid_duplicate",
    "transact_error_enum",
    "transact_error_range",
    "transact_error_referential_integrity",
    "transact_error_wait_timeout",
    "transact_error_abort",
    "transact_error_not_owner",
    "transact_error_domain",
    "transact_error_unknown_column",
    "transact_error_duplicate_index",
    "transact_delete",
    "transact_update_after_since",
    "transact_delete_all",
];

/// A row with absent columns filled with their defaults, restricted to `columns`.
fn complete(row: &Row, table: &TableSchema, columns: &[&str]) -> Row {
    columns
        .iter()
        .map(|c| {
            let value = row
                .get(c)
                .cloned()
                .unwrap_or_else(|| table.column(c).unwrap().type_.default_value());
            (*c, value)
        })
        .collect()
}

#[test]
fn update2_diffs_reproduce_the_full_rows_of_update() {
    let schema = nb();
    let mut by_diff = Writer::new(schema.clone());
    let mut by_rows = Writer::new(schema.clone());
    let mut by_since = Writer::new(schema.clone());
    let initial = fixture("monitor_cond_initial_empty");
    by_diff
        .apply_update2(TableUpdates2::from_json(&initial["reply"]["result"], &schema).unwrap())
        .unwrap();
    let initial = fixture("monitor_rfc_initial_empty");
    by_rows
        .apply_update(
            TableUpdates::<RowUpdate>::from_json(&initial["reply"]["result"], &schema).unwrap(),
        )
        .unwrap();
    let ls = schema.table("Logical_Switch").unwrap();
    let columns = [
        "name",
        "ports",
        "external_ids",
        "other_config",
        "load_balancer",
    ];
    let mut notifications = 0;
    for name in SEQUENCE {
        let capture = fixture(name);
        if *name == "transact_update_after_since" {
            let since = fixture("monitor_cond_since_initial");
            let reply =
                MonitorCondSinceReply::from_str(&since["reply"]["result"].to_string(), &schema)
                    .unwrap();
            assert!(!reply.found, "a standalone server never resumes");
            assert!(reply.last_txn_id.is_nil());
            by_since.apply_monitor_cond_since(reply).unwrap();
        }
        for note in capture["notifications"].as_array().unwrap() {
            notifications += 1;
            let params = note["params"].to_string();
            assert_eq!(note["id"], Json::Null, "notifications carry a null id");
            match note["method"].as_str().unwrap() {
                "update2" => {
                    let n = Update2Notification::from_params_str(&params, &schema).unwrap();
                    assert_eq!(n.monitor_id, "m1");
                    by_diff.apply_update2(n.updates).unwrap();
                }
                "update" => {
                    let n = UpdateNotification::from_params_str(&params, &schema).unwrap();
                    assert_eq!(n.monitor_id, "m0");
                    by_rows.apply_update(n.updates).unwrap();
                }
                "update3" => {
                    let n = Update3Notification::from_params_str(&params, &schema).unwrap();
                    assert_eq!(
                        (n.monitor_id.as_str(), n.last_txn_id),
                        (Some("m3"), Uuid::NIL)
                    );
                    by_since.apply_update3(n).unwrap();
                }
                other => panic!("unexpected notification {other}"),
            }
        }
        let (diff_store, rows_store) = (by_diff.store(), by_rows.store());
        let full = rows_store.rows("Logical_Switch");
        assert_eq!(diff_store.len("Logical_Switch"), full.len(), "after {name}");
        for (uuid, row) in full {
            let from_diffs = diff_store.get("Logical_Switch", &uuid).unwrap();
            assert_eq!(
                complete(&from_diffs, ls, &columns),
                complete(&row, ls, &columns),
                "after {name}"
            );
        }
    }
    assert_eq!(notifications, 15);
    assert!(by_since.store().is_empty() && by_diff.store().is_empty());
}

#[test]
fn port_diffs_from_the_server_apply_exactly() {
    // transact_update_for_diffs changed a port: addresses (unlimited set) by symmetric
    // difference, tag (optional 7 -> empty), type (scalar), enabled (optional true -> false).
    let schema = nb();
    let lsp = schema.table("Logical_Switch_Port").unwrap();
    let insert = fixture("transact_insert_switch_and_port");
    let n = Update2Notification::from_params_str(
        &insert["notifications"][0]["params"].to_string(),
        &schema,
    )
    .unwrap();
    let (uuid, RowUpdate2::Insert(mut row)) =
        n.updates.table("Logical_Switch_Port").unwrap().rows[0].clone()
    else {
        panic!("insert expected")
    };
    assert_eq!(
        row.get("addresses"),
        Some(&Value::set(["00:00:00:00:00:01 10.0.0.1"])),
        "bare atom is a set"
    );
    let modify = fixture("transact_update_for_diffs");
    let n = Update2Notification::from_params_str(
        &modify["notifications"][0]["params"].to_string(),
        &schema,
    )
    .unwrap();
    let (modified, RowUpdate2::Modify(diff)) =
        n.updates.table("Logical_Switch_Port").unwrap().rows[0].clone()
    else {
        panic!("modify expected")
    };
    assert_eq!(modified, uuid);
    apply_modify(&mut row, &diff, Some(lsp));
    assert_eq!(
        row.get("addresses"),
        Some(&Value::set(["00:00:00:00:00:02", "router"]))
    );
    assert_eq!(row.get("tag"), Some(&Value::empty_set()));
    assert_eq!(row.get("type"), Some(&Value::scalar("router")));
    assert_eq!(row.get("enabled"), Some(&Value::scalar(false)));
    assert_eq!(
        row.get("options"),
        Some(&Value::map([("k1", "v1"), ("k2", "v2")])),
        "untouched"
    );
}

fn table(columns: serde_json::Value) -> TableSchema {
    let schema =
        serde_json::json!({"name": "D", "version": "1.0.0", "tables": {"T": {"columns": columns}}});
    DatabaseSchema::from_json(&schema)
        .unwrap()
        .tables
        .remove("T")
        .unwrap()
}

#[test]
fn diff_rules_for_every_column_kind() {
    let t = table(serde_json::json!({
        "scalar": {"type": "integer"},
        "optional": {"type": {"key": "string", "min": 0}},
        "set": {"type": {"key": "string", "min": 0, "max": "unlimited"}},
        "map": {"type": {"key": "string", "value": "string", "min": 0, "max": "unlimited"}},
    }));
    let mut row = Row::new()
        .with("scalar", 1i64)
        .with("optional", "a")
        .with("set", Value::set(["x", "y"]))
        .with(
            "map",
            Value::map([("same", "1"), ("changed", "old"), ("kept", "k")]),
        );
    let diff = Row::new()
        .with("scalar", 2i64)
        .with("optional", Value::empty_set())
        .with("set", Value::set(["y", "z"]))
        .with(
            "map",
            Value::map([("same", "1"), ("changed", "new"), ("added", "a")]),
        );
    apply_modify(&mut row, &diff, Some(&t));
    let expected = Row::new()
        .with("scalar", 2i64)
        .with("optional", Value::empty_set())
        .with("set", Value::set(["x", "z"]))
        .with(
            "map",
            Value::map([("changed", "new"), ("kept", "k"), ("added", "a")]),
        );
    assert_eq!(row, expected);

    // Absent columns hold their default: optional empty gets the diff as value, a scalar
    // default (0) is replaced, a map starts empty.
    let mut sparse = Row::new();
    let diff = Row::new()
        .with("optional", "b")
        .with("scalar", 5i64)
        .with("map", Value::map([("k", "v")]));
    apply_modify(&mut sparse, &diff, Some(&t));
    assert_eq!(sparse, diff);

    // Optional to another value: the diff is the new value, not a symmetric difference.
    let mut row = Row::new().with("optional", "a");
    apply_modify(&mut row, &Row::new().with("optional", "b"), Some(&t));
    assert_eq!(row.get("optional"), Some(&Value::scalar("b")));

    // Without a schema a set diff is a symmetric difference.
    let mut row = Row::new().with("set", Value::set(["a"]));
    apply_modify(&mut row, &Row::new().with("set", "b"), None);
    assert_eq!(row.get("set"), Some(&Value::set(["a", "b"])));
}

#[test]
fn decode_errors_name_table_and_column() {
    let schema = nb();
    let u = "0b5e2ad0-0b6c-4d3b-9c49-6d2f3a1b2c3d";
    let e = |text: String| {
        TableUpdates2::from_str(&text, &schema)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        e(format!(r#"{{"Logical_Switch":{{"{u}":{{"insert":{{"name":5}}}}}}}}"#)),
        "invalid OVSDB JSON: column Logical_Switch.name: invalid type: integer `5`, expected string at line 1 column 77"
    );
    assert_eq!(
        e(r#"{"Logical_Switch":{"nope":{"delete":null}}}"#.into()),
        "invalid OVSDB JSON: invalid uuid \"nope\": expected 8-4-4-4-12 hexadecimal digits at line 1 column 25"
    );
    assert_eq!(
        e(format!(
            r#"{{"Logical_Switch":{{"{u}":{{"upsert":{{}}}}}}}}"#
        )),
        "invalid OVSDB JSON: unknown row update2 member \"upsert\" at line 1 column 67"
    );
    assert_eq!(
        e(format!(
            r#"{{"Logical_Switch":{{"{u}":{{"delete":null,"insert":{{}}}}}}}}"#
        )),
        "invalid OVSDB JSON: row update2 has more than one member at line 1 column 81"
    );
    assert_eq!(
        e(format!(r#"{{"Logical_Switch":{{"{u}":{{}}}}}}"#)),
        "invalid OVSDB JSON: empty row update2 (expected initial, insert, modify or delete) at line 1 column 60"
    );
    let since = MonitorCondSinceReply::from_str(r#"[1,"x",{}]"#, &schema).unwrap_err();
    assert_eq!(
        since.to_string(),
        "malformed monitor_cond_since result: \"found\" must be a boolean, found 1"
    );
    let since = MonitorCondSinceReply::from_str(r#"[true,"x",{}]"#, &schema).unwrap_err();
    assert_eq!(
        since.to_string(),
        "malformed last-txn-id: expected a uuid string, found \"x\""
    );
    let short = Update2Notification::from_params_str(r#"["m"]"#, &schema).unwrap_err();
    assert_eq!(short.to_string(), "invalid OVSDB JSON: invalid length 1, expected [monitor-id, table-updates] at line 1 column 5");
}

#[test]
fn unknown_tables_and_columns_decode_untyped() {
    let schema = nb();
    let u = "0b5e2ad0-0b6c-4d3b-9c49-6d2f3a1b2c3d";
    let text = format!(
        r#"{{"Future_Table":{{"{u}":{{"insert":{{"x":["set",[1,2]]}}}}}},"Logical_Switch":{{"{u}":{{"modify":{{"new_col":"v"}}}}}}}}"#
    );
    let updates = TableUpdates2::from_str(&text, &schema).unwrap();
    assert_eq!(updates.row_count(), 2);
    let future = &updates.table("Future_Table").unwrap().rows[0].1;
    assert_eq!(
        future,
        &RowUpdate2::Insert(Row::new().with("x", Value::set([1i64, 2])))
    );
}
