//! Schemas: the real Debian OVN/OVS schemas parse, round-trip, validate values, compare.
//!
//! The schema files come from Debian's `ovn-common` and `openvswitch-common` packages,
//! installed on every machine that runs these tests (the test script installs them).

use ovsdb::schema::{ColumnType, DatabaseSchema, RefType, SchemaDiff, ValidationError, ValueError};
use ovsdb::value::{AtomType, NamedUuid, Row, Uuid, Value};

const NB: &str = "/usr/share/ovn/ovn-nb.ovsschema";
const SB: &str = "/usr/share/ovn/ovn-sb.ovsschema";
const VSWITCH: &str = "/usr/share/openvswitch/vswitch.ovsschema";

fn load(path: &str) -> DatabaseSchema {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path} must be installed: {e}"));
    DatabaseSchema::from_json_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn column_count(schema: &DatabaseSchema) -> usize {
    schema.tables.values().map(|t| t.columns.len()).sum()
}

#[test]
fn debian_schemas_parse_with_expected_shape() {
    // Counts from Debian bookworm's OVN 23.03 / OVS 3.1 packages.
    let nb = load(NB);
    assert_eq!(
        (nb.name.as_str(), nb.version.as_str()),
        ("OVN_Northbound", "7.0.0")
    );
    assert_eq!(nb.cksum.as_deref(), Some("94023179 33468"));
    assert_eq!((nb.tables.len(), column_count(&nb)), (30, 193));
    let sb = load(SB);
    assert_eq!(
        (sb.name.as_str(), sb.tables.len(), column_count(&sb)),
        ("OVN_Southbound", 34, 182)
    );
    let vs = load(VSWITCH);
    assert_eq!(
        (vs.name.as_str(), vs.tables.len(), column_count(&vs)),
        ("Open_vSwitch", 19, 184)
    );
    let ephemeral = vs
        .tables
        .values()
        .flat_map(|t| t.columns.values())
        .filter(|c| c.ephemeral)
        .count();
    assert_eq!(ephemeral, 31);
    let roots = nb.tables.values().filter(|t| t.is_root).count();
    assert_eq!(roots, 16);
}

#[test]
fn constraints_are_parsed() {
    let nb = load(NB);
    let acl = nb.table("ACL").unwrap();
    let priority = &acl.column("priority").unwrap().type_;
    assert_eq!(
        (priority.key.min_integer, priority.key.max_integer),
        (Some(0), Some(32767))
    );
    let name = &acl.column("name").unwrap().type_;
    assert_eq!((name.key.max_length, name.is_optional()), (Some(63), true));
    let action = &acl.column("action").unwrap().type_;
    assert_eq!(action.key.enum_values.as_ref().unwrap().len(), 5);
    let bandwidth = &nb.table("QoS").unwrap().column("bandwidth").unwrap().type_;
    assert!(bandwidth.is_map());
    assert_eq!(
        bandwidth.value.as_ref().unwrap().max_integer,
        Some(4294967295)
    );
    let ls = nb.table("Logical_Switch").unwrap();
    assert!(ls.indexes.is_empty(), "NB Logical_Switch has no name index");
    let lb = &ls.column("load_balancer").unwrap().type_;
    assert_eq!(
        (lb.key.ref_table.as_deref(), lb.key.ref_type, lb.max),
        (Some("Load_Balancer"), RefType::Weak, None)
    );
    assert_eq!(
        nb.table("Logical_Switch_Port").unwrap().indexes,
        vec![vec!["name".to_string()]]
    );

    let sb = load(SB);
    let permissions = &sb
        .table("RBAC_Role")
        .unwrap()
        .column("permissions")
        .unwrap()
        .type_;
    let value = permissions.value.as_ref().unwrap();
    assert_eq!(
        (value.atom_type, value.ref_type),
        (AtomType::Uuid, RefType::Weak)
    );
    let vs = load(VSWITCH);
    let bridge = vs.table("Bridge").unwrap();
    assert!(!bridge.column("name").unwrap().mutable);
    assert_eq!(bridge.column("flood_vlans").unwrap().type_.max, Some(4096));
}

#[test]
fn schemas_round_trip_through_json() {
    for path in [NB, SB, VSWITCH] {
        let schema = load(path);
        let text = serde_json::to_string(&schema).unwrap();
        let again = DatabaseSchema::from_json_str(&text).unwrap();
        assert_eq!(again, schema, "{path}");
        // Writing is deterministic, so a second pass gives identical text.
        assert_eq!(serde_json::to_string(&again).unwrap(), text, "{path}");
    }
}

fn invalid(column: &str, value: &str, reason: ValueError) -> ValidationError {
    ValidationError::InvalidValue {
        table: "ACL".into(),
        column: column.into(),
        value: value.into(),
        reason: Box::new(reason),
    }
}

#[test]
fn validation_names_table_column_and_value() {
    let nb = load(NB);
    let ok = Row::new()
        .with("priority", 100i64)
        .with("action", "drop")
        .with("direction", "to-lport");
    nb.validate_row("ACL", &ok).unwrap();

    let cases: Vec<(Row, ValidationError, &str)> = vec![
        (
            Row::new().with("action", "bogus"),
            invalid("action", "\"bogus\"", ValueError::NotInEnum {
                value: "\"bogus\"".into(),
                allowed: r#"["set",["allow","allow-related","allow-stateless","drop","reject"]]"#.into(),
            }),
            r#"table ACL, column action: invalid value "bogus": "bogus" is not one of the allowed values ["set",["allow","allow-related","allow-stateless","drop","reject"]]"#,
        ),
        (
            Row::new().with("priority", 40000i64),
            invalid("priority", "40000", ValueError::IntegerOutOfRange { value: 40000, min: Some(0), max: Some(32767) }),
            "table ACL, column priority: invalid value 40000: integer 40000 is out of range 0..=32767",
        ),
        (
            Row::new().with("priority", "high"),
            invalid("priority", "\"high\"", ValueError::TypeMismatch { expected: AtomType::Integer, found: "\"high\"".into() }),
            "table ACL, column priority: invalid value \"high\": expected integer, found \"high\"",
        ),
        (
            Row::new().with("name", "x".repeat(64)),
            invalid("name", &format!("\"{}\"", "x".repeat(64)), ValueError::StringLength {
                value: "x".repeat(64),
                length: 64,
                min: None,
                max: Some(63),
            }),
            "",
        ),
        (
            Row::new().with("priority", Value::empty_set()),
            invalid("priority", r#"["set",[]]"#, ValueError::Size { length: 0, min: 1, max: Some(1) }),
            r#"table ACL, column priority: invalid value ["set",[]]: 0 elements, allowed 1..=1"#,
        ),
        (
            Row::new().with("external_ids", "x"),
            invalid("external_ids", "\"x\"", ValueError::KindMismatch { expected: "map", found: "set" }),
            "table ACL, column external_ids: invalid value \"x\": expected a map, found a set",
        ),
        (
            Row::new().with("colour", "red"),
            ValidationError::UnknownColumn { table: "ACL".into(), column: "colour".into() },
            "table ACL: unknown column \"colour\"",
        ),
    ];
    for (row, expected, message) in cases {
        let error = nb.validate_row("ACL", &row).unwrap_err();
        assert_eq!(error, expected);
        if !message.is_empty() {
            assert_eq!(error.to_string(), message);
        }
    }
    assert_eq!(
        nb.validate_row("Nope", &Row::new())
            .unwrap_err()
            .to_string(),
        "unknown table \"Nope\""
    );
}

#[test]
fn validation_accepts_named_uuids_and_map_constraints() {
    let nb = load(NB);
    let ports = Value::set([NamedUuid::new("p0").unwrap()]);
    nb.validate_value("Logical_Switch", "ports", &ports)
        .unwrap();
    nb.validate_value(
        "Logical_Switch",
        "_uuid",
        &Value::scalar(Uuid::new_random()),
    )
    .unwrap();
    let qos = nb.table("QoS").unwrap();
    qos.validate_value("bandwidth", &Value::map([("rate", 100i64)]))
        .unwrap();
    let bad_key = qos
        .validate_value("bandwidth", &Value::map([("speed", 100i64)]))
        .unwrap_err();
    assert_eq!(
        bad_key.to_string(),
        r#"table QoS, column bandwidth: invalid value ["map",[["speed",100]]]: "speed" is not one of the allowed values ["set",["burst","rate"]]"#
    );
    let bad_value = qos
        .validate_value("bandwidth", &Value::map([("rate", 0i64)]))
        .unwrap_err();
    assert_eq!(
        bad_value.to_string(),
        r#"table QoS, column bandwidth: invalid value ["map",[["rate",0]]]: integer 0 is out of range 1..=4294967295"#
    );
}

#[test]
fn compare_reports_missing_columns_and_shape_changes() {
    let server = load(NB);
    assert!(server.compare(&server).is_empty());

    let mut model = server.clone();
    model.tables.remove("Copp");
    let ls = model.tables.get_mut("Logical_Switch").unwrap();
    ls.columns.remove("copp");
    let name = ls.columns.get_mut("name").unwrap();
    name.type_ = ColumnType {
        min: 0,
        ..name.type_.clone()
    };
    // A constraint change alone is not a mismatch.
    let acl = model.tables.get_mut("ACL").unwrap();
    acl.columns
        .get_mut("priority")
        .unwrap()
        .type_
        .key
        .max_integer = Some(65535);
    let mut extra = acl.columns["name"].clone();
    extra.name = "label_text".into();
    acl.columns.insert("label_text".into(), extra);

    let diff: SchemaDiff = model.compare(&server);
    assert_eq!(diff.tables_only_in_right, vec!["Copp".to_string()]);
    assert!(diff.tables_only_in_left.is_empty());
    assert_eq!(
        diff.columns_only_in_right,
        vec![("Logical_Switch".to_string(), "copp".to_string())]
    );
    assert_eq!(
        diff.columns_only_in_left,
        vec![("ACL".to_string(), "label_text".to_string())]
    );
    assert_eq!(diff.type_mismatches.len(), 1);
    assert_eq!(
        (
            diff.type_mismatches[0].table.as_str(),
            diff.type_mismatches[0].column.as_str()
        ),
        ("Logical_Switch", "name")
    );
    assert!(!diff.left_fits_right());
}

#[test]
fn schema_decodes_through_serde() {
    let text = std::fs::read_to_string(VSWITCH).unwrap();
    let schema: DatabaseSchema = serde_json::from_str(&text).unwrap();
    assert_eq!(schema, load(VSWITCH));
    let broken = text.replace("\"refTable\": \"Port\"", "\"refTable\": \"Porto\"");
    assert_ne!(broken, text);
    let error = serde_json::from_str::<DatabaseSchema>(&broken)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "table Bridge, column ports: refTable \"Porto\" is not a table of the schema"
    );
}
