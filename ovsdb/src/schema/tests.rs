use serde_json::json;

use super::*;

fn parse(tables: serde_json::Value) -> Result<DatabaseSchema, SchemaError> {
    DatabaseSchema::from_json(&json!({"name": "T", "version": "1.0.0", "tables": tables}))
}

fn column_error(ty: serde_json::Value) -> String {
    parse(json!({"A": {"columns": {"c": {"type": ty}}}}))
        .unwrap_err()
        .to_string()
}

#[test]
fn type_errors_name_table_and_column() {
    assert_eq!(
        column_error(json!("text")),
        "table A, column c: invalid type: unknown atomic type \"text\""
    );
    assert_eq!(
        column_error(json!({"value": "string"})),
        "table A, column c: invalid type: missing \"key\""
    );
    assert_eq!(
        column_error(json!({"key": "string", "min": 2})),
        "table A, column c: invalid type: \"min\" must be 0 or 1, found 2"
    );
    assert_eq!(
        column_error(json!({"key": "string", "max": 0})),
        "table A, column c: invalid type: \"max\" must be a positive integer or \"unlimited\", found 0"
    );
    assert_eq!(
        column_error(json!({"key": "string", "colour": 1})),
        "table A, column c: invalid type: unknown member \"colour\""
    );
    assert_eq!(
        column_error(json!({"key": {"type": "string", "enum": ["set", [1]]}})),
        "table A, column c: invalid type: \"enum\": invalid OVSDB JSON: invalid type: integer `1`, expected string"
    );
    assert_eq!(
        column_error(json!({"key": {"type": "integer", "refTable": "A"}})),
        "table A, column c: invalid type: \"refTable\" must be a table name on a uuid type, found \"A\""
    );
    assert_eq!(
        column_error(json!({"key": {"type": "uuid", "refTable": "A", "refType": "soft"}})),
        "table A, column c: invalid type: \"refType\" must be \"strong\" or \"weak\", found \"soft\""
    );
    assert_eq!(
        column_error(json!({"key": {"type": "integer", "minInteger": "0"}})),
        "table A, column c: invalid type: \"minInteger\" must be an integer, found \"0\""
    );
}

#[test]
fn structural_errors() {
    let unknown_ref = parse(
        json!({"A": {"columns": {"r": {"type": {"key": {"type": "uuid", "refTable": "B"}}}}}}),
    );
    assert_eq!(
        unknown_ref.unwrap_err(),
        SchemaError::UnknownRefTable {
            table: "A".into(),
            column: "r".into(),
            ref_table: "B".into()
        }
    );
    let bad_index =
        parse(json!({"A": {"columns": {"c": {"type": "string"}}, "indexes": [["c", "d"]]}}));
    assert_eq!(
        bad_index.unwrap_err().to_string(),
        "table A: index [\"c\", \"d\"] names unknown column \"d\""
    );
    let reserved = parse(json!({"A": {"columns": {"_c": {"type": "string"}}}}));
    assert_eq!(
        reserved.unwrap_err().to_string(),
        "invalid column name \"_c\""
    );
    let bad_table = parse(json!({"1A": {"columns": {}}}));
    assert_eq!(
        bad_table.unwrap_err().to_string(),
        "invalid table name \"1A\""
    );
    let not_json = DatabaseSchema::from_json_str("{\"name\":");
    assert_eq!(
        not_json.unwrap_err().to_string(),
        "malformed schema JSON: EOF while parsing a value at line 1 column 8"
    );
    let no_version = DatabaseSchema::from_json_str(r#"{"name":"T","tables":{}}"#);
    assert_eq!(
        no_version.unwrap_err().to_string(),
        "malformed schema JSON: missing field `version` at line 1 column 24"
    );
}

#[test]
fn server_schema_is_built_in() {
    let server = DatabaseSchema::server();
    assert_eq!(server.name, "_Server");
    assert_eq!(server.version, "1.2.0");
    let database = server.table("Database").unwrap();
    let model = &database.column("model").unwrap().type_;
    assert!(model.is_scalar());
    assert_eq!(model.key.enum_values.as_ref().unwrap().len(), 3);
    assert!(database.column("index").unwrap().type_.is_optional());
    assert!(database.column("_uuid").unwrap().type_.is_scalar());
    assert_eq!(
        DatabaseSchema::from_json(&server.to_json()).unwrap(),
        server
    );
}

#[test]
fn defaults_per_type() {
    let scalar = ColumnType::scalar(AtomType::Integer);
    assert_eq!(scalar.default_value(), Value::scalar(0i64));
    let optional = ColumnType {
        min: 0,
        ..ColumnType::scalar(AtomType::String)
    };
    assert_eq!(optional.default_value(), Value::empty_set());
    let map = ColumnType {
        value: Some(BaseType::new(AtomType::String)),
        min: 0,
        max: None,
        ..optional
    };
    assert_eq!(map.default_value(), Value::empty_map());
    // The empty value ignores `min`: a scalar's is the empty set, a map's the empty map.
    assert_eq!(scalar.empty_value(), Value::empty_set());
    assert_eq!(map.empty_value(), Value::empty_map());
}
