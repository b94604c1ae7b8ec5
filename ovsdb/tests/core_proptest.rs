//! Round-trip property tests: atoms, sets, maps and rows (typed and untyped), schemas and
//! operations survive encode -> decode unchanged.

use std::collections::BTreeMap;

use ovsdb::operation::{Condition, Function, Mutation, Mutator, Operation, WaitUntil};
use ovsdb::schema::{BaseType, ColumnSchema, ColumnType, DatabaseSchema, RefType, TableSchema};
use ovsdb::value::{Atom, AtomType, NamedUuid, Row, Uuid, Value};
use proptest::prelude::*;

fn atom_type() -> impl Strategy<Value = AtomType> {
    prop_oneof![
        Just(AtomType::Integer),
        Just(AtomType::Real),
        Just(AtomType::Boolean),
        Just(AtomType::String),
        Just(AtomType::Uuid),
    ]
}

fn uuid() -> impl Strategy<Value = Uuid> {
    any::<[u8; 16]>().prop_map(Uuid::from_bytes)
}

fn named_uuid() -> impl Strategy<Value = NamedUuid> {
    "[A-Za-z_][A-Za-z0-9_]{0,10}".prop_map(|s| NamedUuid::new(s).unwrap())
}

fn atom_of(ty: AtomType) -> BoxedStrategy<Atom> {
    match ty {
        AtomType::Integer => any::<i64>().prop_map(Atom::Integer).boxed(),
        AtomType::Real => prop_oneof![
            any::<f64>().prop_filter("finite", |r| r.is_finite()),
            (-1000i64..1000).prop_map(|i| i as f64),
        ]
        .prop_map(Atom::Real)
        .boxed(),
        AtomType::Boolean => any::<bool>().prop_map(Atom::Boolean).boxed(),
        AtomType::String => any::<String>().prop_map(Atom::String).boxed(),
        AtomType::Uuid => prop_oneof![
            uuid().prop_map(Atom::Uuid),
            named_uuid().prop_map(Atom::NamedUuid)
        ]
        .boxed(),
    }
}

fn set_type() -> impl Strategy<Value = ColumnType> {
    (
        atom_type(),
        0u64..=1,
        prop_oneof![Just(None), (1u64..5).prop_map(Some)],
    )
        .prop_map(|(ty, min, max)| ColumnType {
            key: BaseType::new(ty),
            value: None,
            min: min.min(max.unwrap_or(1)),
            max,
        })
}

fn map_type() -> impl Strategy<Value = ColumnType> {
    (atom_type(), atom_type()).prop_map(|(k, v)| ColumnType {
        key: BaseType::new(k),
        value: Some(BaseType::new(v)),
        min: 0,
        max: None,
    })
}

/// A column type and a value of that type.
fn typed_value() -> impl Strategy<Value = (ColumnType, Value)> {
    prop_oneof![set_type(), map_type()].prop_flat_map(|ty| {
        let value = match &ty.value {
            None => proptest::collection::vec(atom_of(ty.key.atom_type), 0..5)
                .prop_map(|atoms| Value::Set(atoms.into_iter().collect()))
                .boxed(),
            Some(v) => {
                proptest::collection::vec((atom_of(ty.key.atom_type), atom_of(v.atom_type)), 0..5)
                    .prop_map(|pairs| Value::Map(pairs.into_iter().collect()))
                    .boxed()
            }
        };
        (Just(ty), value)
    })
}

fn any_value() -> impl Strategy<Value = Value> {
    typed_value().prop_map(|(_, v)| v)
}

fn row() -> impl Strategy<Value = Row> {
    proptest::collection::btree_map("[a-z][a-z_]{0,6}", any_value(), 0..4)
        .prop_map(|m| m.into_iter().collect())
}

proptest! {
    #[test]
    fn values_round_trip_with_their_type((ty, value) in typed_value()) {
        let text = serde_json::to_string(&value).unwrap();
        prop_assert_eq!(&Value::from_str_typed(&text, &ty).unwrap(), &value);
        prop_assert_eq!(Value::from_json_typed(&value.to_json(), &ty).unwrap(), value);
    }

    #[test]
    fn values_round_trip_untyped(value in any_value()) {
        prop_assert_eq!(Value::from_json(&value.to_json()).unwrap(), value);
    }

    #[test]
    fn atoms_round_trip(atom in atom_type().prop_flat_map(atom_of)) {
        let json = serde_json::to_value(&atom).unwrap();
        prop_assert_eq!(&Atom::from_json(&json).unwrap(), &atom);
        prop_assert_eq!(Atom::from_json_typed(&json, &BaseType::new(atom.atom_type())).unwrap(), atom);
    }

    #[test]
    fn rows_round_trip(row in row()) {
        let text = serde_json::to_string(&row).unwrap();
        prop_assert_eq!(serde_json::from_str::<Row>(&text).unwrap(), row);
    }

    #[test]
    fn operations_round_trip(op in operation()) {
        let text = serde_json::to_string(&op).unwrap();
        prop_assert_eq!(serde_json::from_str::<Operation>(&text).unwrap(), op);
    }

    #[test]
    fn schemas_round_trip(schema in schema()) {
        let json = schema.to_json();
        prop_assert_eq!(&DatabaseSchema::from_json(&json).unwrap(), &schema);
        let text = serde_json::to_string(&schema).unwrap();
        prop_assert_eq!(DatabaseSchema::from_json_str(&text).unwrap(), schema);
    }
}

fn condition() -> impl Strategy<Value = Condition> {
    let function = prop_oneof![
        Just(Function::Equal),
        Just(Function::NotEqual),
        Just(Function::Includes),
        Just(Function::Excludes),
        Just(Function::LessThan),
        Just(Function::LessThanOrEqual),
        Just(Function::GreaterThan),
        Just(Function::GreaterThanOrEqual),
    ];
    prop_oneof![
        any::<bool>().prop_map(Condition::Constant),
        ("[a-z_]{1,8}", function, any_value()).prop_map(|(c, f, v)| Condition::new(c, f, v)),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let mutator = prop_oneof![
        Just(Mutator::Add),
        Just(Mutator::Subtract),
        Just(Mutator::Multiply),
        Just(Mutator::Divide),
        Just(Mutator::Modulo),
        Just(Mutator::Insert),
        Just(Mutator::Delete),
    ];
    ("[a-z_]{1,8}", mutator, any_value()).prop_map(|(c, m, v)| Mutation::new(c, m, v))
}

fn operation() -> impl Strategy<Value = Operation> {
    let table = "[A-Z][a-z_]{0,8}";
    let conditions = || proptest::collection::vec(condition(), 0..3);
    prop_oneof![
        (
            table,
            row(),
            proptest::option::of(named_uuid()),
            proptest::option::of(uuid())
        )
            .prop_map(|(t, r, n, u)| {
                let mut insert = Operation::insert(t, r);
                insert.uuid_name = n;
                insert.uuid = u;
                insert.into()
            }),
        (
            table,
            conditions(),
            proptest::option::of(proptest::collection::vec("[a-z]{1,5}", 0..3))
        )
            .prop_map(|(t, c, cols)| {
                let mut select = Operation::select(t).with_conditions(c);
                select.columns = cols;
                select.into()
            }),
        (table, conditions(), row())
            .prop_map(|(t, c, r)| Operation::update(t, r).with_conditions(c).into()),
        (
            table,
            conditions(),
            proptest::collection::vec(mutation(), 0..3)
        )
            .prop_map(|(t, c, m)| {
                let mut mutate = Operation::mutate(t).with_conditions(c);
                mutate.mutations = m;
                mutate.into()
            }),
        (table, conditions()).prop_map(|(t, c)| Operation::delete(t).with_conditions(c).into()),
        (
            table,
            conditions(),
            proptest::option::of(0u64..10_000),
            any::<bool>(),
            proptest::collection::vec(row(), 0..2)
        )
            .prop_map(|(t, c, timeout, eq, rows)| {
                let until = if eq {
                    WaitUntil::Equal
                } else {
                    WaitUntil::NotEqual
                };
                let mut wait = Operation::wait(t, ["c"], until, rows).with_conditions(c);
                wait.timeout = timeout;
                wait.into()
            }),
        any::<bool>().prop_map(Operation::commit),
        Just(Operation::abort()),
        any::<String>().prop_map(Operation::comment),
        "[a-z_]{1,8}".prop_map(Operation::assert_lock),
    ]
}

/// A base type with random constraints (and, for uuids, a reference to table `T0`).
fn base_type() -> impl Strategy<Value = BaseType> {
    (
        atom_type(),
        proptest::option::of(any::<i64>()),
        proptest::option::of(0u64..100),
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(proptest::collection::vec("[a-z]{1,5}", 1..4)),
    )
        .prop_map(|(ty, int, len, has_ref, weak, names)| {
            let mut base = BaseType::new(ty);
            match ty {
                AtomType::Integer => base.min_integer = int,
                AtomType::Real => base.max_real = int.map(|i| (i % 1000) as f64 + 0.5),
                AtomType::String => {
                    base.max_length = len;
                    base.enum_values = names.map(|n| n.into_iter().map(Atom::String).collect());
                }
                AtomType::Uuid if has_ref => {
                    base.ref_table = Some("T0".into());
                    base.ref_type = if weak { RefType::Weak } else { RefType::Strong };
                }
                _ => {}
            }
            base
        })
}

fn column_type() -> impl Strategy<Value = ColumnType> {
    (
        base_type(),
        proptest::option::of(base_type()),
        0u64..=1,
        prop_oneof![Just(None), (1u64..100).prop_map(Some)],
    )
        .prop_map(|(key, value, min, max)| ColumnType {
            key,
            value,
            min: min.min(max.unwrap_or(1)),
            max,
        })
}

fn schema() -> impl Strategy<Value = DatabaseSchema> {
    let table = (
        proptest::collection::btree_map(
            "[a-z][a-z0-9_]{0,6}",
            (column_type(), any::<bool>(), any::<bool>()),
            1..5,
        ),
        proptest::option::of(1u64..10),
        any::<bool>(),
        any::<bool>(),
    );
    proptest::collection::vec(table, 1..4).prop_map(|tables| {
        let tables: BTreeMap<String, TableSchema> = tables
            .into_iter()
            .enumerate()
            .map(|(i, (columns, max_rows, is_root, indexed))| {
                let name = format!("T{i}");
                let first = columns.keys().next().cloned();
                let columns = columns
                    .into_iter()
                    .map(|(c, (ty, ephemeral, mutable))| {
                        let column = ColumnSchema {
                            ephemeral,
                            mutable,
                            ..ColumnSchema::new(c.as_str(), ty)
                        };
                        (c, column)
                    })
                    .collect();
                let indexes = if indexed {
                    first.into_iter().map(|c| vec![c]).collect()
                } else {
                    Vec::new()
                };
                let table = TableSchema {
                    name: name.as_str().into(),
                    columns,
                    max_rows,
                    is_root,
                    indexes,
                };
                (name, table)
            })
            .collect();
        DatabaseSchema {
            name: "Prop".into(),
            version: "1.2.3".into(),
            cksum: Some("1 2".into()),
            tables,
        }
    })
}
