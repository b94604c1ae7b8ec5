use serde_json::json;

use super::*;
use crate::schema::ColumnType;

fn uuid(s: &str) -> Uuid {
    s.parse().unwrap()
}

const U1: &str = "0b5e2ad0-0b6c-4d3b-9c49-6d2f3a1b2c3d";

#[test]
fn named_uuid_accepts_only_ids() {
    assert!(NamedUuid::new("row0").is_ok());
    assert!(NamedUuid::new("_x_1").is_ok());
    assert_eq!(NamedUuid::new("0row"), Err(InvalidNamedUuid("0row".into())));
    assert_eq!(NamedUuid::new(""), Err(InvalidNamedUuid("".into())));
    assert_eq!(
        NamedUuid::new(U1).unwrap_err().to_string(),
        format!("invalid named-uuid \"{U1}\": expected [A-Za-z_][A-Za-z0-9_]*")
    );
    assert_eq!(
        NamedUuid::for_uuid(uuid(U1)).as_str(),
        "row0b5e2ad0_0b6c_4d3b_9c49_6d2f3a1b2c3d"
    );
}

#[test]
fn uuid_requires_hyphenated_form() {
    assert_eq!(uuid(U1).to_string(), U1);
    let simple = "0b5e2ad00b6c4d3b9c496d2f3a1b2c3d";
    assert_eq!(simple.parse::<Uuid>(), Err(InvalidUuid(simple.into())));
    assert_eq!(
        "nope".parse::<Uuid>().unwrap_err().to_string(),
        "invalid uuid \"nope\": expected 8-4-4-4-12 hexadecimal digits"
    );
}

#[test]
fn atoms_order_by_type_then_value() {
    let mut atoms = vec![
        Atom::from("b"),
        Atom::Uuid(uuid(U1)),
        Atom::Integer(3),
        Atom::Real(-0.5),
        Atom::Boolean(true),
        Atom::from("a"),
        Atom::Integer(-1),
    ];
    atoms.sort();
    assert_eq!(
        atoms,
        vec![
            Atom::Integer(-1),
            Atom::Integer(3),
            Atom::Real(-0.5),
            Atom::Boolean(true),
            Atom::from("a"),
            Atom::from("b"),
            Atom::Uuid(uuid(U1)),
        ]
    );
}

#[test]
fn set_and_map_keep_order_and_uniqueness() {
    let set = Set::from_atoms(vec!["b".into(), "a".into(), "b".into()]);
    assert_eq!(set.as_slice(), &[Atom::from("a"), Atom::from("b")]);
    let mut set = set;
    assert!(!set.insert("a".into()));
    assert!(set.insert("c".into()));
    assert!(set.remove(&"a".into()));
    assert!(!set.contains(&"a".into()));

    let mut map = Map::from_pairs(vec![
        ("k".into(), "1".into()),
        ("a".into(), "2".into()),
        ("k".into(), "3".into()),
    ]);
    assert_eq!(map.len(), 2);
    assert_eq!(map.get_str("k"), Some(&Atom::from("3")), "last pair wins");
    assert_eq!(map.insert("a".into(), "4".into()), Some(Atom::from("2")));
    assert_eq!(map.remove(&"zz".into()), None);
    assert_eq!(map.get_str("missing"), None);
    let mixed = Map::from_pairs(vec![
        (Atom::Integer(1), "x".into()),
        ("s".into(), "y".into()),
    ]);
    assert_eq!(mixed.get_str("s"), Some(&Atom::from("y")));
}

#[test]
fn encodes_wire_notation() {
    assert_eq!(Value::scalar("x").to_json(), json!("x"));
    assert_eq!(Value::scalar(uuid(U1)).to_json(), json!(["uuid", U1]));
    let named = NamedUuid::new("p0").unwrap();
    assert_eq!(Value::scalar(named).to_json(), json!(["named-uuid", "p0"]));
    assert_eq!(Value::empty_set().to_json(), json!(["set", []]));
    assert_eq!(Value::set([2i64, 1]).to_json(), json!(["set", [1, 2]]));
    assert_eq!(Value::empty_map().to_json(), json!(["map", []]));
    assert_eq!(
        Value::map([("b", 2i64), ("a", 1)]).to_json(),
        json!(["map", [["a", 1], ["b", 2]]])
    );
    assert_eq!(Value::scalar(1.5).to_json(), json!(1.5));
    assert_eq!(serde_json::to_string(&Value::scalar(2.0)).unwrap(), "2.0");
    let row = Row::new()
        .with("name", "ls0")
        .with("ports", Value::set([uuid(U1)]));
    assert_eq!(row.to_json(), json!({"name": "ls0", "ports": ["uuid", U1]}));
}

#[test]
fn untyped_decode_reads_every_form() {
    let cases = [
        (json!(5), Value::scalar(5i64)),
        (json!(-5), Value::scalar(-5i64)),
        (json!(2.5), Value::scalar(2.5)),
        (json!(false), Value::scalar(false)),
        (json!("s"), Value::scalar("s")),
        (json!(["uuid", U1]), Value::scalar(uuid(U1))),
        (json!(["set", ["b", "a"]]), Value::set(["a", "b"])),
        (
            json!(["map", [["k", ["uuid", U1]]]]),
            Value::map([("k", uuid(U1))]),
        ),
    ];
    for (json, expected) in cases {
        assert_eq!(Value::from_json(&json).unwrap(), expected, "{json}");
    }
}

fn err(json: serde_json::Value) -> String {
    Value::from_json(&json).unwrap_err().to_string()
}

#[test]
fn untyped_decode_errors_name_the_problem() {
    assert_eq!(
        err(json!([])),
        "invalid OVSDB JSON: empty array is not an OVSDB value"
    );
    assert_eq!(
        err(json!(["bag", []])),
        "invalid OVSDB JSON: unknown OVSDB value tag \"bag\" (expected uuid, named-uuid, set or map)"
    );
    assert_eq!(
        err(json!(["uuid", "x"])),
        "invalid OVSDB JSON: invalid uuid \"x\": expected 8-4-4-4-12 hexadecimal digits"
    );
    assert_eq!(
        err(json!(["named-uuid", "1x"])),
        "invalid OVSDB JSON: invalid named-uuid \"1x\": expected [A-Za-z_][A-Za-z0-9_]*"
    );
    assert_eq!(
        err(json!(["set", [1], 2])),
        "invalid OVSDB JSON: [\"set\", ...] has more than 2 elements"
    );
    assert_eq!(
        err(json!(["map", [[1]]])),
        "invalid OVSDB JSON: map pair must be [key, value]"
    );
    assert_eq!(
        err(json!(["set"])),
        "invalid OVSDB JSON: [\"set\"] lacks its elements"
    );
    assert_eq!(
        err(json!(u64::MAX)),
        format!(
            "invalid OVSDB JSON: integer {} is out of the 64-bit signed range",
            u64::MAX
        )
    );
    assert_eq!(
        err(json!({"a": 1})),
        "invalid OVSDB JSON: invalid type: map, expected an OVSDB value (atom, [\"set\",...] or [\"map\",...])"
    );
}

fn ty(json: serde_json::Value) -> ColumnType {
    crate::schema::json::parse_column_type(&json).unwrap()
}

#[test]
fn typed_decode_needs_the_column_type() {
    let unlimited = ty(json!({"key": "string", "min": 0, "max": "unlimited"}));
    assert_eq!(
        Value::from_json_typed(&json!("a"), &unlimited).unwrap(),
        Value::set(["a"])
    );
    let real = ty(json!("real"));
    assert_eq!(
        Value::from_json_typed(&json!(3), &real).unwrap(),
        Value::scalar(3.0)
    );
    let refs = ty(json!({"key": {"type": "uuid", "refTable": "T"}, "min": 0, "max": "unlimited"}));
    assert_eq!(
        Value::from_str_typed(
            &format!(r#"["set",[["uuid","{U1}"],["named-uuid","n"]]]"#),
            &refs
        )
        .unwrap(),
        Value::Set(Set::from_atoms(vec![
            Atom::Uuid(uuid(U1)),
            Atom::NamedUuid(NamedUuid::new("n").unwrap())
        ]))
    );
    let map = ty(json!({"key": "integer", "value": "real", "min": 0, "max": "unlimited"}));
    assert_eq!(
        Value::from_str_typed(r#"["map",[[1,2],[0,1.5]]]"#, &map).unwrap(),
        Value::map([(0i64, 1.5), (1, 2.0)])
    );
}

#[test]
fn typed_decode_errors_are_exact() {
    let int = ty(json!("integer"));
    let e = |text: &str, ty: &ColumnType| Value::from_str_typed(text, ty).unwrap_err().to_string();
    assert_eq!(
        e("\"x\"", &int),
        "invalid OVSDB JSON: invalid type: string \"x\", expected integer at line 1 column 3"
    );
    assert_eq!(e("1.5", &int), "invalid OVSDB JSON: invalid type: floating point `1.5`, expected integer at line 1 column 3");
    assert_eq!(
        e(r#"["map",[]]"#, &int),
        "invalid OVSDB JSON: invalid type: array tagged \"map\", expected integer or set of integer at line 1 column 7"
    );
    let map = ty(json!({"key": "string", "value": "string", "min": 0, "max": "unlimited"}));
    assert_eq!(
        e("\"x\"", &map),
        "invalid OVSDB JSON: invalid type: bare atom \"x\", expected [\"map\",[..]] at line 1 column 3"
    );
    assert_eq!(
        e(r#"["map",[["a",1]]]"#, &map),
        "invalid OVSDB JSON: invalid type: integer `1`, expected string at line 1 column 14"
    );
    assert_eq!(
        e(r#"["set",[1"#, &int),
        "invalid OVSDB JSON: EOF while parsing a list at line 1 column 9"
    );
    assert_eq!(
        e("[1]", &int),
        "invalid OVSDB JSON: invalid type: integer `1`, expected a string at line 1 column 2"
    );
    assert_eq!(
        e("1 2", &int),
        "invalid OVSDB JSON: trailing characters at line 1 column 3"
    );
}

#[test]
fn keys_and_contains_key_cover_sets_and_maps() {
    let set = Value::set(["b", "a"]);
    let map = Value::map([("k2", 2i64), ("k1", 1i64)]);
    assert_eq!(
        set.keys().collect::<Vec<_>>(),
        [&Atom::from("a"), &Atom::from("b")]
    );
    assert_eq!(
        map.keys().collect::<Vec<_>>(),
        [&Atom::from("k1"), &Atom::from("k2")]
    );
    assert!(set.contains_key(&Atom::from("a")) && !set.contains_key(&Atom::from("k1")));
    assert!(map.contains_key(&Atom::from("k2")) && !map.contains_key(&Atom::from(2i64)));
    assert_eq!(set.pairs().count(), 0);
    let pairs: Vec<_> = map.pairs().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(
        pairs,
        [
            (Atom::from("k1"), Atom::from(1i64)),
            (Atom::from("k2"), Atom::from(2i64))
        ]
    );
}

#[test]
fn compare_3way_orders_by_size_first_as_ovsdb_does() {
    use std::cmp::Ordering::*;
    // The derived order puts ["a", "b"] before ["b"]; OVSDB's puts the smaller set first.
    let (one, two) = (Value::set(["b"]), Value::set(["a", "b"]));
    assert_eq!(one.cmp(&two), Greater);
    assert_eq!(one.compare_3way(&two), Less);
    assert_eq!(Value::set([1i64]).compare_3way(&Value::set([2i64])), Less);
    // Maps: keys first, then values.
    let m = |v: i64| Value::map([("k", v)]);
    assert_eq!(m(1).compare_3way(&m(2)), Less);
    assert_eq!(m(2).compare_3way(&m(2)), Equal);
    assert_eq!(Value::map([("a", 9i64)]).compare_3way(&m(1)), Less);
    // Empty set and empty map are both the empty datum.
    assert_eq!(Value::empty_set().compare_3way(&Value::empty_map()), Equal);
}
