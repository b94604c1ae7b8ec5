//! A node's OVN chassis in the southbound database: found by `hostname` or by the
//! `external_ids:node` tag Kube-OVN puts on it (`UpdateChassisTag`), tagged, and
//! deleted with the node (`DeleteChassisByHost`), with its `Chassis_Private` row.

use std::collections::BTreeMap;

use futures::{Stream, StreamExt};
use ovn_sb::{Chassis, ChassisPrivate, SbClient, SbError};
use ovsdb::cache::RowEvent;
use ovsdb::typed::{self, Stored, Table};

use crate::bootstrap::VENDOR;

/// The chassis of `node`: `hostname == node` or `external_ids:node == node`.
pub fn chassis_of(sb: &SbClient, node: &str) -> Result<Vec<Stored<Chassis>>, SbError> {
    Ok(sb.store().filter::<Chassis>(|c| {
        c.hostname == node || c.external_ids.get("node").map(String::as_str) == Some(node)
    })?)
}

/// The tag Kube-OVN puts on a node's chassis.
fn tag(node: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("vendor".to_string(), VENDOR.to_string()),
        ("node".to_string(), node.to_string()),
    ])
}

/// Tags `chassis` as `node`'s unless it already is; whether a write was sent.
pub async fn tag_chassis(
    sb: &SbClient,
    chassis: &Stored<Chassis>,
    node: &str,
) -> Result<bool, SbError> {
    let wanted = tag(node);
    if wanted
        .iter()
        .all(|(k, v)| chassis.external_ids.get(k) == Some(v))
    {
        return Ok(false);
    }
    let keys: Vec<String> = wanted.keys().cloned().collect();
    // drop any stale value first: an OVSDB map insert keeps an existing key's value
    let op = typed::mutate(Chassis::ROW_UUID.eq(chassis.id)).with([
        Chassis::EXTERNAL_IDS.delete_keys(keys),
        Chassis::EXTERNAL_IDS.insert(wanted),
    ]);
    sb.db().transact(vec![op.into()]).await?;
    Ok(true)
}

/// Deletes every chassis of `node` and its `Chassis_Private` row; how many chassis.
pub async fn delete_chassis(sb: &SbClient, node: &str) -> Result<usize, SbError> {
    let doomed = chassis_of(sb, node)?;
    let mut ops = Vec::new();
    for chassis in &doomed {
        ops.push(typed::delete(Chassis::ROW_UUID.eq(chassis.id)).into());
        ops.push(typed::delete(ChassisPrivate::NAME.eq(chassis.name.clone())).into());
    }
    sb.db().transact(ops).await?;
    Ok(doomed.len())
}

/// Fires once per replica batch that touched the `Chassis` table.
pub fn chassis_changes(sb: &SbClient) -> impl Stream<Item = ()> + Send + 'static {
    sb.store().raw().subscribe().filter_map(|batch| async move {
        batch
            .events
            .iter()
            .any(|event| event_table(event) == Chassis::TABLE_NAME)
            .then_some(())
    })
}

fn event_table(event: &RowEvent) -> &str {
    match event {
        RowEvent::Insert { table, .. }
        | RowEvent::Update { table, .. }
        | RowEvent::Delete { table, .. } => table,
    }
}
