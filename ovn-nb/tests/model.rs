//! The generated model without a server: row round trips, enum catch-all,
//! decode errors, typed conditions/mutations and their wire form.

use std::collections::{BTreeMap, BTreeSet};

use ovn_nb::*;
use ovsdb::operation::Operation;
use ovsdb::typed::{self, RowId, Table, TypedOp};
use ovsdb::value::{Row, Value};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn logical_switch_port_round_trips(
        name in "[a-z0-9-]{1,10}",
        addresses in prop::collection::btree_set("[0-9a-f:. ]{1,20}", 0..3),
        tag in prop::option::of(1i64..4095),
        options in prop::collection::btree_map("[a-z-]{1,8}", "[a-z0-9]{0,8}", 0..3),
        enabled in prop::option::of(any::<bool>()),
    ) {
        let lsp = LogicalSwitchPort { name, addresses, tag, options, enabled, ..Default::default() };
        prop_assert_eq!(LogicalSwitchPort::from_row(&lsp.to_row()).unwrap(), lsp);
    }
}

#[test]
fn enums_keep_unknown_values() {
    let acl = Acl {
        action: AclAction::from("pass"),
        ..Default::default()
    };
    assert_eq!(acl.action, AclAction::Other("pass".into()));
    let back = Acl::from_row(&acl.to_row()).unwrap();
    assert_eq!(back.action.as_str(), "pass");
    assert_eq!(AclAction::from("allow-related"), AclAction::AllowRelated);
    assert_eq!(AclAction::AllowRelated.to_string(), "allow-related");
    assert!(AclAction::KNOWN.contains(&"reject"));
}

#[test]
fn wrong_types_are_decode_errors_naming_the_column() {
    let row = Row::new().with("name", Value::scalar(7i64));
    let err = LogicalSwitch::from_row(&row).unwrap_err();
    assert_eq!((err.table, err.column), ("Logical_Switch", "name"));
    assert!(
        err.to_string()
            .starts_with("column Logical_Switch.name: expected a string"),
        "{err}"
    );
    let row = Row::new().with("tag", Value::set([1i64, 2]));
    assert!(LogicalSwitchPort::from_row(&row).is_err());
}

#[test]
fn missing_columns_decode_to_defaults() {
    let lsp = LogicalSwitchPort::from_row(&Row::new().with("name", "p")).unwrap();
    assert_eq!(
        lsp,
        LogicalSwitchPort {
            name: "p".into(),
            ..Default::default()
        }
    );
}

#[test]
fn typed_builders_produce_wire_operations() {
    let ls: RowId<LogicalSwitch> = RowId::random();
    let lsp = typed::insert(&LogicalSwitchPort {
        name: "p1".into(),
        ..Default::default()
    });
    let lsp_id = lsp.id();
    let ops: Vec<Operation> = vec![
        TypedOp::from(lsp).into(),
        TypedOp::from(
            typed::mutate(LogicalSwitch::ROW_UUID.eq(ls))
                .with([LogicalSwitch::PORTS.insert([lsp_id])]),
        )
        .into(),
        TypedOp::from(
            typed::mutate(LogicalSwitch::ROW_UUID.eq(ls))
                .with(LogicalSwitch::EXTERNAL_IDS.set_keys([("k".to_string(), "v".to_string())])),
        )
        .into(),
    ];
    let json = serde_json::to_value(&ops).unwrap();
    assert_eq!(json[0]["op"], "insert");
    assert_eq!(json[0]["uuid"], serde_json::json!(lsp_id.to_string()));
    assert_eq!(
        json[1]["where"],
        serde_json::json!([["_uuid", "==", ["uuid", ls.to_string()]]])
    );
    assert_eq!(
        json[1]["mutations"],
        serde_json::json!([["ports", "insert", ["uuid", lsp_id.to_string()]]])
    );
    assert_eq!(
        json[2]["mutations"][0],
        serde_json::json!(["external_ids", "delete", "k"])
    );
    assert_eq!(
        json[2]["mutations"][1],
        serde_json::json!(["external_ids", "insert", ["map", [["k", "v"]]]])
    );
}

#[test]
fn typed_conditions_carry_typed_values() {
    let w = LoadBalancer::SELECTION_FIELDS
        .includes(BTreeSet::from([LoadBalancerSelectionFields::IpSrc]))
        .and(LoadBalancer::NAME.eq("lb"));
    assert_eq!(w.clauses().len(), 2);
    assert_eq!(w.clauses()[0].value, Value::set(["ip_src"]));
    let m = LoadBalancer::VIPS.insert(BTreeMap::from([(
        "1.1.1.1:80".to_string(),
        "2.2.2.2:80".to_string(),
    )]));
    assert_eq!(m.column, "vips");
}
