//! The main job, for now: a real OVN central (NB + SB `ovsdb-server` and `ovn-northd`)
//! brought up by `ovn-harness` under a temporary directory, a small logical network written
//! in one transaction through this project's OVSDB client, and what `ovn-northd` compiled
//! from it, read back from the Southbound database through the same client.
//!
//! The network: router `lr0` with two router ports, switches `sw0` (pods `p1`, `p2`) and
//! `sw1` (pod `p3`), each switch attached to the router by a `router`-type port.
//!
//! Waiting for northd works as `ovn-nbctl --wait=sb` does: bump `NB_Global.nb_cfg` in the
//! same transaction and wait until northd copies it to `NB_Global.sb_cfg`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ovn_harness::OvnCentral;
use ovsdb::{Atom, Client, Mutation, NamedUuid, Operation, Row, Value};

const NB: &str = "OVN_Northbound";
const SB: &str = "OVN_Southbound";

fn named(name: &str) -> Result<NamedUuid> {
    NamedUuid::new(name).with_context(|| format!("bad named uuid {name}"))
}

fn refs(names: &[&str]) -> Result<Value> {
    let atoms = names
        .iter()
        .map(|n| named(n).map(Atom::from))
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::set(atoms))
}

/// A logical switch port in `sw`, with `addresses`.
fn lsp(uuid_name: &str, name: &str, addresses: &str) -> Result<Operation> {
    let row = Row::new()
        .with("name", Value::scalar(name))
        .with("addresses", Value::set([addresses]));
    Ok(Operation::insert("Logical_Switch_Port", row)
        .with_uuid_name(named(uuid_name)?)
        .into())
}

/// A `router`-type switch port peering with router port `peer`.
fn router_lsp(uuid_name: &str, name: &str, peer: &str) -> Result<Operation> {
    let row = Row::new()
        .with("name", Value::scalar(name))
        .with("type", Value::scalar("router"))
        .with("addresses", Value::set(["router"]))
        .with("options", Value::map([("router-port", peer)]));
    Ok(Operation::insert("Logical_Switch_Port", row)
        .with_uuid_name(named(uuid_name)?)
        .into())
}

fn lrp(uuid_name: &str, name: &str, mac: &str, network: &str) -> Result<Operation> {
    let row = Row::new()
        .with("name", Value::scalar(name))
        .with("mac", Value::scalar(mac))
        .with("networks", Value::set([network]));
    Ok(Operation::insert("Logical_Router_Port", row)
        .with_uuid_name(named(uuid_name)?)
        .into())
}

fn logical_network() -> Result<Vec<Operation>> {
    Ok(vec![
        lrp("lrp0", "lr0-sw0", "00:00:00:00:ff:01", "10.0.0.1/24")?,
        lrp("lrp1", "lr0-sw1", "00:00:00:00:ff:02", "10.0.1.1/24")?,
        Operation::insert(
            "Logical_Router",
            Row::new()
                .with("name", Value::scalar("lr0"))
                .with("ports", refs(&["lrp0", "lrp1"])?),
        )
        .into(),
        lsp("p1", "p1", "50:54:00:00:00:01 10.0.0.11")?,
        lsp("p2", "p2", "50:54:00:00:00:02 10.0.0.12")?,
        lsp("p3", "p3", "50:54:00:00:01:03 10.0.1.13")?,
        router_lsp("rp0", "sw0-lr0", "lr0-sw0")?,
        router_lsp("rp1", "sw1-lr0", "lr0-sw1")?,
        Operation::insert(
            "Logical_Switch",
            Row::new()
                .with("name", Value::scalar("sw0"))
                .with("ports", refs(&["p1", "p2", "rp0"])?),
        )
        .into(),
        Operation::insert(
            "Logical_Switch",
            Row::new()
                .with("name", Value::scalar("sw1"))
                .with("ports", refs(&["p3", "rp1"])?),
        )
        .into(),
        // NB_Global has exactly one row (maxRows 1): no condition needed.
        Operation::mutate("NB_Global")
            .with_mutation(Mutation::add("nb_cfg", Value::scalar(1i64)))
            .into(),
    ])
}

async fn select(client: &Client, db: &str, table: &str) -> Result<Vec<Row>> {
    let results = client
        .transact(db, &[Operation::select(table).into()])
        .await
        .with_context(|| format!("select {table} from {db}"))?;
    Ok(results
        .first()
        .and_then(|r| r.rows())
        .map(<[Row]>::to_vec)
        .unwrap_or_default())
}

async fn nb_cfg(nb: &Client) -> Result<(i64, i64)> {
    let rows = select(nb, NB, "NB_Global").await?;
    let row = rows.first().context("NB_Global has no row")?;
    let get = |c: &str| row.get(c).and_then(Value::as_integer).unwrap_or(0);
    Ok((get("nb_cfg"), get("sb_cfg")))
}

fn text(row: &Row, column: &str) -> String {
    row.get(column)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn external_id(row: &Row, key: &str) -> String {
    row.get("external_ids")
        .and_then(Value::as_map)
        .and_then(|m| m.get_str(key))
        .and_then(Atom::as_str)
        .unwrap_or_default()
        .to_string()
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovn-northd", "ovn-nbctl"]) {
        bail!("OVS/OVN are not installed: run scripts/install-deps.sh first");
    }
    let central = OvnCentral::start().context("starting NB, SB and ovn-northd")?;
    println!(
        "OVN central up: NB {}  SB {}",
        central.nb_remote(),
        central.sb_remote()
    );

    let nb = Client::connect(&central.nb_remote()).await?;
    let sb = Client::connect(&central.sb_remote()).await?;

    let results = nb.transact(NB, &logical_network()?).await?;
    let inserted = results.iter().filter(|r| r.uuid().is_some()).count();
    println!("wrote 2 switches, 1 router, 7 ports in one transaction ({inserted} rows)");

    let start = Instant::now();
    loop {
        let (nb_cfg_now, sb_cfg) = nb_cfg(&nb).await?;
        if sb_cfg >= nb_cfg_now {
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            bail!("ovn-northd did not catch up (nb_cfg {nb_cfg_now}, sb_cfg {sb_cfg})");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("ovn-northd compiled it in {:?}\n", start.elapsed());

    print_southbound(&sb).await
}

async fn print_southbound(sb: &Client) -> Result<()> {
    let datapaths = select(sb, SB, "Datapath_Binding").await?;
    let mut dp_names = BTreeMap::new();
    println!("Datapath_Binding:");
    for dp in &datapaths {
        let name = external_id(dp, "name");
        let key = dp
            .get("tunnel_key")
            .and_then(Value::as_integer)
            .unwrap_or(0);
        println!("  {name:<6} tunnel_key={key}");
        if let Some(uuid) = dp.uuid() {
            dp_names.insert(uuid, name);
        }
    }
    println!("Port_Binding:");
    let mut ports = select(sb, SB, "Port_Binding").await?;
    ports.sort_by_key(|p| text(p, "logical_port"));
    for port in &ports {
        let dp = port
            .get("datapath")
            .and_then(Value::as_uuid)
            .and_then(|u| dp_names.get(&u).cloned())
            .unwrap_or_default();
        let kind = text(port, "type");
        println!(
            "  {:<8} on {dp:<4} type={}",
            text(port, "logical_port"),
            if kind.is_empty() { "vif" } else { &kind }
        );
    }
    let flows = select(sb, SB, "Logical_Flow").await?;
    let mut per_pipeline: BTreeMap<(String, String), usize> = BTreeMap::new();
    for flow in &flows {
        let dp = flow
            .get("logical_datapath")
            .and_then(Value::as_uuid)
            .and_then(|u| dp_names.get(&u).cloned())
            .unwrap_or_else(|| "(dp group)".into());
        *per_pipeline
            .entry((dp, text(flow, "pipeline")))
            .or_default() += 1;
    }
    println!("Logical_Flow: {} flows", flows.len());
    for ((dp, pipeline), n) in &per_pipeline {
        println!("  {dp:<8} {pipeline:<7} {n}");
    }
    let mut samples: Vec<&Row> = flows
        .iter()
        .filter(|f| text(f, "match").contains("10.0.1.13"))
        .collect();
    samples.sort_by_key(|f| text(f, "match"));
    println!("flows that match pod p3's address 10.0.1.13:");
    for flow in samples.iter().take(6) {
        println!(
            "  table={} priority={} match=({}) action=({})",
            flow.get("table_id")
                .and_then(Value::as_integer)
                .unwrap_or(0),
            flow.get("priority")
                .and_then(Value::as_integer)
                .unwrap_or(0),
            text(flow, "match"),
            text(flow, "actions"),
        );
    }
    Ok(())
}
