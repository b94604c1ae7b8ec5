//! ACL and port group commands (`ovn-nbctl(8)` "Logical Switch ACL Commands", "Port Group
//! Commands").

use super::switch::{by_name_or_uuid, ls_get, lsp_get, LS};
use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::Ctx;
use crate::dbctl::idl::Row;
use crate::dbctl::notation::{set_of, uuid_atom};
use anyhow::{bail, Result};
use ovsdb::Value;
use std::cmp::Ordering;

pub const PG: &str = "Port_Group";
pub const ACL: &str = "ACL";

pub fn run(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    match cmd.name.as_str() {
        "acl-add" => acl_add(ctx, cmd)?,
        "acl-del" => acl_del(ctx, cmd)?,
        "acl-list" => acl_list(ctx, cmd)?,
        "pg-add" => pg_add(ctx, cmd)?,
        "pg-set-ports" => pg_set_ports(ctx, cmd)?,
        "pg-del" => pg_del(ctx, cmd)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn pg_get(ctx: &mut Ctx, id: &str, must_exist: bool) -> Result<Option<String>> {
    by_name_or_uuid(ctx, PG, "port group", "port groups", id, must_exist)
}

/// `acl_cmd_get_pg_or_ls()`: the ACL holder, a port group or a switch.
fn holder(ctx: &mut Ctx, cmd: &Command) -> Result<(&'static str, String)> {
    let id = &cmd.args[0];
    match cmd.option("--type") {
        None => {
            let pg = pg_get(ctx, id, false)?;
            let ls = ls_get(ctx, id, false)?;
            match (pg, ls) {
                (Some(_), Some(_)) => bail!("Same name '{id}' exists in both port-groups and logical switches. Specify --type=port-group or switch, or use a UUID."),
                (Some(pg), None) => Ok((PG, pg)),
                (None, Some(ls)) => Ok((LS, ls)),
                (None, None) => bail!("'{id}' is not found for port-group or switch."),
            }
        }
        Some("port-group") => Ok((PG, pg_get(ctx, id, true)?.expect("must_exist"))),
        Some("switch") => Ok((LS, ls_get(ctx, id, true)?.expect("must_exist"))),
        Some(other) => bail!("Invalid value '{other}' for option --type"),
    }
}

fn parse_direction(arg: &str) -> Result<&'static str> {
    match arg.as_bytes().first() {
        Some(b't') => Ok("to-lport"),
        Some(b'f') => Ok("from-lport"),
        _ => bail!("{arg}: direction must be \"to-lport\" or \"from-lport\""),
    }
}

fn parse_priority(arg: &str) -> Result<i64> {
    match arg.parse::<i64>() {
        Ok(p) if (0..=32767).contains(&p) => Ok(p),
        _ => bail!("{arg}: priority must in range 0...32767"),
    }
}

/// `acl_cmp()`: from-lport first, then higher priority first, then by match.
fn acl_cmp(a: &Row, b: &Row) -> Ordering {
    let dir = |r: &Row| r.str("direction") != "from-lport";
    let prio = |r: &Row| r.get("priority").as_integer().unwrap_or(0);
    dir(a)
        .cmp(&dir(b))
        .then(prio(b).cmp(&prio(a)))
        .then_with(|| a.str("match").cmp(b.str("match")))
}

fn acls_of(ctx: &mut Ctx, table: &str, owner: &str) -> Result<Vec<Row>> {
    let mut acls = Vec::new();
    for u in ctx.db.row(table, owner)?.refs("acls") {
        if let Some(r) = ctx.db.get(ACL, &u)? {
            acls.push(r.clone());
        }
    }
    Ok(acls)
}

fn acl_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 5, 5)?;
    let (table, owner) = holder(ctx, cmd)?;
    let direction = parse_direction(&cmd.args[1])?;
    let priority = parse_priority(&cmd.args[2])?;
    let (matching, action) = (&cmd.args[3], &cmd.args[4]);
    if !matches!(
        action.as_str(),
        "allow" | "allow-related" | "allow-stateless" | "drop" | "reject"
    ) {
        bail!("{action}: action must be one of \"allow\", \"allow-related\", \"allow-stateless\", \"drop\", and \"reject\"");
    }
    let severity = cmd.option("--severity");
    if let Some(s) = severity {
        if !matches!(s, "alert" | "warning" | "notice" | "info" | "debug") {
            bail!("bad severity: {s}");
        }
    }
    for existing in acls_of(ctx, table, &owner)? {
        let same = existing.str("direction") == direction
            && existing.get("priority").as_integer() == Some(priority)
            && existing.str("match") == matching;
        if same {
            if cmd.has("--may-exist") {
                return Ok(());
            }
            bail!("Same ACL already existed on the ls {}.", cmd.args[0]);
        }
    }
    let acl = ctx.db.insert(ACL)?;
    let s = |v: &str| Value::scalar(v.to_owned());
    ctx.db.set(ACL, &acl, "priority", Value::scalar(priority))?;
    ctx.db.set(ACL, &acl, "direction", s(direction))?;
    ctx.db.set(ACL, &acl, "match", s(matching))?;
    ctx.db.set(ACL, &acl, "action", s(action))?;
    let (name, meter) = (cmd.option("--name"), cmd.option("--meter"));
    if cmd.has("--log") || severity.is_some() || name.is_some() || meter.is_some() {
        ctx.db.set(ACL, &acl, "log", Value::scalar(true))?;
    }
    for (col, val) in [("severity", severity), ("name", name), ("meter", meter)] {
        if let Some(v) = val {
            ctx.db.set(ACL, &acl, col, s(v))?;
        }
    }
    ctx.db.set_add(table, &owner, "acls", uuid_atom(&acl)?)
}

fn acl_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 4)?;
    let (table, owner) = holder(ctx, cmd)?;
    if cmd.args.len() == 1 {
        return ctx.db.set(table, &owner, "acls", Value::empty_set());
    }
    let direction = parse_direction(&cmd.args[1])?;
    let acls = acls_of(ctx, table, &owner)?;
    if cmd.args.len() == 2 {
        for acl in acls.iter().filter(|a| a.str("direction") == direction) {
            ctx.db
                .set_remove(table, &owner, "acls", &uuid_atom(&acl.uuid.clone())?)?;
        }
        return Ok(());
    }
    let priority = parse_priority(&cmd.args[2])?;
    let Some(matching) = cmd.args.get(3) else {
        bail!("cannot specify priority without match")
    };
    let victim = acls.iter().find(|a| {
        a.get("priority").as_integer() == Some(priority)
            && a.str("match") == matching
            && a.str("direction") == direction
    });
    if let Some(acl) = victim {
        ctx.db
            .set_remove(table, &owner, "acls", &uuid_atom(&acl.uuid.clone())?)?;
    }
    Ok(())
}

fn acl_list(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let (table, owner) = holder(ctx, cmd)?;
    let mut acls = acls_of(ctx, table, &owner)?;
    acls.sort_by(acl_cmp);
    for acl in &acls {
        let prio = acl.get("priority").as_integer().unwrap_or(0);
        let mut line = format!(
            "{:>10} {prio:>5} ({}) {}",
            acl.str("direction"),
            acl.str("match"),
            acl.str("action")
        );
        if acl.get("log").as_bool() == Some(true) {
            let mut parts = Vec::new();
            if let Some(n) = acl.get("name").as_str() {
                parts.push(format!("name={n}"));
            }
            if let Some(s) = acl.get("severity").as_str() {
                parts.push(format!("severity={s}"));
            }
            if let Some(m) = acl.get("meter").as_str() {
                parts.push(format!("meter=\"{m}\""));
            }
            line.push_str(&format!(" log({})", parts.join(",")));
        }
        ctx.out.push_str(&line);
        ctx.out.push('\n');
    }
    Ok(())
}

fn port_set(ctx: &mut Ctx, names: &[String]) -> Result<Value> {
    let mut ports = Vec::new();
    for n in names {
        ports.push(uuid_atom(&lsp_get(ctx, n, true)?.expect("must_exist"))?);
    }
    Ok(set_of(ports))
}

fn pg_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, usize::MAX)?;
    // Like ovn-nbctl, no name check: the schema's index on `name` rejects duplicates.
    let name = &cmd.args[0];
    let ports = port_set(ctx, &cmd.args[1..])?;
    let pg = ctx.db.insert(PG)?;
    ctx.db.set(PG, &pg, "name", Value::scalar(name.clone()))?;
    ctx.db.set(PG, &pg, "ports", ports)
}

fn pg_set_ports(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, usize::MAX)?;
    let pg = pg_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let ports = port_set(ctx, &cmd.args[1..])?;
    ctx.db.set(PG, &pg, "ports", ports)
}

fn pg_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    if let Some(pg) = pg_get(ctx, &cmd.args[0], !cmd.has("--if-exists"))? {
        ctx.db.delete(PG, &pg)?;
    }
    Ok(())
}
