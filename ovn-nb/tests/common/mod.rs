//! Helpers shared by the northbound integration tests: a real ovsdb-server,
//! and reading it back with the real `ovn-nbctl`.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use ovn_harness::{Db, OvsdbServer};
use serde_json::Value as Json;

/// A fresh NB ovsdb-server, or None when the tools are missing outside CI.
pub fn nb_server() -> Option<OvsdbServer> {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovn-nbctl"]) {
        return None;
    }
    Some(OvsdbServer::start(Db::Northbound).expect("start NB ovsdb-server"))
}

/// Runs `ovn-nbctl --db=<remote> args...` and returns stdout.
pub fn nbctl(remote: &str, args: &[&str]) -> String {
    let db = format!("--db={remote}");
    let mut all = vec![db.as_str()];
    all.extend_from_slice(args);
    ovn_harness::run("ovn-nbctl", &all).unwrap_or_else(|e| panic!("ovn-nbctl {args:?}: {e}"))
}

/// Every row of `table` as read by `ovn-nbctl --format=json list`, as maps from
/// column name to the OVSDB JSON value.
pub fn nbctl_rows(remote: &str, table: &str) -> Vec<BTreeMap<String, Json>> {
    let out = nbctl(remote, &["--format=json", "list", table]);
    let json: Json = serde_json::from_str(&out).expect("ovn-nbctl json");
    let headings: Vec<String> = json["headings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().to_string())
        .collect();
    json["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            headings
                .iter()
                .cloned()
                .zip(row.as_array().unwrap().iter().cloned())
                .collect()
        })
        .collect()
}

/// The row of `table` whose `column` is the string `value`.
pub fn nbctl_row(remote: &str, table: &str, column: &str, value: &str) -> BTreeMap<String, Json> {
    let rows = nbctl_rows(remote, table);
    let mut found: Vec<_> = rows
        .into_iter()
        .filter(|r| r[column] == Json::String(value.into()))
        .collect();
    assert_eq!(found.len(), 1, "exactly one {table} with {column}={value}");
    found.remove(0)
}

/// The atoms of a set value (bare atom, `["set",[...]]`), as display strings
/// (uuids as their text).
pub fn set_of(v: &Json) -> BTreeSet<String> {
    match v {
        Json::Array(a) if a.len() == 2 && a[0] == "set" => {
            a[1].as_array().unwrap().iter().map(atom).collect()
        }
        other => BTreeSet::from([atom(other)]),
    }
}

/// A `["map",[[k,v],...]]` value as string pairs.
pub fn map_of(v: &Json) -> BTreeMap<String, String> {
    let pairs = v
        .as_array()
        .and_then(|a| a.get(1))
        .and_then(Json::as_array)
        .expect("map");
    pairs.iter().map(|p| (atom(&p[0]), atom(&p[1]))).collect()
}

/// One atom as a string (uuids unwrapped).
pub fn atom(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Array(a) if a.len() == 2 && (a[0] == "uuid" || a[0] == "named-uuid") => {
            a[1].as_str().unwrap().into()
        }
        other => other.to_string(),
    }
}

/// `pairs!` helper: string map from literals.
pub fn smap(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
