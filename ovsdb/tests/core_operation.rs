//! Operations: exact wire JSON, golden transact exchanges captured from ovsdb-server 3.1
//! (see `fixtures/capture.py`), typed results and errors, and pre-send validation.

use ovsdb::operation::{
    validate_all, Condition, Mutation, Operation, OperationResult, TransactErrorKind,
    TransactReply, WaitUntil,
};
use ovsdb::schema::{DatabaseSchema, ValidationError, ValueError};
use ovsdb::value::{NamedUuid, Row, Uuid, Value};
use serde_json::{json, Value as Json};

const U1: &str = "0b5e2ad0-0b6c-4d3b-9c49-6d2f3a1b2c3d";

fn nb() -> DatabaseSchema {
    let text = std::fs::read_to_string("/usr/share/ovn/ovn-nb.ovsschema")
        .expect("OVN NB schema installed");
    DatabaseSchema::from_json_str(&text).unwrap()
}

fn fixture(name: &str) -> Json {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn wire(op: impl Into<Operation>) -> String {
    serde_json::to_string(&op.into()).unwrap()
}

#[test]
fn every_operation_has_its_exact_wire_form() {
    let uuid: Uuid = U1.parse().unwrap();
    let row = Row::new().with("name", "ls0");
    assert_eq!(
        wire(
            Operation::insert("Logical_Switch", row.clone())
                .with_uuid_name(NamedUuid::new("ls0").unwrap())
        ),
        r#"{"op":"insert","table":"Logical_Switch","row":{"name":"ls0"},"uuid-name":"ls0"}"#
    );
    assert_eq!(
        wire(Operation::insert("Logical_Switch", row.clone()).with_uuid(uuid)),
        format!(
            r#"{{"op":"insert","table":"Logical_Switch","row":{{"name":"ls0"}},"uuid":"{U1}"}}"#
        )
    );
    assert_eq!(
        wire(
            Operation::select("Logical_Switch")
                .with_condition(Condition::eq("_uuid", uuid))
                .with_columns(["name"])
        ),
        format!(
            r#"{{"op":"select","table":"Logical_Switch","where":[["_uuid","==",["uuid","{U1}"]]],"columns":["name"]}}"#
        )
    );
    assert_eq!(
        wire(Operation::update("Logical_Switch", row).with_condition(Condition::ne("name", "x"))),
        r#"{"op":"update","table":"Logical_Switch","where":[["name","!=","x"]],"row":{"name":"ls0"}}"#
    );
    let mutate = Operation::mutate("Logical_Switch")
        .with_conditions([
            Condition::includes("ports", uuid),
            Condition::excludes("ports", Value::empty_set()),
        ])
        .with_mutation(Mutation::insert("ports", NamedUuid::new("p").unwrap()))
        .with_mutation(Mutation::delete("external_ids", Value::set(["k"])))
        .with_mutation(Mutation::add("n", 1i64))
        .with_mutation(Mutation::subtract("n", 1i64))
        .with_mutation(Mutation::multiply("n", 2i64))
        .with_mutation(Mutation::divide("n", 2i64))
        .with_mutation(Mutation::modulo("n", 3i64));
    assert_eq!(
        wire(mutate),
        format!(
            r#"{{"op":"mutate","table":"Logical_Switch","where":[["ports","includes",["uuid","{U1}"]],["ports","excludes",["set",[]]]],"mutations":[["ports","insert",["named-uuid","p"]],["external_ids","delete","k"],["n","+=",1],["n","-=",1],["n","*=",2],["n","/=",2],["n","%=",3]]}}"#
        )
    );
    assert_eq!(
        wire(Operation::delete("ACL").with_conditions([
            Condition::lt("priority", 1i64),
            Condition::le("priority", 2i64),
            Condition::gt("priority", 3i64),
            Condition::ge("priority", 4i64),
            Condition::Constant(true),
        ])),
        r#"{"op":"delete","table":"ACL","where":[["priority","<",1],["priority","<=",2],["priority",">",3],["priority",">=",4],true]}"#
    );
    assert_eq!(
        wire(
            Operation::wait(
                "Logical_Switch",
                ["name"],
                WaitUntil::NotEqual,
                vec![Row::new().with("name", "a")]
            )
            .with_timeout(0)
        ),
        r#"{"op":"wait","table":"Logical_Switch","timeout":0,"where":[],"columns":["name"],"until":"!=","rows":[{"name":"a"}]}"#
    );
    assert_eq!(
        wire(Operation::commit(true)),
        r#"{"op":"commit","durable":true}"#
    );
    assert_eq!(wire(Operation::abort()), r#"{"op":"abort"}"#);
    assert_eq!(
        wire(Operation::comment("hi")),
        r#"{"op":"comment","comment":"hi"}"#
    );
    assert_eq!(
        wire(Operation::assert_lock("l")),
        r#"{"op":"assert","lock":"l"}"#
    );
}

/// The ops of a captured request (after the database name).
fn request_ops(capture: &Json) -> (Vec<Operation>, Vec<Json>) {
    let params = capture["request"]["params"].as_array().unwrap();
    let raw: Vec<Json> = params[1..].to_vec();
    let ops = raw
        .iter()
        .map(|op| serde_json::from_value(op.clone()).unwrap())
        .collect();
    (ops, raw)
}

fn reply(name: &str) -> (Vec<Operation>, TransactReply) {
    let capture = fixture(name);
    let (ops, raw) = request_ops(&capture);
    // What we would send equals what was sent (semantically: the set notation may differ).
    for (op, raw) in ops.iter().zip(&raw) {
        let again: Operation = serde_json::from_str(&serde_json::to_string(op).unwrap()).unwrap();
        assert_eq!(&again, op, "{raw}");
    }
    let reply = TransactReply::from_json(&capture["reply"]["result"], &ops, Some(&nb())).unwrap();
    (ops, reply)
}

#[test]
fn golden_successful_results() {
    let (_, insert) = reply("transact_insert_switch_and_port");
    let results = insert.into_result().unwrap();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r.uuid().is_some()));

    let (_, select) = reply("transact_select");
    let results = select.into_result().unwrap();
    let rows = results[0].rows().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].get("addresses").unwrap(),
        &Value::set(["00:00:00:00:00:02", "dynamic", "unknown"])
    );
    assert_eq!(rows[0].get("tag").unwrap(), &Value::empty_set());
    assert_eq!(rows[0].get("enabled").unwrap(), &Value::scalar(false));
    assert_eq!(
        rows[0].get("options").unwrap(),
        &Value::map([("k2", "v2"), ("k3", "v3")])
    );

    let (_, delete) = reply("transact_delete");
    assert_eq!(
        delete.into_result().unwrap(),
        vec![OperationResult::Count { count: 1 }, OperationResult::Empty]
    );

    let (ops, with_uuid) = reply("transact_insert_with_uuid");
    let Operation::Insert(insert) = &ops[0] else {
        panic!("insert expected")
    };
    assert_eq!(with_uuid.into_result().unwrap()[0].uuid(), insert.uuid);
}

#[test]
fn golden_errors_are_typed() {
    let cases = [
        (
            "transact_error_enum",
            1,
            false,
            Some("insert"),
            TransactErrorKind::ConstraintViolation,
        ),
        (
            "transact_error_range",
            0,
            false,
            Some("insert"),
            TransactErrorKind::ConstraintViolation,
        ),
        (
            "transact_error_referential_integrity",
            1,
            true,
            None,
            TransactErrorKind::ReferentialIntegrity,
        ),
        (
            "transact_error_duplicate_index",
            2,
            true,
            None,
            TransactErrorKind::ConstraintViolation,
        ),
        (
            "transact_error_wait_timeout",
            0,
            false,
            Some("wait"),
            TransactErrorKind::TimedOut,
        ),
        (
            "transact_error_abort",
            0,
            false,
            Some("abort"),
            TransactErrorKind::Aborted,
        ),
        (
            "transact_error_not_owner",
            0,
            false,
            Some("assert"),
            TransactErrorKind::NotOwner,
        ),
        (
            "transact_error_domain",
            1,
            false,
            Some("mutate"),
            TransactErrorKind::DomainError,
        ),
        (
            "transact_error_unknown_column",
            0,
            false,
            Some("insert"),
            TransactErrorKind::SyntaxError,
        ),
        (
            "transact_insert_with_uuid_duplicate",
            0,
            false,
            Some("insert"),
            TransactErrorKind::DuplicateUuid,
        ),
    ];
    for (name, index, at_commit, operation, kind) in cases {
        let (ops, reply) = reply(name);
        let error = reply
            .error
            .clone()
            .unwrap_or_else(|| panic!("{name}: no error"));
        assert_eq!(
            (error.index, error.at_commit, error.operation, &error.kind),
            (index, at_commit, operation, &kind),
            "{name}"
        );
        // Slots after a failing operation are null; a commit failure keeps every result.
        let expected_results = if at_commit { ops.len() } else { index };
        assert_eq!(
            reply.results.iter().filter(|r| r.is_some()).count(),
            expected_results,
            "{name}"
        );
        assert_eq!(reply.results.len(), ops.len(), "{name}");
    }
    let (_, enum_error) = reply("transact_error_enum");
    assert_eq!(
        enum_error.into_result().unwrap_err().to_string(),
        "transaction failed at operation 1 (insert): constraint violation: bogus is not one of the allowed values ([allow, allow-related, allow-stateless, drop, reject])"
    );
    let (_, ri) = reply("transact_error_referential_integrity");
    assert!(ri
        .into_result()
        .unwrap_err()
        .to_string()
        .starts_with("transaction failed at commit: referential integrity violation: Table Logical_Switch column ports row"));
}

#[test]
fn malformed_replies_are_rejected() {
    let ops: Vec<Operation> = vec![
        Operation::insert("Logical_Switch", Row::new()).into(),
        Operation::comment("c"),
    ];
    let decode = |text: &str| {
        TransactReply::from_str(text, &ops, None)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        decode("[{}]"),
        "malformed transact result: 1 elements for 2 operations"
    );
    assert_eq!(
        decode("[{},{},{},{}]"),
        "malformed transact result: 4 elements for 2 operations"
    );
    assert_eq!(
        decode("[{},{}]"),
        "malformed transact result: element 0 (insert) lacks \"uuid\""
    );
    assert_eq!(
        decode(r#"[null,{}]"#),
        "malformed transact result: element 0 is null but no operation failed before it"
    );
    assert_eq!(
        decode(&format!(r#"[{{"uuid":["uuid","{U1}"]}},{{}},{{}}]"#)),
        "malformed transact result: trailing element 2 is not an error"
    );
    assert_eq!(
        decode(r#"{"a":1}"#),
        "invalid OVSDB JSON: invalid type: map, expected a sequence at line 1 column 0"
    );
    // The position is within the whole result array.
    assert_eq!(
        decode(r#"[{"uuid":["uuid","bad"]},{}]"#),
        "invalid OVSDB JSON: invalid uuid \"bad\": expected 8-4-4-4-12 hexadecimal digits at line 1 column 23"
    );
}

#[test]
fn validation_before_sending_names_the_offender() {
    let nb = nb();
    let good: Vec<Operation> = vec![
        Operation::insert(
            "ACL",
            Row::new().with("action", "drop").with("priority", 5i64),
        )
        .into(),
        Operation::mutate("Logical_Switch")
            .with_condition(Condition::eq("name", "ls0"))
            .with_mutation(Mutation::insert("acls", NamedUuid::new("a").unwrap()))
            .with_mutation(Mutation::delete("external_ids", Value::set(["k"])))
            .into(),
        Operation::select("ACL")
            .with_condition(Condition::ge("priority", 10i64))
            .into(),
        Operation::wait(
            "ACL",
            ["priority"],
            WaitUntil::Equal,
            vec![Row::new().with("priority", 1i64)],
        )
        .into(),
        Operation::commit(false),
    ];
    validate_all(&good, &nb).unwrap();

    let bad: Vec<(Operation, &str)> = vec![
        (Operation::insert("Nope", Row::new()).into(), "unknown table \"Nope\""),
        (
            Operation::insert("ACL", Row::new().with("action", "bogus")).into(),
            r#"table ACL, column action: invalid value "bogus": "bogus" is not one of the allowed values ["set",["allow","allow-related","allow-stateless","drop","reject"]]"#,
        ),
        (
            Operation::insert("ACL", Row::new().with("_uuid", Uuid::new_random())).into(),
            "table ACL: column _uuid cannot be written",
        ),
        (
            Operation::update("ACL", Row::new().with("priority", 99999i64)).into(),
            "table ACL, column priority: invalid value 99999: integer 99999 is out of range 0..=32767",
        ),
        (
            Operation::select("ACL").with_condition(Condition::eq("prio", 1i64)).into(),
            "table ACL: unknown column \"prio\"",
        ),
        (
            Operation::select("ACL").with_condition(Condition::lt("action", "drop")).into(),
            r#"table ACL, column action: invalid value "drop": < does not apply to a column of type {"key":{"enum":["set",["allow","allow-related","allow-stateless","drop","reject"]],"type":"string"}}"#,
        ),
        (
            Operation::mutate("ACL").with_mutation(Mutation::add("priority", "one")).into(),
            r#"table ACL, column priority: invalid value "one": expected integer, found "one""#,
        ),
        (
            Operation::mutate("ACL").with_mutation(Mutation::insert("action", "bogus")).into(),
            r#"table ACL, column action: invalid value "bogus": "bogus" is not one of the allowed values ["set",["allow","allow-related","allow-stateless","drop","reject"]]"#,
        ),
        (
            Operation::mutate("ACL").with_mutation(Mutation::modulo("external_ids", 2i64)).into(),
            r#"table ACL, column external_ids: invalid value 2: %= does not apply to a column of type {"key":"string","max":"unlimited","min":0,"value":"string"}"#,
        ),
        (
            Operation::select("ACL").with_columns(["nope"]).into(),
            "table ACL: unknown column \"nope\"",
        ),
    ];
    for (op, message) in bad {
        assert_eq!(op.validate(&nb).unwrap_err().to_string(), message, "{op:?}");
    }
    let ops = vec![Operation::comment("x"), Operation::delete("Nope").into()];
    assert_eq!(
        validate_all(&ops, &nb).unwrap_err(),
        (
            1,
            ValidationError::UnknownTable {
                table: "Nope".into()
            }
        )
    );
    let vs = DatabaseSchema::from_json_str(
        &std::fs::read_to_string("/usr/share/openvswitch/vswitch.ovsschema").unwrap(),
    )
    .unwrap();
    let rename = Operation::update("Bridge", Row::new().with("name", "br1"));
    assert_eq!(
        Operation::from(rename).validate(&vs).unwrap_err(),
        ValidationError::ReadOnlyColumn {
            table: "Bridge".into(),
            column: "name".into()
        }
    );
    let vlan = Operation::insert(
        "Bridge",
        Row::new().with("flood_vlans", Value::set(4090..4097i64)),
    );
    let ValidationError::InvalidValue { reason, .. } =
        Operation::from(vlan).validate(&vs).unwrap_err()
    else {
        panic!("invalid value expected")
    };
    assert_eq!(
        *reason,
        ValueError::IntegerOutOfRange {
            value: 4096,
            min: Some(0),
            max: Some(4095)
        }
    );
    let no_interface = Operation::insert("Port", Row::new().with("interfaces", Value::empty_set()));
    assert_eq!(
        Operation::from(no_interface).validate(&vs).unwrap_err(),
        ValidationError::InvalidValue {
            table: "Port".into(),
            column: "interfaces".into(),
            value: r#"["set",[]]"#.into(),
            reason: Box::new(ValueError::Size {
                length: 0,
                min: 1,
                max: None
            }),
        }
    );
}

#[test]
fn untyped_operation_decode_errors() {
    let decode = |j: Json| {
        serde_json::from_value::<Operation>(j)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        decode(json!({"op": "explode"})),
        "unknown operation \"explode\""
    );
    assert_eq!(
        decode(json!({"op": "select", "where": []})),
        "select operation lacks \"table\""
    );
    assert_eq!(
        decode(json!({"op": "delete", "table": "T"})),
        "delete operation lacks \"where\""
    );
    assert_eq!(
        decode(json!({"op": "select", "table": "T", "where": [["c", "~=", 1]]})),
        "unknown function \"~=\""
    );
    assert_eq!(
        decode(json!({"op": "insert", "table": "T", "row": {}, "uuid-name": "a-b"})),
        "invalid named-uuid \"a-b\": expected [A-Za-z_][A-Za-z0-9_]*"
    );
    assert!(decode(json!({"op": "abort", "bogus": 1})).starts_with("unknown field `bogus`"));
}
