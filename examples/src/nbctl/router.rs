//! Logical router, router port, static route and routing policy commands (`ovn-nbctl(8)`
//! "Logical Router Commands", "Logical Router Port Commands", "Logical Router Static Route
//! Commands", "Logical Router Policy Commands").

use super::addr::{is_mac, normalize, normalize_addr, normalize_prefix, parse_cidr};
use super::lb::{lr_get, LR};
use super::switch::{list_named, looks_like_uuid, options_map};
use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::{set_column, Ctx};
use crate::dbctl::idl::Row;
use crate::dbctl::notation::{set_of, string, uuid_atom};
use crate::dbctl::schema::SchemaExt;
use anyhow::{bail, Result};
use ovsdb::{Atom, Value};
use std::cmp::Ordering;
use std::net::IpAddr;

pub const LRP: &str = "Logical_Router_Port";
pub const ROUTE: &str = "Logical_Router_Static_Route";

pub fn run(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    match cmd.name.as_str() {
        "lr-add" => lr_add(ctx, cmd)?,
        "lr-del" => lr_del(ctx, cmd)?,
        "lr-list" => list_named(ctx, cmd, LR)?,
        "lrp-add" => lrp_add(ctx, cmd)?,
        "lrp-del" => lrp_del(ctx, cmd)?,
        "lrp-list" => lrp_list(ctx, cmd)?,
        "lr-route-add" => route_add(ctx, cmd)?,
        "lr-route-del" => route_del(ctx, cmd)?,
        "lr-route-list" => route_list(ctx, cmd)?,
        "lr-policy-add" => super::policy::policy_add(ctx, cmd)?,
        "lr-policy-del" => super::policy::policy_del(ctx, cmd)?,
        "lr-policy-list" => super::policy::policy_list(ctx, cmd)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn lr_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 0, 1)?;
    let may_exist = cmd.has("--may-exist");
    let add_duplicate = cmd.has("--add-duplicate");
    if may_exist && add_duplicate {
        bail!("--may-exist and --add-duplicate may not be used together");
    }
    let exists = match cmd.args.first() {
        Some(n) => ctx
            .db
            .index_rows(LR, &["name"])?
            .iter()
            .any(|r| r.str("name") == n.as_str()),
        None => false,
    };
    match cmd.args.first() {
        Some(name) if exists && !add_duplicate => {
            if may_exist {
                return Ok(());
            }
            bail!("{name}: a router with this name already exists");
        }
        None if may_exist => bail!("--may-exist requires specifying a name"),
        None if add_duplicate => bail!("--add-duplicate requires specifying a name"),
        _ => {}
    }
    let lr = ctx.db.insert(LR)?;
    if let Some(name) = cmd.args.first() {
        ctx.db.set(LR, &lr, "name", string(name))?;
    }
    Ok(())
}

fn lr_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    if let Some(lr) = lr_get(ctx, &cmd.args[0], !cmd.has("--if-exists"))? {
        ctx.db.delete(LR, &lr)?;
    }
    Ok(())
}

fn lrp_get(ctx: &mut Ctx, id: &str, must_exist: bool) -> Result<Option<String>> {
    let is_uuid = looks_like_uuid(id);
    ctx.db.load_columns(LRP, &["name"])?;
    if is_uuid && ctx.db.get(LRP, &id.to_ascii_lowercase())?.is_some() {
        return Ok(Some(id.to_ascii_lowercase()));
    }
    let found = ctx
        .db
        .index_rows(LRP, &["name"])?
        .iter()
        .find(|r| r.str("name") == id)
        .map(|r| r.uuid.clone());
    if found.is_none() && must_exist {
        bail!(
            "{id}: port {} not found",
            if is_uuid { "UUID" } else { "name" }
        );
    }
    Ok(found)
}

fn lrp_to_lr(ctx: &mut Ctx, lrp: &str) -> Result<String> {
    let atom = uuid_atom(lrp)?;
    let owner = ctx
        .db
        .index_rows(LR, &["name", "ports"])?
        .iter()
        .find(|r| r.get("ports").contains_key(&atom))
        .map(|r| r.uuid.clone());
    match owner {
        Some(lr) => Ok(lr),
        None => bail!(
            "port {} is not part of any logical router",
            ctx.db.row(LRP, lrp)?.str("name")
        ),
    }
}

fn network_set(nets: &[String]) -> Option<Vec<String>> {
    let mut out: Vec<String> = nets
        .iter()
        .map(|n| normalize_prefix(n))
        .collect::<Option<_>>()?;
    out.sort();
    out.dedup();
    Some(out)
}

fn lrp_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 3, usize::MAX)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let (name, mac) = (&cmd.args[1], &cmd.args[2]);
    let rest = &cmd.args[3..];
    let n_networks = rest
        .iter()
        .position(|a| a.contains('='))
        .unwrap_or(rest.len());
    let (networks, settings) = rest.split_at(n_networks);
    if networks.is_empty() {
        bail!("{name}: router port requires specifying a network");
    }
    if !is_mac(mac) {
        bail!("{name}: invalid mac address {mac}");
    }
    if let Some(lrp) = lrp_get(ctx, name, false)? {
        return lrp_may_exist(ctx, cmd, &lr, &lrp, networks, settings);
    }
    if let Some(bad) = networks.iter().find(|n| parse_cidr(n).is_none()) {
        bail!("{name}: invalid network address: {bad}");
    }
    let lrp = ctx.db.insert(LRP)?;
    ctx.db.set(LRP, &lrp, "name", string(name))?;
    ctx.db.set(LRP, &lrp, "mac", string(mac))?;
    let nets = networks.iter().map(|n| Atom::String(n.clone())).collect();
    ctx.db.set(LRP, &lrp, "networks", set_of(nets))?;
    let table = ctx.db.schema.table_or_err(LRP)?.clone();
    for s in settings {
        set_column(ctx, &table, &lrp, s, true)?;
    }
    ctx.db.set_add(LR, &lr, "ports", uuid_atom(&lrp)?)
}

fn lrp_may_exist(
    ctx: &mut Ctx,
    cmd: &Command,
    lr: &str,
    lrp: &str,
    networks: &[String],
    settings: &[String],
) -> Result<()> {
    let name = &cmd.args[1];
    if !cmd.has("--may-exist") {
        bail!("{name}: a port with this name already exists");
    }
    let bound = lrp_to_lr(ctx, lrp)?;
    if bound != lr {
        let row = ctx.db.row(LR, &bound)?;
        let lr_name = if row.str("name").is_empty() {
            row.uuid.clone()
        } else {
            row.str("name").to_owned()
        };
        bail!("{name}: port already exists but in router {lr_name}");
    }
    let row = ctx.db.row(LRP, lrp)?;
    if !row.str("mac").eq_ignore_ascii_case(&cmd.args[2]) {
        bail!("{name}: port already exists with mac {}", row.str("mac"));
    }
    let Some(new) = network_set(networks) else {
        bail!("{name}: Invalid networks configured")
    };
    let old: Vec<String> = row
        .get("networks")
        .keys()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    let Some(old) = network_set(&old) else {
        bail!("{name}: Existing port has invalid networks configured")
    };
    if new != old {
        bail!("{name}: port already exists with different network");
    }
    let peer = settings.iter().find_map(|s| s.strip_prefix("peer="));
    if peer != row.get("peer").as_str() {
        bail!("{name}: port already exists with mismatching peer");
    }
    Ok(())
}

fn lrp_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let Some(lrp) = lrp_get(ctx, &cmd.args[0], !cmd.has("--if-exists"))? else {
        return Ok(());
    };
    let lr = lrp_to_lr(ctx, &lrp)?;
    ctx.db
        .set_remove(LR, &lr, "ports", &uuid_atom(&lrp.clone())?)?;
    ctx.db.delete(LRP, &lrp)
}

fn lrp_list(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let mut lines = Vec::new();
    for p in ctx.db.row(LR, &lr)?.refs("ports") {
        if let Some(r) = ctx.db.get(LRP, &p)? {
            lines.push((
                r.str("name").to_owned(),
                format!("{} ({})\n", r.uuid, r.str("name")),
            ));
        }
    }
    ctx.out
        .extend(crate::dbctl::order::smap_sorted_values(lines));
    Ok(())
}

pub(super) fn children(ctx: &mut Ctx, lr: &str, col: &str, table: &str) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for u in ctx.db.row(LR, lr)?.refs(col) {
        if let Some(r) = ctx.db.get(table, &u)? {
            out.push(r.clone());
        }
    }
    Ok(out)
}

fn is_src(route: &Row) -> bool {
    route.get("policy").as_str() == Some("src-ip")
}

fn route_policy(cmd: &Command) -> Result<Option<bool>> {
    match cmd.option("--policy") {
        None => Ok(None),
        Some("src-ip") => Ok(Some(true)),
        Some("dst-ip") => Ok(Some(false)),
        Some(p) => bail!("bad policy: {p}"),
    }
}

fn route_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 3, 4)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let policy = route_policy(cmd)?;
    let is_src_route = policy == Some(true);
    let Some((ip, plen)) = parse_cidr(&cmd.args[1]) else {
        bail!("bad prefix argument: {}", cmd.args[1]);
    };
    let v6 = ip.is_ipv6();
    let prefix = normalize(ip, plen);
    let discard = cmd.args[2] == "discard";
    let next_hop = if discard {
        "discard".to_owned()
    } else {
        match normalize_addr(&cmd.args[2], v6) {
            Some(n) => n,
            None => bail!(
                "bad {} nexthop argument: {}",
                if v6 { "IPv6" } else { "IPv4" },
                cmd.args[2]
            ),
        }
    };
    let symmetric = cmd.has("--ecmp-symmetric-reply");
    let ecmp = cmd.has("--ecmp") || symmetric;
    let table = cmd.option("--route-table").unwrap_or("");
    let routes = children(ctx, &lr, "static_routes", ROUTE)?;
    let same = |r: &&Row, hop: Option<&str>| {
        is_src(r) == is_src_route
            && normalize_prefix(r.str("ip_prefix")).as_deref() == Some(prefix.as_str())
            && hop.is_none_or(|h| r.str("nexthop") == h)
            && r.str("route_table") == table
    };
    let existing = routes
        .iter()
        .find(|r| same(r, ecmp.then_some(next_hop.as_str())))
        .cloned();
    if discard {
        if ecmp {
            bail!("ecmp is not valid for discard routes.");
        }
        if cmd.args.len() == 4 {
            bail!("outport is not valid for discard routes.");
        }
    }
    if let Some(route) = existing {
        if ecmp {
            if !cmd.has("--may-exist") {
                bail!("duplicate nexthop for the same ECMP route");
            }
            return Ok(());
        }
        if !cmd.has("--may-exist") {
            let p = if is_src_route { "src-ip" } else { "dst-ip" };
            bail!("duplicate prefix: {prefix} (policy: {p}). Use option --ecmp to allow this for ECMP routing.");
        }
        ctx.db
            .set(ROUTE, &route.uuid, "ip_prefix", string(&prefix))?;
        ctx.db
            .set(ROUTE, &route.uuid, "nexthop", string(&next_hop))?;
        if let Some(port) = cmd.args.get(3) {
            ctx.db
                .set(ROUTE, &route.uuid, "output_port", string(port))?;
        }
        if let Some(p) = cmd.option("--policy") {
            ctx.db.set(ROUTE, &route.uuid, "policy", string(p))?;
        }
        return Ok(());
    }
    if routes.iter().any(|r| same(&r, Some("discard"))) {
        bail!("discard nexthop for the same ECMP route exists.");
    }
    let route = ctx.db.insert(ROUTE)?;
    ctx.db.set(ROUTE, &route, "ip_prefix", string(&prefix))?;
    ctx.db.set(ROUTE, &route, "nexthop", string(&next_hop))?;
    if let Some(port) = cmd.args.get(3) {
        ctx.db.set(ROUTE, &route, "output_port", string(port))?;
    }
    if let Some(p) = cmd.option("--policy") {
        ctx.db.set(ROUTE, &route, "policy", string(p))?;
    }
    if !table.is_empty() {
        ctx.db.set(ROUTE, &route, "route_table", string(table))?;
    }
    if symmetric {
        ctx.db.set(
            ROUTE,
            &route,
            "options",
            options_map(&["ecmp_symmetric_reply=true".into()]),
        )?;
    }
    ctx.db.set_add(LR, &lr, "static_routes", uuid_atom(&route)?)
}

fn route_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 4)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let policy = route_policy(cmd)?;
    if cmd.args.len() == 1 && policy.is_none() {
        return ctx.db.set(LR, &lr, "static_routes", Value::empty_set());
    }
    let prefix = match cmd.args.get(1) {
        Some(p) => match normalize_prefix(p) {
            Some(n) => Some(n),
            None => bail!("bad prefix argument: {p}"),
        },
        None => None,
    };
    let nexthop = match cmd.args.get(2) {
        Some(h) if h == "discard" => Some(h.clone()),
        Some(h) => match normalize_prefix(h) {
            Some(n) => Some(n),
            None => bail!("bad nexthop argument: {h}"),
        },
        None => None,
    };
    let port = cmd.args.get(3);
    let table = cmd.option("--route-table");
    let mut removed = 0;
    for r in children(ctx, &lr, "static_routes", ROUTE)? {
        let rt_hop = if r.str("nexthop") == "discard" {
            Some("discard".into())
        } else {
            normalize_prefix(r.str("nexthop"))
        };
        let matches = policy.is_none_or(|src| is_src(&r) == src)
            && prefix
                .as_ref()
                .is_none_or(|p| normalize_prefix(r.str("ip_prefix")).as_ref() == Some(p))
            && nexthop.as_ref().is_none_or(|h| rt_hop.as_ref() == Some(h))
            && port.is_none_or(|p| r.get("output_port").as_str() == Some(p.as_str()))
            && table.is_none_or(|t| r.str("route_table") == t);
        if matches {
            ctx.db
                .set_remove(LR, &lr, "static_routes", &uuid_atom(&r.uuid.clone())?)?;
            removed += 1;
        }
    }
    if removed == 0 && !cmd.has("--if-exists") {
        bail!(
            "no matching route: policy '{}', prefix '{}', nexthop '{}', output_port '{}'.",
            cmd.option("--policy").unwrap_or("any"),
            prefix.as_deref().unwrap_or("(null)"),
            nexthop.as_deref().unwrap_or("any"),
            port.map(String::as_str).unwrap_or("any")
        );
    }
    Ok(())
}

/// A route prepared for sorting: priority (longer prefixes, then dst-ip, first), address.
struct Listed {
    priority: u32,
    addr: IpAddr,
    prefix: String,
    route: Row,
}

fn route_line(l: &Listed, ecmp: bool) -> String {
    let r = &l.route;
    let hop = match r.str("nexthop") {
        "discard" => "discard".to_owned(),
        "" => String::new(),
        h => normalize_prefix(h).unwrap_or_default(),
    };
    let mut s = format!(
        "{:>25} {:>25} {}",
        l.prefix,
        hop,
        r.get("policy").as_str().unwrap_or("dst-ip")
    );
    if let Some(p) = r.get("output_port").as_str() {
        s.push_str(&format!(" {p}"));
    }
    if r.map_get("external_ids", "ic-learned-route").is_some() {
        s.push_str(" (learned)");
    }
    if ecmp {
        s.push_str(" ecmp");
    }
    if r.map_get("options", "ecmp_symmetric_reply") == Some("true") {
        s.push_str(" ecmp-symmetric-reply");
    }
    if !r.get("bfd").is_empty() {
        s.push_str(" bfd");
    }
    s.push('\n');
    s
}

fn print_family(out: &mut String, mut routes: Vec<Listed>) {
    routes.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.addr.cmp(&b.addr))
            .then_with(|| {
                a.route
                    .str("nexthop")
                    .cmp(b.route.str("nexthop"))
                    .then_with(|| {
                        match (
                            a.route.get("output_port").as_str(),
                            b.route.get("output_port").as_str(),
                        ) {
                            (Some(x), Some(y)) => x.cmp(y),
                            (Some(_), None) => Ordering::Greater,
                            _ => Ordering::Less,
                        }
                    })
            })
    });
    let mut tables: Vec<String> = routes
        .iter()
        .map(|l| l.route.str("route_table").to_owned())
        .collect();
    tables.sort();
    tables.dedup();
    for (ti, table) in tables.iter().enumerate() {
        if ti > 0 {
            out.push('\n');
        }
        let name = if table.is_empty() { "<main>" } else { table };
        out.push_str(&format!("Route Table {name}:\n"));
        let in_table: Vec<&Listed> = routes
            .iter()
            .filter(|l| l.route.str("route_table") == table)
            .collect();
        for (i, l) in in_table.iter().enumerate() {
            let same = |o: &&Listed| o.priority == l.priority && o.prefix == l.prefix;
            let ecmp = (i > 0 && same(&in_table[i - 1])) || in_table.get(i + 1).is_some_and(same);
            out.push_str(&route_line(l, ecmp));
        }
    }
}

fn route_list(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let table = cmd.option("--route-table");
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    for route in children(ctx, &lr, "static_routes", ROUTE)? {
        if table.is_some_and(|t| route.str("route_table") != t) {
            continue;
        }
        let Some((ip, plen)) = parse_cidr(route.str("ip_prefix")) else {
            continue;
        };
        let prio = 2 * plen as u32 + u32::from(!is_src(&route));
        let l = Listed {
            priority: prio,
            addr: super::addr::parse_cidr(&normalize(ip, plen))
                .map(|x| x.0)
                .unwrap_or(ip),
            prefix: normalize(ip, plen),
            route,
        };
        if ip.is_ipv4() {
            v4.push(l)
        } else {
            v6.push(l)
        }
    }
    let had_v4 = !v4.is_empty();
    if had_v4 {
        ctx.out.push_str("IPv4 Routes\n");
        print_family(&mut ctx.out, v4);
    }
    if !v6.is_empty() {
        ctx.out.push_str(if had_v4 {
            "\nIPv6 Routes\n"
        } else {
            "IPv6 Routes\n"
        });
        print_family(&mut ctx.out, v6);
    }
    Ok(())
}
