//! `ovn-nbctl show [SWITCH|ROUTER]`: the tree of switches (ports, types, addresses,
//! router-port links) and routers (ports, MACs, networks, gateway chassis, NAT), printed
//! exactly as OVN 23.03's `print_ls()`/`print_lr()` do. Ports and NAT rules appear in the
//! order of their UUIDs (set order); switches and routers in IDL order.

use super::switch::{by_name_or_uuid, ls_get, LS, LSP};
use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::Ctx;
use crate::dbctl::idl::Row;
use anyhow::Result;
use std::fmt::Write;

/// ` (alias)` from an `external_ids` key, as Neutron names things.
fn alias(row: &Row, key: &str) -> String {
    row.map_get("external_ids", key)
        .map(|a| format!(" (aka {a})"))
        .unwrap_or_default()
}

fn quoted_list(items: &[&str]) -> String {
    let inner: Vec<String> = items.iter().map(|s| format!("\"{s}\"")).collect();
    format!("[{}]", inner.join(", "))
}

fn print_ls(ctx: &mut Ctx, ls: &Row) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "switch {} ({}){}",
        ls.uuid,
        ls.str("name"),
        alias(ls, "neutron:network_name")
    );
    for p in ls.refs("ports") {
        let Some(lsp) = ctx.db.get(LSP, &p)? else {
            continue;
        };
        let _ = writeln!(
            s,
            "    port {}{}",
            lsp.str("name"),
            alias(&lsp, "neutron:port_name")
        );
        if !lsp.str("type").is_empty() {
            let _ = writeln!(s, "        type: {}", lsp.str("type"));
        }
        if let Some(parent) = lsp.get("parent_name").as_str() {
            let _ = writeln!(s, "        parent: {parent}");
        }
        if let Some(tag) = lsp.get("tag").as_integer() {
            let _ = writeln!(s, "        tag: {tag}");
        }
        let addrs: Vec<&str> = lsp
            .get("addresses")
            .keys()
            .filter_map(|a| a.as_str())
            .collect();
        if !addrs.is_empty() && addrs != ["router"] {
            let _ = writeln!(s, "        addresses: {}", quoted_list(&addrs));
        }
        if let Some(rp) = lsp.map_get("options", "router-port") {
            let _ = writeln!(s, "        router-port: {rp}");
        }
    }
    Ok(s)
}

/// Gateway chassis names by descending priority (`get_ordered_gw_chassis_prio_list()`).
fn gateway_chassis(ctx: &mut Ctx, lrp: &Row) -> Result<Vec<String>> {
    let mut gcs = Vec::new();
    for g in lrp.refs("gateway_chassis") {
        if let Some(gc) = ctx.db.get("Gateway_Chassis", &g)? {
            let prio = gc.get("priority").as_integer().unwrap_or(0);
            gcs.push((prio, gc.str("chassis_name").to_owned()));
        }
    }
    gcs.sort_by_key(|g| std::cmp::Reverse(g.0));
    Ok(gcs.into_iter().map(|(_, n)| n).collect())
}

fn print_lr(ctx: &mut Ctx, lr: &Row) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "router {} ({}){}",
        lr.uuid,
        lr.str("name"),
        alias(lr, "neutron:router_name")
    );
    for p in lr.refs("ports") {
        let Some(lrp) = ctx.db.get("Logical_Router_Port", &p)? else {
            continue;
        };
        let _ = writeln!(s, "    port {}", lrp.str("name"));
        let _ = writeln!(s, "        mac: \"{}\"", lrp.str("mac"));
        let nets: Vec<&str> = lrp
            .get("networks")
            .keys()
            .filter_map(|a| a.as_str())
            .collect();
        if !nets.is_empty() {
            let _ = writeln!(s, "        networks: {}", quoted_list(&nets));
        }
        let gcs = gateway_chassis(ctx, &lrp)?;
        if !gcs.is_empty() {
            let _ = writeln!(s, "        gateway chassis: [{}]", gcs.join(" "));
        }
    }
    for n in lr.refs("nat") {
        let Some(nat) = ctx.db.get("NAT", &n)? else {
            continue;
        };
        let _ = writeln!(s, "    nat {}", nat.uuid);
        let _ = writeln!(s, "        external ip: \"{}\"", nat.str("external_ip"));
        if !nat.str("external_port_range").is_empty() {
            let _ = writeln!(
                s,
                "        external port(s): \"{}\"",
                nat.str("external_port_range")
            );
        }
        let _ = writeln!(s, "        logical ip: \"{}\"", nat.str("logical_ip"));
        let _ = writeln!(s, "        type: \"{}\"", nat.str("type"));
    }
    Ok(s)
}

pub fn show(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 0, 1)?;
    ctx.db.load(&[
        LS,
        LSP,
        "Logical_Router",
        "Logical_Router_Port",
        "NAT",
        "Gateway_Chassis",
    ])?;
    let (switches, routers): (Vec<Row>, Vec<Row>) = match cmd.args.first() {
        Some(id) => {
            let ls = ls_get(ctx, id, false)?;
            let lr = by_name_or_uuid(
                ctx,
                "Logical_Router",
                "router",
                "logical routers",
                id,
                false,
            )?;
            let ls = ls.map(|u| ctx.db.row(LS, &u)).transpose()?;
            let lr = lr.map(|u| ctx.db.row("Logical_Router", &u)).transpose()?;
            (ls.into_iter().collect(), lr.into_iter().collect())
        }
        None => (ctx.db.rows(LS)?, ctx.db.rows("Logical_Router")?),
    };
    for ls in &switches {
        let text = print_ls(ctx, ls)?;
        ctx.out.push_str(&text);
    }
    for lr in &routers {
        let text = print_lr(ctx, lr)?;
        ctx.out.push_str(&text);
    }
    Ok(())
}
