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
    /// The cluster's id (`cid`), absent until a clustered member has joined.
    pub cid: Option<String>,
}

/// What the client has seen of a clustered database, so that it never goes back in time.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The cluster the index below belongs to.
    pub cluster: Option<String>,
    /// Highest Raft index seen in that cluster.
    pub min_index: i64,
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
        json!({"Database": {"columns": ["name", "model", "connected", "leader", "schema", "index", "cid"]}}),
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
        // A uuid is ["uuid", "..."]; an empty optional is ["set", []].
        cid: new
            .get("cid")
            .and_then(|v| match v.as_array().map(Vec::as_slice) {
                Some([tag, id]) if tag == "uuid" => id.as_str().map(str::to_owned),
                _ => None,
            }),
    })
}

/// Decides whether a server may be used for `database`; on success raises the index
/// `seen` to the server's. The error says why not.
///
/// The index only means something within one cluster: a server of another cluster (the
/// database was restored from a backup, or the cluster re-created) starts the guard over,
/// as `ovsdb-cs.c` does when the cluster id changes, instead of being refused forever.
pub(crate) fn check_server(
    row: Option<&ServerDbRow>,
    database: &str,
    leader_only: bool,
    seen: &mut Seen,
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
            if row.cid.is_some() && row.cid != seen.cluster {
                if let Some(old) = &seen.cluster {
                    tracing::warn!(database, old, new = ?row.cid, "another cluster serves the database; its index starts over");
                }
                *seen = Seen {
                    cluster: row.cid.clone(),
                    min_index: 0,
                };
            }
            let index = row.index.unwrap_or(0);
            if index < seen.min_index {
                return Err(format!(
                    "server's index {index} for {database:?} is below {} already seen (stale data)",
                    seen.min_index
                ));
            }
            seen.min_index = index;
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
            cid: Some("c1".into()),
        }
    }

    #[test]
    fn clustered_rules_follow_ovsdb_cs() {
        let mut min = Seen::default();
        assert!(check_server(
            Some(&row("clustered", true, true, Some(5))),
            "NB",
            true,
            &mut min
        )
        .is_ok());
        assert_eq!(min.min_index, 5);
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
    fn another_cluster_starts_the_index_guard_over() {
        let mut seen = Seen::default();
        let high = row("clustered", true, true, Some(500));
        check_server(Some(&high), "NB", true, &mut seen).unwrap();
        let mut restored = row("clustered", true, true, Some(3));
        assert!(check_server(Some(&restored), "NB", true, &mut seen.clone()).is_err());
        restored.cid = Some("c2".into());
        check_server(Some(&restored), "NB", true, &mut seen).unwrap();
        assert_eq!(
            seen,
            Seen {
                cluster: Some("c2".into()),
                min_index: 3
            }
        );
    }

    #[test]
    fn v1_rows_with_empty_optionals_parse() {
        let mut watch = ServerWatch::default();
        let updates = json!({"Database": {"u1": {"new": {"name": "NB", "model": "standalone",
            "connected": true, "leader": true, "schema": "{}", "index": ["set", []],
            "cid": ["uuid", "0f1c5e4e-9c2a-4a8e-8a53-3b2f5d7f7e11"]}}}});
        watch.apply(&updates).unwrap();
        assert_eq!(watch.row("NB").unwrap().index, None);
        assert!(watch.row("NB").unwrap().has_schema);
        assert_eq!(
            watch.row("NB").unwrap().cid.as_deref(),
            Some("0f1c5e4e-9c2a-4a8e-8a53-3b2f5d7f7e11")
        );
        watch
            .apply(&json!({"Database": {"u1": {"old": {}}}}))
            .unwrap();
        assert!(watch.row("NB").is_none());
    }
}
