//! Logical router policy commands (`ovn-nbctl(8)` "Logical Router Policy Commands"):
//! `lr-policy-add`, `lr-policy-del`, `lr-policy-list`.

use super::addr::{normalize_addr, normalize_prefix};
use super::lb::{lr_get, LR};
use super::router::children;
use super::switch::{looks_like_uuid, options_map};
use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::Ctx;
use crate::dbctl::idl::Row;
use crate::dbctl::notation::{set_of, string, uuid_atom};
use anyhow::{bail, Result};
use ovsdb::{Atom, Value};

pub const POLICY: &str = "Logical_Router_Policy";

fn parse_priority(arg: &str) -> Result<i64> {
    match arg.parse::<i64>() {
        Ok(p) if (0..=32767).contains(&p) => Ok(p),
        _ => bail!("{arg}: priority must in range 0...32767"),
    }
}

pub fn policy_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 4, usize::MAX)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let priority = parse_priority(&cmd.args[1])?;
    let (matching, action) = (&cmd.args[2], &cmd.args[3]);
    if !matches!(action.as_str(), "allow" | "drop" | "reroute") {
        bail!("{action}: action must be one of \"allow\", \"drop\", and \"reroute\"");
    }
    let reroute = action == "reroute";
    if reroute && cmd.args.len() < 5 {
        bail!("Nexthop is required when action is reroute.");
    }
    for p in children(ctx, &lr, "policies", POLICY)? {
        if p.get("priority").as_integer() == Some(priority) && p.str("match") == matching {
            if !cmd.has("--may-exist") {
                bail!(
                    "Same routing policy already existed on the logical router {}.",
                    cmd.args[0]
                );
            }
            return Ok(());
        }
    }
    let mut nexthops = Vec::new();
    if reroute {
        let arg = &cmd.args[4];
        for token in arg.split(',').filter(|t| !t.is_empty()) {
            let Some(hop) = normalize_addr(token, false).or_else(|| normalize_addr(token, true))
            else {
                bail!("bad next hop argument: {arg}");
            };
            let first_v4 = nexthops.first().map(|h: &String| h.contains('.'));
            if first_v4.is_some_and(|v4| v4 != hop.contains('.')) {
                bail!("bad next hops argument, not in the same addr family : {arg}");
            }
            nexthops.push(hop);
        }
    }
    let mut opts = Vec::new();
    for o in &cmd.args[if reroute { 5 } else { 4 }..] {
        match o.split_once('=') {
            Some((_, v)) if !v.is_empty() => opts.push(o.clone()),
            _ => bail!(
                "No value specified for the option : {}",
                o.split('=').next().unwrap_or(o)
            ),
        }
    }
    let policy = ctx.db.insert(POLICY)?;
    ctx.db
        .set(POLICY, &policy, "priority", Value::scalar(priority))?;
    ctx.db.set(POLICY, &policy, "match", string(matching))?;
    ctx.db.set(POLICY, &policy, "action", string(action))?;
    if reroute {
        ctx.db.set(
            POLICY,
            &policy,
            "nexthops",
            set_of(nexthops.into_iter().map(Atom::String).collect()),
        )?;
    }
    ctx.db.set(POLICY, &policy, "options", options_map(&opts))?;
    ctx.db.set_add(LR, &lr, "policies", uuid_atom(&policy)?)
}

pub fn policy_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 3)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let Some(sel) = cmd.args.get(1) else {
        return ctx.db.set(LR, &lr, "policies", Value::empty_set());
    };
    let policies = children(ctx, &lr, "policies", POLICY)?;
    let prio = |p: &Row| p.get("priority").as_integer();
    if looks_like_uuid(sel) {
        if cmd.args.len() > 2 {
            bail!("uuid must be the only argument");
        }
        match policies.iter().find(|p| p.uuid.eq_ignore_ascii_case(sel)) {
            Some(p) => {
                return ctx
                    .db
                    .set_remove(LR, &lr, "policies", &uuid_atom(&p.uuid.clone())?)
            }
            None if cmd.has("--if-exists") => return Ok(()),
            None => bail!("Logical router policy uuid is not found."),
        }
    }
    let priority = parse_priority(sel)?;
    for p in policies.iter().filter(|p| prio(p) == Some(priority)) {
        if cmd.args.get(2).is_none_or(|m| p.str("match") == m) {
            ctx.db
                .set_remove(LR, &lr, "policies", &uuid_atom(&p.uuid.clone())?)?;
            if cmd.args.len() == 3 {
                break;
            }
        }
    }
    Ok(())
}

pub fn policy_list(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let mut policies = children(ctx, &lr, "policies", POLICY)?;
    let prio = |p: &Row| p.get("priority").as_integer().unwrap_or(0);
    policies.sort_by(|a, b| {
        prio(b)
            .cmp(&prio(a))
            .then_with(|| a.str("match").cmp(b.str("match")))
    });
    if !policies.is_empty() {
        ctx.out.push_str("Routing Policies\n");
    }
    for p in &policies {
        let mut s = format!(
            "{:>10} {:>50} {:>15}",
            prio(p),
            p.str("match"),
            p.str("action")
        );
        for (i, hop) in p
            .get("nexthops")
            .keys()
            .filter_map(Atom::as_str)
            .enumerate()
        {
            let hop = normalize_prefix(hop).unwrap_or_default();
            s.push_str(&if i == 0 {
                format!(" {hop:>25}")
            } else {
                format!(", {hop}")
            });
        }
        let opts = p.get("options");
        if !opts.is_empty() {
            let kv: Vec<String> =
                crate::dbctl::order::smap_iter_pairs(super::switch::string_pairs(opts))
                    .into_iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
            s.push_str(&format!("{:15}{}", "", kv.join(",")));
        }
        s.push('\n');
        ctx.out.push_str(&s);
    }
    Ok(())
}
