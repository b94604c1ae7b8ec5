//! The `_Server` database schema.

/// The schema of the `_Server` database every ovsdb-server (2.9+) serves, describing its
/// databases (`Database` table: `name`, `model`, `connected`, `leader`, `schema`, `cid`,
/// `sid`, `index`); clients use it to find a cluster's leader.
///
/// Origin: `ovsdb/_server.ovsschema` v1.2.0 from Open vSwitch, as returned by
/// `ovsdb-client get-schema unix:<sock> _Server` from Debian's ovsdb-server 3.1.0.
pub const SERVER_SCHEMA_JSON: &str = r#"{"cksum":"3009684573 744","name":"_Server","tables":{"Database":{"columns":{"cid":{"type":{"key":"uuid","min":0}},"connected":{"type":"boolean"},"index":{"type":{"key":"integer","min":0}},"leader":{"type":"boolean"},"model":{"type":{"key":{"enum":["set",["clustered","relay","standalone"]],"type":"string"}}},"name":{"type":"string"},"schema":{"type":{"key":"string","min":0}},"sid":{"type":{"key":"uuid","min":0}}}}},"version":"1.2.0"}"#;
