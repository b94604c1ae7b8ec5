//! Choosing a server of a cluster through the `_Server` database.
//!
//! Every ovsdb-server (≥ 2.9) serves a read-only `_Server` database whose `Database`
//! table has one row per database it serves: `name`, `model` (standalone, clustered or
//! relay), `connected` (in touch with a Raft majority), `leader`, `schema` (empty until a
//! clustered member has joined), and for clustered databases `index`, the Raft log index
//! the server currently exposes.
//!
//! The rule follows Open vSwitch's C client (`lib/ovsdb-cs.c`,
//! `ovsdb_cs_check_server_db__`): accept a clustered server only if its schema is
//! present, it is connected, it is the leader (unless followers are allowed) and its
//! index is not below the highest one seen so far (a lower one would show older data);
//! accept a relay only if followers are allowed; accept a standalone server if it has the
//! schema. The client monitors the row (`monitor` v1, which sends whole rows) and drops
//! the connection as soon as the server stops qualifying, e.g. when it loses leadership.

use std::collections::HashMap;

use serde_json::{json, Value};

/// The monitor id used for the `_Server.Database` monitor.
pub(crate) const SERVER_MONITOR_ID: &str = "_Server";

/// The columns of `_Server.Database` that the check reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerDbRow {
    pub name: String,
    pub model: String,
    pub connected: bool,
    pub leader: bool,
    pub has_schema: bool,
    pub index: Option<i64>,
}

/// Rows of `_Server.Database` by uuid, kept current by the `_Server` monitor.
#[derive(Debug, Default)]
pub(crate) struct ServerWatch {
    rows: HashMap<String, ServerDbRow>,
}

/// Params of the `monitor` request for `_Server.Database`.
pub(crate) fn monitor_params() -> Vec<Value> {
    vec![
        json!("_Server"),
        json!(SERVER_MONITOR_ID),
        json!({"Database": {"columns": ["name", "model", "connected", "leader", "schema", "index"]}}),
    ]
}

impl ServerWatch {
    /// Applies `monitor` v1 table-updates: `{"Database": {uuid: {"old"?, "new"?}}}`.
    pub fn apply(&mut self, updates: &Value) -> Result<(), String> {
        let Some(table) = updates.get("Database").and_then(Value::as_object) else {
            return Ok(());
        };
        for (uuid, change) in table {
            match change.get("new") {
                Some(new) => {
                    let row = parse_row(new).ok_or_else(|| format!("bad _Server row {new}"))?;
                    self.rows.insert(uuid.clone(), row);
                }
                None => {
                    self.rows.remove(uuid);
                }
            }
        }
        Ok(())
    }

    pub fn row(&self, database: &str) -> Option<&ServerDbRow> {
        self.rows.values().find(|row| row.name == database)
    }
}

fn parse_row(new: &Value) -> Option<ServerDbRow> {
    // Optional columns are bare atoms when set and ["set",[]] when empty.
    let optional = |v: Option<&Value>| v.filter(|v| !v.is_array()).cloned();
    Some(ServerDbRow {
        name: new.get("name")?.as_str()?.to_owned(),
        model: new.get("model")?.as_str()?.to_owned(),
        connected: new.get("connected")?.as_bool()?,
        leader: new.get("leader")?.as_bool()?,
        has_schema: optional(new.get("schema"))
            .is_some_and(|s| s.as_str().is_some_and(|s| !s.is_empty())),
        index: optional(new.get("index")).and_then(|v| v.as_i64()),
    })
}

/// Decides whether a server may be used for `database`; on success raises `min_index`
/// to the server's index. The error says why not.
pub(crate) fn check_server(
    row: Option<&ServerDbRow>,
    database: &str,
    leader_only: bool,
    min_index: &mut i64,
) -> Result<(), String> {
    let row = row.ok_or_else(|| format!("server does not serve database {database:?}"))?;
    if !row.has_schema {
        return Err(format!(
            "database {database:?} has no schema yet (cluster not joined)"
        ));
    }
    match row.model.as_str() {
        "clustered" => {
            if !row.connected {
                return Err(format!(
                    "cluster member for {database:?} is not connected to a majority"
                ));
            }
            if leader_only && !row.leader {
                return Err(format!("server is not the leader for {database:?}"));
            }
            let index = row.index.unwrap_or(0);
            if index < *min_index {
                return Err(format!(
                    "server's index {index} for {database:?} is below {min_index} already seen (stale data)"
                ));
            }
            *min_index = index;
            Ok(())
        }
        "relay" if leader_only => Err(format!(
            "server is a relay for {database:?} and leader-only is set"
        )),
        "relay" if !row.connected => Err(format!(
            "relay for {database:?} is not connected to its source"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(model: &str, connected: bool, leader: bool, index: Option<i64>) -> ServerDbRow {
        ServerDbRow {
            name: "NB".into(),
            model: model.into(),
            connected,
            leader,
            has_schema: true,
            index,
        }
    }

    #[test]
    fn clustered_rules_follow_ovsdb_cs() {
        let mut min = 0;
        assert!(check_server(
            Some(&row("clustered", true, true, Some(5))),
            "NB",
            true,
            &mut min
        )
        .is_ok());
        assert_eq!(min, 5);
        let stale = check_server(
            Some(&row("clustered", true, true, Some(4))),
            "NB",
            true,
            &mut min,
        );
        assert!(stale.unwrap_err().contains("below 5"));
        let follower = check_server(
            Some(&row("clustered", true, false, Some(9))),
            "NB",
            true,
            &mut min,
        );
        assert!(follower.unwrap_err().contains("not the leader"));
        assert!(check_server(
            Some(&row("clustered", true, false, Some(9))),
            "NB",
            false,
            &mut min
        )
        .is_ok());
        let cut_off = check_server(
            Some(&row("clustered", false, true, Some(9))),
            "NB",
            true,
            &mut min,
        );
        assert!(cut_off.unwrap_err().contains("majority"));
        assert!(check_server(None, "NB", true, &mut min)
            .unwrap_err()
            .contains("does not serve"));
        assert!(check_server(
            Some(&row("standalone", true, true, None)),
            "NB",
            true,
            &mut min
        )
        .is_ok());
        assert!(
            check_server(Some(&row("relay", true, false, None)), "NB", true, &mut min).is_err()
        );
    }

    #[test]
    fn v1_rows_with_empty_optionals_parse() {
        let mut watch = ServerWatch::default();
        let updates = json!({"Database": {"u1": {"new": {"name": "NB", "model": "standalone",
            "connected": true, "leader": true, "schema": "{}", "index": ["set", []]}}}});
        watch.apply(&updates).unwrap();
        assert_eq!(watch.row("NB").unwrap().index, None);
        assert!(watch.row("NB").unwrap().has_schema);
        watch
            .apply(&json!({"Database": {"u1": {"old": {}}}}))
            .unwrap();
        assert!(watch.row("NB").is_none());
    }
}
