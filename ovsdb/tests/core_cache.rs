//! The replica cache: rows by uuid, schema unique indexes, client-side indexes, change
//! subscriptions, full replacement, and the errors it reports.

use std::sync::Arc;

use ovsdb::cache::{CacheError, IndexSpec, RowEvent, Writer};
use ovsdb::schema::DatabaseSchema;
use ovsdb::update::TableUpdates2;
use ovsdb::value::{Uuid, Value};

fn nb() -> Arc<DatabaseSchema> {
    let text = std::fs::read_to_string("/usr/share/ovn/ovn-nb.ovsschema")
        .expect("OVN NB schema installed");
    Arc::new(DatabaseSchema::from_json_str(&text).unwrap())
}

const LS1: &str = "11111111-0000-4000-8000-000000000001";
const LS2: &str = "11111111-0000-4000-8000-000000000002";
const P1: &str = "22222222-0000-4000-8000-000000000001";
const P2: &str = "22222222-0000-4000-8000-000000000002";

fn u(s: &str) -> Uuid {
    s.parse().unwrap()
}

fn updates(schema: &DatabaseSchema, text: &str) -> TableUpdates2 {
    TableUpdates2::from_str(text, schema).unwrap()
}

fn initial(schema: &DatabaseSchema) -> TableUpdates2 {
    updates(
        schema,
        &format!(
            r#"{{"Logical_Switch":{{
                "{LS1}":{{"initial":{{"name":"ls1","ports":["set",[["uuid","{P1}"],["uuid","{P2}"]]]}}}},
                "{LS2}":{{"initial":{{"name":"ls2"}}}}}},
              "Logical_Switch_Port":{{
                "{P1}":{{"initial":{{"name":"p1","external_ids":["map",[["iface-id","pod-a"]]]}}}},
                "{P2}":{{"initial":{{"name":"p2","external_ids":["map",[["iface-id","pod-b"]]]}}}}}}}}"#
        ),
    )
}

fn writer_with_indexes(schema: &Arc<DatabaseSchema>) -> Writer {
    let mut writer = Writer::new(schema.clone());
    writer
        .add_index(IndexSpec::column("by_name", "Logical_Switch", "name"))
        .unwrap();
    writer
        .add_index(IndexSpec::column("by_port", "Logical_Switch", "ports"))
        .unwrap();
    writer
        .add_index(IndexSpec::map_key(
            "by_iface",
            "Logical_Switch_Port",
            "external_ids",
            "iface-id",
        ))
        .unwrap();
    writer
}

#[test]
fn rows_and_indexes_follow_updates() {
    let schema = nb();
    let mut writer = writer_with_indexes(&schema);
    let store = writer.store();
    writer.apply_update2(initial(&schema)).unwrap();
    assert_eq!(store.len("Logical_Switch"), 2);
    assert_eq!(
        store.get("Logical_Switch", &u(LS2)).unwrap().get("name"),
        Some(&Value::scalar("ls2"))
    );
    assert_eq!(
        store.find_by_index("Logical_Switch", "by_name", "ls1"),
        vec![u(LS1)]
    );
    assert_eq!(
        store.find_by_index("Logical_Switch", "by_port", u(P2)),
        vec![u(LS1)]
    );
    assert_eq!(
        store.find_by_index("Logical_Switch_Port", "by_iface", "pod-b"),
        vec![u(P2)]
    );
    assert_eq!(
        store.find_unique("Logical_Switch_Port", &["name"], &[Value::scalar("p1")]),
        Some(u(P1))
    );
    assert_eq!(
        store
            .find("Logical_Switch", |r| r.get("ports").is_none())
            .len(),
        1
    );

    // Rename, move a port, change a map key, delete a row.
    writer
        .apply_update2(updates(
            &schema,
            &format!(
                r#"{{"Logical_Switch":{{
                    "{LS1}":{{"modify":{{"name":"ls1b","ports":["uuid","{P2}"]}}}},
                    "{LS2}":{{"modify":{{"ports":["uuid","{P2}"]}}}}}},
                  "Logical_Switch_Port":{{
                    "{P1}":{{"delete":null}},
                    "{P2}":{{"modify":{{"external_ids":["map",[["iface-id","pod-c"]]]}}}}}}}}"#
            ),
        ))
        .unwrap();
    assert!(store
        .find_by_index("Logical_Switch", "by_name", "ls1")
        .is_empty());
    // A modify of other columns leaves the name index as it was.
    assert_eq!(
        store.find_by_index("Logical_Switch", "by_name", "ls2"),
        vec![u(LS2)]
    );
    assert_eq!(
        store.find_by_index("Logical_Switch", "by_name", "ls1b"),
        vec![u(LS1)]
    );
    assert_eq!(
        store.find_by_index("Logical_Switch", "by_port", u(P2)),
        vec![u(LS2)]
    );
    // The ports diff re-keyed only P2: P1 still points at ls1.
    assert_eq!(
        store.find_by_index("Logical_Switch", "by_port", u(P1)),
        vec![u(LS1)]
    );
    assert_eq!(
        store.get("Logical_Switch", &u(LS1)).unwrap().get("ports"),
        Some(&Value::set([u(P1)])),
        "symmetric difference"
    );
    assert!(store
        .find_by_index("Logical_Switch_Port", "by_iface", "pod-b")
        .is_empty());
    assert_eq!(
        store.find_by_index("Logical_Switch_Port", "by_iface", "pod-c"),
        vec![u(P2)]
    );
    assert_eq!(
        store.find_unique("Logical_Switch_Port", &["name"], &[Value::scalar("p1")]),
        None
    );
    assert!(store.get("Logical_Switch_Port", &u(P1)).is_none());
    assert!(store
        .find_by_index("Logical_Switch", "no_such_index", "x")
        .is_empty());
}

#[test]
fn subscribers_get_per_row_events() {
    let schema = nb();
    let mut writer = writer_with_indexes(&schema);
    let mut events = writer.store().subscribe();
    writer.apply_update2(initial(&schema)).unwrap();
    let batch = events.try_recv().unwrap();
    assert_eq!(batch.events.len(), 4);
    assert!(batch
        .events
        .iter()
        .all(|e| matches!(e, RowEvent::Insert { .. })));

    writer
        .apply_update2(updates(
            &schema,
            &format!(r#"{{"Logical_Switch":{{"{LS2}":{{"modify":{{"name":"ls2b"}}}},"{LS1}":{{"delete":null}}}}}}"#),
        ))
        .unwrap();
    let batch = events.try_recv().unwrap();
    let [RowEvent::Update { uuid, old, new, .. }, RowEvent::Delete { uuid: gone, .. }] =
        batch.events.as_slice()
    else {
        panic!("unexpected events {:?}", batch.events)
    };
    assert_eq!((*uuid, *gone), (u(LS2), u(LS1)));
    assert_eq!(
        (old.get("name"), new.get("name")),
        (Some(&Value::scalar("ls2")), Some(&Value::scalar("ls2b")))
    );
    assert_eq!(batch.events[0].table(), "Logical_Switch");
    // Nothing more was sent.
    assert!(events.try_recv().is_err());
}

#[test]
fn replace_reports_only_the_differences() {
    let schema = nb();
    let mut writer = writer_with_indexes(&schema);
    let store = writer.store();
    writer.apply_update2(initial(&schema)).unwrap();
    let mut events = store.subscribe();
    // After a reconnect the server sends a fresh dump: ls2 is gone, p2 changed, the rest
    // is identical.
    let fresh = updates(
        &schema,
        &format!(
            r#"{{"Logical_Switch":{{"{LS1}":{{"initial":{{"name":"ls1","ports":["set",[["uuid","{P1}"],["uuid","{P2}"]]]}}}}}},
              "Logical_Switch_Port":{{
                "{P1}":{{"initial":{{"name":"p1","external_ids":["map",[["iface-id","pod-a"]]]}}}},
                "{P2}":{{"initial":{{"name":"p2"}}}}}}}}"#
        ),
    );
    writer.replace(fresh).unwrap();
    let batch = events.try_recv().unwrap();
    let mut seen: Vec<(&str, Uuid, &str)> = batch
        .events
        .iter()
        .map(|e| {
            let kind = match e {
                RowEvent::Insert { .. } => "insert",
                RowEvent::Update { .. } => "update",
                RowEvent::Delete { .. } => "delete",
            };
            (e.table(), e.uuid(), kind)
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("Logical_Switch", u(LS2), "delete"),
            ("Logical_Switch_Port", u(P2), "update")
        ]
    );
    assert!(store
        .find_by_index("Logical_Switch_Port", "by_iface", "pod-b")
        .is_empty());
    assert_eq!(store.len("Logical_Switch"), 1);

    writer.clear();
    assert!(store.is_empty());
    assert_eq!(events.try_recv().unwrap().events.len(), 3);
}

#[test]
fn problems_are_reported_but_applying_goes_on() {
    let schema = nb();
    let mut writer = writer_with_indexes(&schema);
    let store = writer.store();
    writer.apply_update2(initial(&schema)).unwrap();
    // Two ports swapping names within one batch is fine (two-pass indexing).
    writer
        .apply_update2(updates(
            &schema,
            &format!(r#"{{"Logical_Switch_Port":{{"{P1}":{{"modify":{{"name":"p2"}}}},"{P2}":{{"modify":{{"name":"p1"}}}}}}}}"#),
        ))
        .unwrap();
    assert_eq!(
        store.find_unique("Logical_Switch_Port", &["name"], &[Value::scalar("p1")]),
        Some(u(P2))
    );

    let clash = updates(
        &schema,
        &format!(r#"{{"Logical_Switch_Port":{{"{P1}":{{"modify":{{"name":"p1"}}}}}}}}"#),
    );
    assert_eq!(
        writer.apply_update2(clash).unwrap_err(),
        CacheError::UniqueViolation {
            table: "Logical_Switch_Port".into(),
            columns: vec!["name".into()],
            key: r#"["p1"]"#.into(),
            existing: u(P2),
            new: u(P1),
        }
    );
    let missing = "33333333-0000-4000-8000-000000000003";
    let unknown = updates(
        &schema,
        &format!(
            r#"{{"Logical_Switch":{{"{missing}":{{"modify":{{"name":"x"}}}},"{LS2}":{{"modify":{{"name":"still-applied"}}}}}}}}"#
        ),
    );
    let error = writer.apply_update2(unknown).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("table Logical_Switch: update for unknown row {missing}")
    );
    assert_eq!(
        store.find_by_index("Logical_Switch", "by_name", "still-applied"),
        vec![u(LS2)]
    );

    assert_eq!(
        writer
            .add_index(IndexSpec::column("by_name", "Logical_Switch", "name"))
            .unwrap_err()
            .to_string(),
        "index by_name is already declared on table Logical_Switch"
    );
    assert_eq!(
        writer
            .add_index(IndexSpec::column("x", "Nope", "name"))
            .unwrap_err()
            .to_string(),
        "index x: unknown table \"Nope\""
    );
    assert_eq!(
        writer
            .add_index(IndexSpec::column("x", "ACL", "colour"))
            .unwrap_err()
            .to_string(),
        "index x: table ACL has no column \"colour\""
    );
    // An index declared late is filled from the rows present.
    writer
        .add_index(IndexSpec::column("late", "Logical_Switch_Port", "name"))
        .unwrap();
    assert_eq!(
        store.find_by_index("Logical_Switch_Port", "late", "p1"),
        vec![u(P1), u(P2)]
    );
}

#[test]
fn large_initial_dump_loads_completely() {
    // The shape of the benchmark: 25k switches and 10k ports in one monitor reply.
    let schema = nb();
    let mut text = String::from(r#"{"Logical_Switch":{"#);
    for i in 0..25_000u32 {
        let port = if i < 10_000 {
            format!(r#","ports":["uuid","00000002-0000-4000-8000-{i:012}"]"#)
        } else {
            String::new()
        };
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            r#""00000001-0000-4000-8000-{i:012}":{{"initial":{{"name":"ls{i}","external_ids":["map",[["k8s","x"]]]{port}}}}}"#
        ));
    }
    text.push_str(r#"},"Logical_Switch_Port":{"#);
    for i in 0..10_000u32 {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            r#""00000002-0000-4000-8000-{i:012}":{{"initial":{{"name":"p{i}","addresses":"00:00:00:00:00:01 10.0.0.1","external_ids":["map",[["iface-id","pod{i}"]]]}}}}"#
        ));
    }
    text.push_str("}}");
    let mut writer = writer_with_indexes(&schema);
    let store = writer.store();
    writer
        .apply_update2(TableUpdates2::from_str(&text, &schema).unwrap())
        .unwrap();
    assert_eq!(
        (
            store.len("Logical_Switch"),
            store.len("Logical_Switch_Port")
        ),
        (25_000, 10_000)
    );
    let p = store.find_by_index("Logical_Switch_Port", "by_iface", "pod9999");
    assert_eq!(
        store.find_by_index("Logical_Switch", "by_port", p[0]),
        store.find_by_index("Logical_Switch", "by_name", "ls9999")
    );
}
