//! Bridge, port and connection commands (`ovs-vsctl(8)` "Open vSwitch Commands", "Bridge
//! Commands", "Port Commands", "Controller Connectivity", "Manager Connectivity").
//!
//! As `ovs-vsctl --no-wait`: changes are written to the database only; nothing waits for
//! ovs-vswitchd to apply them.

use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::{set_column, Ctx};
use crate::dbctl::notation::{set_of, string, uuid_atom};
use crate::dbctl::schema::SchemaExt;
use anyhow::{bail, Result};

const OVS: &str = "Open_vSwitch";

pub fn run(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    match cmd.name.as_str() {
        "init" => {
            check_args(cmd, 0, 0)?;
            root(ctx)?;
        }
        "add-br" => add_br(ctx, cmd)?,
        "del-br" => del_br(ctx, cmd)?,
        "list-br" => list_br(ctx, cmd)?,
        "br-exists" => br_exists(ctx, cmd)?,
        "add-port" => add_port(ctx, cmd)?,
        "del-port" => del_port(ctx, cmd)?,
        "list-ports" => list_ports(ctx, cmd)?,
        "set-controller" => set_targets(ctx, cmd, true)?,
        "set-manager" => set_targets(ctx, cmd, false)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// The Open_vSwitch root row, created if the database has none (as ovs-vsctl does).
fn root(ctx: &mut Ctx) -> Result<String> {
    if let Some(r) = ctx.db.rows(OVS)?.first() {
        return Ok(r.uuid.clone());
    }
    ctx.db.insert(OVS)
}

fn bridge_by_name(ctx: &mut Ctx, name: &str) -> Result<Option<String>> {
    let ovs = root(ctx)?;
    let bridges = ctx.db.row(OVS, &ovs)?.refs("bridges");
    for b in bridges {
        if ctx
            .db
            .get("Bridge", &b)?
            .is_some_and(|r| r.str("name") == name)
        {
            return Ok(Some(b));
        }
    }
    Ok(None)
}

fn need_bridge(ctx: &mut Ctx, name: &str) -> Result<String> {
    match bridge_by_name(ctx, name)? {
        Some(b) => Ok(b),
        None => bail!("no bridge named {name}"),
    }
}

/// The port named `name` and the bridge holding it.
fn port_by_name(ctx: &mut Ctx, name: &str) -> Result<Option<(String, String)>> {
    let ovs = root(ctx)?;
    for b in ctx.db.row(OVS, &ovs)?.refs("bridges") {
        let Some(bridge) = ctx.db.get("Bridge", &b)? else {
            continue;
        };
        for p in bridge.refs("ports") {
            if ctx
                .db
                .get("Port", &p)?
                .is_some_and(|r| r.str("name") == name)
            {
                return Ok(Some((p, b)));
            }
        }
    }
    Ok(None)
}

/// Creates Interface + Port named `name`; returns the port.
fn new_port(ctx: &mut Ctx, name: &str, internal: bool) -> Result<String> {
    let iface = ctx.db.insert("Interface")?;
    ctx.db.set("Interface", &iface, "name", string(name))?;
    if internal {
        ctx.db
            .set("Interface", &iface, "type", string("internal"))?;
    }
    let port = ctx.db.insert("Port")?;
    ctx.db.set("Port", &port, "name", string(name))?;
    ctx.db.set(
        "Port",
        &port,
        "interfaces",
        set_of(vec![uuid_atom(&iface)?]),
    )?;
    Ok(port)
}

fn add_br(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let name = &cmd.args[0];
    if bridge_by_name(ctx, name)?.is_some() {
        if cmd.has("--may-exist") {
            return Ok(());
        }
        bail!("cannot create a bridge named {name} because a bridge named {name} already exists");
    }
    if let Some((_, b)) = port_by_name(ctx, name)? {
        let owner = ctx.db.row("Bridge", &b)?.str("name").to_owned();
        bail!("cannot create a bridge named {name} because a port named {name} already exists on bridge {owner}");
    }
    let port = new_port(ctx, name, true)?;
    let br = ctx.db.insert("Bridge")?;
    ctx.db.set("Bridge", &br, "name", string(name))?;
    ctx.db
        .set("Bridge", &br, "ports", set_of(vec![uuid_atom(&port)?]))?;
    let ovs = root(ctx)?;
    ctx.db.set_add(OVS, &ovs, "bridges", uuid_atom(&br)?)
}

/// Deletes a port row and its interfaces.
fn delete_port_rows(ctx: &mut Ctx, port: &str) -> Result<()> {
    for i in ctx.db.row("Port", port)?.refs("interfaces") {
        if ctx.db.get("Interface", &i)?.is_some() {
            ctx.db.delete("Interface", &i)?;
        }
    }
    ctx.db.delete("Port", port)
}

fn del_br(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let Some(br) = bridge_by_name(ctx, &cmd.args[0])? else {
        if cmd.has("--if-exists") {
            return Ok(());
        }
        bail!("no bridge named {}", cmd.args[0]);
    };
    for p in ctx.db.row("Bridge", &br)?.refs("ports") {
        if ctx.db.get("Port", &p)?.is_some() {
            delete_port_rows(ctx, &p)?;
        }
    }
    let ovs = root(ctx)?;
    ctx.db
        .set_remove(OVS, &ovs, "bridges", &uuid_atom(&br.clone())?)?;
    ctx.db.delete("Bridge", &br)
}

fn list_br(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 0, 0)?;
    let ovs = root(ctx)?;
    let mut names = Vec::new();
    for b in ctx.db.row(OVS, &ovs)?.refs("bridges") {
        if let Some(r) = ctx.db.get("Bridge", &b)? {
            names.push(r.str("name").to_owned());
        }
    }
    names.sort();
    ctx.out.extend(names.into_iter().map(|n| n + "\n"));
    Ok(())
}

fn br_exists(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    if bridge_by_name(ctx, &cmd.args[0])?.is_none() {
        // ovs-vsctl exits with status 2 here; an error is the closest this runner has.
        bail!("no bridge named {}", cmd.args[0]);
    }
    Ok(())
}

fn add_port(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 2, usize::MAX)?;
    let (br_name, name) = (&cmd.args[0], &cmd.args[1]);
    let br = need_bridge(ctx, br_name)?;
    if let Some((_, owner)) = port_by_name(ctx, name)? {
        let owner_name = ctx.db.row("Bridge", &owner)?.str("name").to_owned();
        if cmd.has("--may-exist") {
            if owner != br {
                bail!("\"--may-exist add-port {br_name} {name}\" but {name} is actually attached to bridge {owner_name}");
            }
            return Ok(());
        }
        bail!("cannot create a port named {name} because a port named {name} already exists on bridge {owner_name}");
    }
    if bridge_by_name(ctx, name)?.is_some() {
        bail!("cannot create a port named {name} because a bridge named {name} already exists");
    }
    let port = new_port(ctx, name, false)?;
    let table = ctx.db.schema.table_or_err("Port")?.clone();
    for setting in &cmd.args[2..] {
        set_column(ctx, &table, &port, setting, true)?;
    }
    ctx.db.set_add("Bridge", &br, "ports", uuid_atom(&port)?)
}

fn del_port(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 2)?;
    let name = cmd.args.last().expect("checked");
    let Some((port, owner)) = port_by_name(ctx, name)? else {
        if cmd.has("--if-exists") {
            return Ok(());
        }
        bail!("no port named {name}");
    };
    if cmd.args.len() == 2 {
        let br = need_bridge(ctx, &cmd.args[0])?;
        if br != owner {
            bail!("bridge {} does not have a port {name}", cmd.args[0]);
        }
    }
    ctx.db
        .set_remove("Bridge", &owner, "ports", &uuid_atom(&port.clone())?)?;
    delete_port_rows(ctx, &port)
}

fn list_ports(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let br_name = &cmd.args[0];
    let br = need_bridge(ctx, br_name)?;
    let mut names = Vec::new();
    for p in ctx.db.row("Bridge", &br)?.refs("ports") {
        if let Some(r) = ctx.db.get("Port", &p)? {
            if r.str("name") != br_name.as_str() {
                names.push(r.str("name").to_owned());
            }
        }
    }
    names.sort();
    ctx.out.extend(names.into_iter().map(|n| n + "\n"));
    Ok(())
}

/// `set-controller BRIDGE TARGET...` / `set-manager TARGET...`: replaces the rows.
fn set_targets(ctx: &mut Ctx, cmd: &Command, controller: bool) -> Result<()> {
    let (table, owner_table, col, skip) = if controller {
        ("Controller", "Bridge", "controller", 1)
    } else {
        ("Manager", OVS, "manager_options", 0)
    };
    check_args(cmd, skip, usize::MAX)?;
    let owner = if controller {
        need_bridge(ctx, &cmd.args[0])?
    } else {
        root(ctx)?
    };
    for old in ctx.db.row(owner_table, &owner)?.refs(col) {
        if ctx.db.get(table, &old)?.is_some() {
            ctx.db.delete(table, &old)?;
        }
    }
    let mut rows = Vec::new();
    for target in &cmd.args[skip..] {
        let r = ctx.db.insert(table)?;
        ctx.db.set(table, &r, "target", string(target))?;
        rows.push(uuid_atom(&r)?);
    }
    ctx.db.set(owner_table, &owner, col, set_of(rows))
}
