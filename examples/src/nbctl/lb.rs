//! Load balancer commands (`ovn-nbctl(8)` "Load Balancer Commands"): `lb-add`, `lb-del`,
//! `lb-list`, and attaching them with `ls-lb-add`/`ls-lb-del`/`lr-lb-add`/`lr-lb-del`.

use super::switch::{by_name_or_uuid, ls_get, LS};
use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::Ctx;
use crate::dbctl::idl::Row;
use crate::dbctl::notation::{map_of, uuid_atom, AtomText};
use anyhow::{bail, Result};
use ovsdb::{Atom, Value};
use std::net::{IpAddr, SocketAddr};

pub const LB: &str = "Load_Balancer";
pub const LR: &str = "Logical_Router";

pub fn lb_get(ctx: &mut Ctx, id: &str, must_exist: bool) -> Result<Option<String>> {
    by_name_or_uuid(ctx, LB, "load balancer", "load balancers", id, must_exist)
}

pub fn lr_get(ctx: &mut Ctx, id: &str, must_exist: bool) -> Result<Option<String>> {
    by_name_or_uuid(ctx, LR, "router", "logical routers", id, must_exist)
}

pub fn run(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    match cmd.name.as_str() {
        "lb-add" => lb_add(ctx, cmd)?,
        "lb-del" => lb_del(ctx, cmd)?,
        "lb-list" => lb_list(ctx, cmd)?,
        "ls-lb-add" => attach(ctx, cmd, LS, "switch")?,
        "lr-lb-add" => attach(ctx, cmd, LR, "router")?,
        "ls-lb-del" => detach(ctx, cmd, LS, "switch")?,
        "lr-lb-del" => detach(ctx, cmd, LR, "router")?,
        "ls-lb-list" => attached_list(ctx, cmd, LS)?,
        "lr-lb-list" => attached_list(ctx, cmd, LR)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// A VIP or backend: `IP`, `IP:PORT` or `[IPv6]:PORT`.
enum Endpoint {
    Ip(IpAddr),
    Socket(SocketAddr),
}

impl Endpoint {
    fn parse(s: &str) -> Option<Endpoint> {
        if let Ok(sa) = s.parse::<SocketAddr>() {
            return Some(Endpoint::Socket(sa));
        }
        let bare = s
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .unwrap_or(s);
        bare.parse::<IpAddr>().ok().map(Endpoint::Ip)
    }

    fn is_ipv4(&self) -> bool {
        match self {
            Endpoint::Ip(ip) => ip.is_ipv4(),
            Endpoint::Socket(sa) => sa.is_ipv4(),
        }
    }

    /// The normalized text OVN stores as the `vips` key.
    fn normalized(&self) -> String {
        match self {
            Endpoint::Ip(ip) => ip.to_string(),
            Endpoint::Socket(sa) => sa.to_string(),
        }
    }
}

fn lb_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 3, 4)?;
    let (name, vip_text, backends) = (&cmd.args[0], &cmd.args[1], &cmd.args[2]);
    if cmd.has("--reject") && cmd.has("--event") {
        bail!("--reject and --event can't specified at the same time");
    }
    let proto = cmd.args.get(3).map(String::as_str);
    if let Some(p) = proto {
        if !matches!(p, "tcp" | "udp" | "sctp") {
            bail!("{p}: protocol must be one of \"tcp\", \"udp\",  or \"sctp\".");
        }
    }
    let vip = match Endpoint::parse(vip_text) {
        Some(v) => v,
        None => bail!("{vip_text}: should be an IP address (or an IP address and a port number with : as a separator)."),
    };
    let has_port = matches!(vip, Endpoint::Socket(_));
    let vip_norm = vip.normalized();
    if !has_port && proto.is_some() {
        bail!("Protocol is unnecessary when no port of vip is given.");
    }
    let mut ips = Vec::new();
    for token in backends.split(',').filter(|t| !t.is_empty()) {
        let dst = match (Endpoint::parse(token), has_port) {
            (Some(d @ Endpoint::Socket(_)), true) | (Some(d @ Endpoint::Ip(_)), false) => d,
            (_, true) => {
                bail!("{token}: should be an IP address and a port number with : as a separator.")
            }
            (_, false) => bail!("{token}: should be an IP address."),
        };
        if dst.is_ipv4() != vip.is_ipv4() {
            bail!("{token}: IP address family is different from VIP {vip_norm}.");
        }
        ips.push(token.to_owned());
    }
    let ips = ips.join(",");
    let vip_key = Atom::String(vip_norm.clone());
    if !cmd.has("--add-duplicate") {
        if let Some(lb) = lb_get(ctx, name, false)? {
            let row = ctx.db.row(LB, &lb)?;
            if row.get("vips").contains_key(&vip_key) && !cmd.has("--may-exist") {
                bail!("{name}: a load balancer with this vip ({vip_norm}) already exists");
            }
            let mut pairs: Vec<(Atom, Atom)> = row
                .get("vips")
                .pairs()
                .filter(|(k, _)| **k != vip_key)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            pairs.push((vip_key, Atom::String(ips)));
            if let Some(p) = proto {
                ctx.db
                    .set(LB, &lb, "protocol", Value::scalar(p.to_owned()))?;
            }
            return ctx.db.set(LB, &lb, "vips", map_of(pairs));
        }
    }
    let lb = ctx.db.insert(LB)?;
    ctx.db.set(LB, &lb, "name", Value::scalar(name.clone()))?;
    let proto = proto.unwrap_or("tcp").to_owned();
    ctx.db.set(LB, &lb, "protocol", Value::scalar(proto))?;
    ctx.db
        .set(LB, &lb, "vips", map_of(vec![(vip_key, Atom::String(ips))]))?;
    for (flag, key) in [("--reject", "reject"), ("--event", "event")] {
        if cmd.has(flag) {
            let opts = map_of(vec![(
                Atom::String(key.into()),
                Atom::String("true".into()),
            )]);
            ctx.db.set(LB, &lb, "options", opts)?;
        }
    }
    Ok(())
}

fn lb_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 2)?;
    let Some(lb) = lb_get(ctx, &cmd.args[0], false)? else {
        return Ok(());
    };
    let Some(vip) = cmd.args.get(1) else {
        return ctx.db.delete(LB, &lb);
    };
    let key = Atom::String(vip.clone());
    let row = ctx.db.row(LB, &lb)?;
    if !row.get("vips").contains_key(&key) {
        if !cmd.has("--if-exists") {
            bail!("vip {vip} is not part of the load balancer.");
        }
        return Ok(());
    }
    let pairs: Vec<(Atom, Atom)> = row
        .get("vips")
        .pairs()
        .filter(|(k, _)| **k != key)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if pairs.is_empty() {
        return ctx.db.delete(LB, &lb);
    }
    ctx.db.set(LB, &lb, "vips", map_of(pairs))
}

/// `lb_info_add_smap()`: one load balancer's lines of the `lb-list` table.
fn lb_lines(lb: &Row, vip_width: usize) -> String {
    let mut val = String::new();
    let name: String = lb.str("name").chars().take(16).collect();
    for (i, (k, v)) in lb.get("vips").pairs().enumerate() {
        let (key, ips) = (k.to_bare(), v.to_bare());
        let Some(ep) = Endpoint::parse(&key) else {
            continue;
        };
        let proto = match ep {
            Endpoint::Socket(_) => lb.get("protocol").as_str().unwrap_or("(null)"),
            Endpoint::Ip(_) => "",
        };
        let proto: String = proto.chars().take(7).collect();
        let vip: String = key.chars().take(vip_width).collect();
        if i == 0 {
            val.push_str(&format!(
                "{}    {name:<20}{proto:<11}{vip:<w$}{ips}",
                lb.uuid,
                w = vip_width + 4
            ));
        } else {
            val.push_str(&format!(
                "\n{:60}{proto:<11}{vip:<w$}{ips}",
                "",
                w = vip_width + 4
            ));
        }
    }
    val
}

fn print_lbs(ctx: &mut Ctx, lbs: &[Row]) {
    let vip_width = lbs
        .iter()
        .flat_map(|lb| lb.get("vips").keys().map(|k| k.to_bare().len()))
        .max()
        .unwrap_or(0);
    let lines: Vec<(String, String)> = lbs
        .iter()
        .filter(|lb| !lb.get("vips").is_empty())
        .map(|lb| {
            (
                format!(
                    "{:<20}",
                    lb.str("name").chars().take(16).collect::<String>()
                ),
                lb_lines(lb, vip_width),
            )
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    let lines = crate::dbctl::order::smap_sorted_values(lines);
    let w = vip_width + 4;
    ctx.out.push_str(&format!(
        "{:<40}{:<20}{:<11}{:<w$}{}\n",
        "UUID",
        "LB",
        "PROTO",
        "VIP".chars().take(vip_width).collect::<String>(),
        "IPs"
    ));
    for l in lines {
        ctx.out.push_str(&l);
        ctx.out.push('\n');
    }
}

fn lb_list(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 0, 1)?;
    let lbs: Vec<Row> = ctx
        .db
        .rows(LB)?
        .into_iter()
        .filter(|r| cmd.args.first().is_none_or(|n| r.str("name") == n))
        .collect();
    print_lbs(ctx, &lbs);
    Ok(())
}

fn holder(ctx: &mut Ctx, table: &str, id: &str) -> Result<String> {
    let found = if table == LS {
        ls_get(ctx, id, true)?
    } else {
        lr_get(ctx, id, true)?
    };
    Ok(found.expect("must_exist"))
}

fn attach(ctx: &mut Ctx, cmd: &Command, table: &str, _what: &str) -> Result<()> {
    check_args(cmd, 2, 2)?;
    let owner = holder(ctx, table, &cmd.args[0])?;
    let lb = lb_get(ctx, &cmd.args[1], true)?.expect("must_exist");
    let atom = uuid_atom(&lb.clone())?;
    if ctx
        .db
        .row(table, &owner)?
        .get("load_balancer")
        .contains_key(&atom)
    {
        if cmd.has("--may-exist") {
            return Ok(());
        }
        bail!("{lb} : a load balancer with this UUID already exists");
    }
    ctx.db.set_add(table, &owner, "load_balancer", atom)
}

fn detach(ctx: &mut Ctx, cmd: &Command, table: &str, what: &str) -> Result<()> {
    check_args(cmd, 1, 2)?;
    let owner = holder(ctx, table, &cmd.args[0])?;
    let Some(lb_id) = cmd.args.get(1) else {
        return ctx
            .db
            .set(table, &owner, "load_balancer", Value::empty_set());
    };
    let lb = lb_get(ctx, lb_id, true)?.expect("must_exist");
    let atom = uuid_atom(&lb.clone())?;
    if ctx
        .db
        .row(table, &owner)?
        .get("load_balancer")
        .contains_key(&atom)
    {
        return ctx.db.set_remove(table, &owner, "load_balancer", &atom);
    }
    if !cmd.has("--if-exists") {
        let name = ctx.db.row(LB, &lb)?.str("name").to_owned();
        bail!("load balancer {name} is not part of any logical {what}.");
    }
    Ok(())
}

fn attached_list(ctx: &mut Ctx, cmd: &Command, table: &str) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let owner = holder(ctx, table, &cmd.args[0])?;
    let mut lbs = Vec::new();
    for u in ctx.db.row(table, &owner)?.refs("load_balancer") {
        if let Some(r) = ctx.db.get(LB, &u)? {
            lbs.push(r.clone());
        }
    }
    print_lbs(ctx, &lbs);
    Ok(())
}
