//! Logical switch and logical switch port commands (`ovn-nbctl(8)` "Logical Switch
//! Commands", "Logical Switch Port Commands").

use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::Ctx;
use crate::dbctl::notation::{map_of, set_of, uuid_atom, AtomText};
use crate::dbctl::order::{smap_iter_pairs, smap_sorted_values};
use anyhow::{bail, Result};
use ovsdb::{Atom, Value};
use std::net::IpAddr;

pub const LS: &str = "Logical_Switch";
pub const LSP: &str = "Logical_Switch_Port";

/// `ls_by_name_or_uuid()` and friends: a row named by UUID or by its `name` column.
pub fn by_name_or_uuid(
    ctx: &mut Ctx,
    table: &str,
    noun: &str,
    plural: &str,
    id: &str,
    must_exist: bool,
) -> Result<Option<String>> {
    let is_uuid = looks_like_uuid(id);
    ctx.db.load_columns(table, &["name"])?;
    if is_uuid && ctx.db.get(table, &id.to_ascii_lowercase())?.is_some() {
        return Ok(Some(id.to_ascii_lowercase()));
    }
    let matches: Vec<String> = ctx
        .db
        .index_rows(table, &["name"])?
        .iter()
        .filter(|r| r.str("name") == id)
        .map(|r| r.uuid.clone())
        .collect();
    if matches.len() > 1 {
        bail!("Multiple {plural} named '{id}'.  Use a UUID.");
    }
    if matches.is_empty() && must_exist {
        bail!(
            "{id}: {noun} {} not found",
            if is_uuid { "UUID" } else { "name" }
        );
    }
    Ok(matches.into_iter().next())
}

pub fn looks_like_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

pub fn ls_get(ctx: &mut Ctx, id: &str, must_exist: bool) -> Result<Option<String>> {
    by_name_or_uuid(ctx, LS, "switch", "logical switches", id, must_exist)
}

/// `lsp_by_name_or_uuid()`: ports are looked up by name without a duplicate check.
pub fn lsp_get(ctx: &mut Ctx, id: &str, must_exist: bool) -> Result<Option<String>> {
    let is_uuid = looks_like_uuid(id);
    ctx.db.load_columns(LSP, &["name"])?;
    if is_uuid && ctx.db.get(LSP, &id.to_ascii_lowercase())?.is_some() {
        return Ok(Some(id.to_ascii_lowercase()));
    }
    let found = ctx
        .db
        .index_rows(LSP, &["name"])?
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

/// The switch whose `ports` holds `lsp`.
fn lsp_to_ls(ctx: &mut Ctx, lsp: &str) -> Result<String> {
    let atom = uuid_atom(lsp)?;
    let owner = ctx
        .db
        .index_rows(LS, &["name", "ports"])?
        .iter()
        .find(|r| r.get("ports").contains_key(&atom))
        .map(|r| r.uuid.clone());
    match owner {
        Some(ls) => Ok(ls),
        None => {
            let name = ctx.db.row(LSP, lsp)?.str("name").to_owned();
            bail!("logical port {name} is not part of any logical switch")
        }
    }
}

pub fn run(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    match cmd.name.as_str() {
        "ls-add" => ls_add(ctx, cmd)?,
        "ls-del" => ls_del(ctx, cmd)?,
        "ls-list" => list_named(ctx, cmd, LS)?,
        "lsp-add" => lsp_add(ctx, cmd)?,
        "lsp-del" => lsp_del(ctx, cmd)?,
        "lsp-list" => lsp_list(ctx, cmd)?,
        "lsp-set-addresses" => lsp_set_addresses(ctx, cmd)?,
        "lsp-get-addresses" => lsp_get_sorted(ctx, cmd, "addresses")?,
        "lsp-set-port-security" => lsp_set_strings(ctx, cmd, "port_security")?,
        "lsp-get-port-security" => lsp_get_sorted(ctx, cmd, "port_security")?,
        "lsp-set-type" => lsp_set_type(ctx, cmd)?,
        "lsp-get-type" => lsp_get_type(ctx, cmd)?,
        "lsp-set-options" => lsp_set_options(ctx, cmd)?,
        "lsp-get-options" => lsp_get_options(ctx, cmd)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn ls_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 0, 1)?;
    let may_exist = cmd.has("--may-exist");
    let add_duplicate = cmd.has("--add-duplicate");
    if may_exist && add_duplicate {
        bail!("--may-exist and --add-duplicate may not be used together");
    }
    let name = cmd.args.first();
    let exists = match name {
        Some(n) => ctx
            .db
            .index_rows(LS, &["name"])?
            .iter()
            .any(|r| r.str("name") == n.as_str()),
        None => false,
    };
    match name {
        Some(name) if exists && !add_duplicate => {
            if may_exist {
                return Ok(());
            }
            bail!("{name}: a switch with this name already exists");
        }
        None if may_exist => bail!("--may-exist requires specifying a name"),
        None if add_duplicate => bail!("--add-duplicate requires specifying a name"),
        _ => {}
    }
    let ls = ctx.db.insert(LS)?;
    if let Some(name) = name {
        ctx.db.set(LS, &ls, "name", Value::scalar(name.clone()))?;
    }
    Ok(())
}

fn ls_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    if let Some(ls) = ls_get(ctx, &cmd.args[0], !cmd.has("--if-exists"))? {
        ctx.db.delete(LS, &ls)?;
    }
    Ok(())
}

/// `ls-list`/`lr-list`: `UUID (name)` lines sorted by name.
pub fn list_named(ctx: &mut Ctx, cmd: &Command, table: &str) -> Result<()> {
    check_args(cmd, 0, 0)?;
    let lines: Vec<(String, String)> = ctx
        .db
        .index_rows(table, &["name"])?
        .iter()
        .map(|r| {
            (
                r.str("name").to_owned(),
                format!("{} ({})\n", r.uuid, r.str("name")),
            )
        })
        .collect();
    ctx.out.extend(smap_sorted_values(lines));
    Ok(())
}

fn lsp_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 2, 4)?;
    let may_exist = cmd.has("--may-exist");
    let ls = ls_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let (parent, tag) = match cmd.args.len() {
        2 => (None, None),
        4 => {
            let tag: i64 = match cmd.args[3].parse() {
                Ok(t) if (0..=4095).contains(&t) => t,
                _ => bail!("{}: invalid tag (must be in range 0 to 4095)", cmd.args[3]),
            };
            (Some(cmd.args[2].clone()), Some(tag))
        }
        _ => bail!("lsp-add with parent must also specify a tag"),
    };
    let name = &cmd.args[1];
    if let Some(lsp) = lsp_get(ctx, name, false)? {
        if !may_exist {
            bail!("{name}: a port with this name already exists");
        }
        let owner = lsp_to_ls(ctx, &lsp)?;
        if owner != ls {
            let row = ctx.db.row(LS, &owner)?;
            let owner_name = if row.str("name").is_empty() {
                row.uuid.clone()
            } else {
                row.str("name").to_owned()
            };
            bail!("{name}: port already exists but in switch {owner_name}");
        }
        let row = ctx.db.row(LSP, &lsp)?;
        let existing_parent = row.get("parent_name").as_str().map(str::to_owned);
        let tag_request = row.get("tag_request").as_integer();
        match (&parent, existing_parent) {
            (Some(_), None) => bail!("{name}: port already exists but has no parent"),
            (Some(p), Some(e)) if *p != e => {
                bail!("{name}: port already exists with different parent {e}")
            }
            (Some(_), Some(_)) => match tag_request {
                None => bail!("{name}: port already exists but has no tag_request"),
                Some(t) if Some(t) != tag => {
                    bail!("{name}: port already exists with different tag_request {t}")
                }
                _ => {}
            },
            (None, Some(e)) => bail!("{name}: port already exists but has parent {e}"),
            (None, None) => {}
        }
        return Ok(());
    }
    let lsp = ctx.db.insert(LSP)?;
    ctx.db.set(LSP, &lsp, "name", Value::scalar(name.clone()))?;
    if let (Some(p), Some(t)) = (parent, tag) {
        ctx.db.set(LSP, &lsp, "parent_name", Value::scalar(p))?;
        ctx.db.set(LSP, &lsp, "tag_request", Value::scalar(t))?;
    }
    ctx.db.set_add(LS, &ls, "ports", uuid_atom(&lsp)?)
}

fn lsp_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let Some(lsp) = lsp_get(ctx, &cmd.args[0], !cmd.has("--if-exists"))? else {
        return Ok(());
    };
    let ls = lsp_to_ls(ctx, &lsp)?;
    ctx.db
        .set_remove(LS, &ls, "ports", &uuid_atom(&lsp.clone())?)?;
    ctx.db.delete(LSP, &lsp)
}

fn lsp_list(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let ls = ls_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let ports = ctx.db.row(LS, &ls)?.refs("ports");
    let mut lines = Vec::new();
    for p in ports {
        if let Some(row) = ctx.db.get(LSP, &p)? {
            lines.push((
                row.str("name").to_owned(),
                format!("{} ({})\n", row.uuid, row.str("name")),
            ));
        }
    }
    ctx.out.extend(smap_sorted_values(lines));
    Ok(())
}

fn is_mac(s: &str) -> bool {
    let parts: Vec<&str> = s.split(':').collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 2 && p.bytes().all(|c| c.is_ascii_hexdigit()))
}

/// The IPs of an `addresses` entry ("MAC IP..."), as `extract_lsp_addresses()` sees them.
fn address_ips(entry: &str) -> Vec<(IpAddr, String)> {
    let mut words = entry.split_whitespace();
    match words.next() {
        Some(mac) if is_mac(mac) => {}
        _ => return Vec::new(),
    }
    words
        .filter_map(|w| {
            let ip = w.split('/').next().unwrap_or(w);
            ip.parse::<IpAddr>().ok().map(|a| (a, ip.to_owned()))
        })
        .collect()
}

fn lsp_set_addresses(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, usize::MAX)?;
    let lsp = lsp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let ls = lsp_to_ls(ctx, &lsp)?;
    for addr in &cmd.args[1..] {
        let first = addr.split_whitespace().next().unwrap_or("");
        let dynamic_ip = addr
            .strip_prefix("dynamic ")
            .is_some_and(|ip| ip.trim().parse::<IpAddr>().is_ok());
        if !matches!(addr.as_str(), "unknown" | "dynamic" | "router")
            && !is_mac(first)
            && !dynamic_ip
        {
            bail!("{addr}: Invalid address format. See ovn-nb(5). Hint: An Ethernet address must be listed before an IP address, together as a single argument.");
        }
        duplicate_check(ctx, &ls, &lsp, addr)?;
    }
    let addrs = cmd.args[1..]
        .iter()
        .map(|a| Atom::String(a.clone()))
        .collect();
    ctx.db.set(LSP, &lsp, "addresses", set_of(addrs))
}

/// `lsp_contains_duplicates()`: an IP may be used by one port of a switch only.
fn duplicate_check(ctx: &mut Ctx, ls: &str, lsp: &str, addr: &str) -> Result<()> {
    let wanted = address_ips(addr);
    if wanted.is_empty() {
        return Ok(());
    }
    let ls_row = ctx.db.row(LS, ls)?;
    for port in ls_row.refs("ports") {
        if port == lsp {
            continue;
        }
        let Some(other) = ctx.db.get(LSP, &port)? else {
            continue;
        };
        for entry in other.get("addresses").keys().filter_map(Atom::as_str) {
            let entry = if entry.starts_with("dynamic") {
                other.get("dynamic_addresses").as_str().unwrap_or(entry)
            } else {
                entry
            };
            let theirs = address_ips(entry);
            for (ip, text) in &wanted {
                if theirs.iter().any(|(t, _)| t == ip) {
                    let family = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
                    bail!(
                        "Error on switch {}: duplicate {family} address '{text}' found on logical switch port '{}'",
                        ls_row.str("name"),
                        other.str("name")
                    );
                }
            }
        }
    }
    Ok(())
}

fn lsp_get_sorted(ctx: &mut Ctx, cmd: &Command, col: &str) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let lsp = lsp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let mut items: Vec<String> = ctx
        .db
        .row(LSP, &lsp)?
        .get(col)
        .keys()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    items.sort();
    ctx.out.extend(items.into_iter().map(|s| s + "\n"));
    Ok(())
}

fn lsp_set_strings(ctx: &mut Ctx, cmd: &Command, col: &str) -> Result<()> {
    check_args(cmd, 1, usize::MAX)?;
    let lsp = lsp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let atoms = cmd.args[1..]
        .iter()
        .map(|a| Atom::String(a.clone()))
        .collect();
    ctx.db.set(LSP, &lsp, col, set_of(atoms))
}

/// Port types `ovn_is_known_nb_lsp_type()` accepts in OVN 23.03.
const LSP_TYPES: &[&str] = &[
    "",
    "l2gateway",
    "localnet",
    "localport",
    "router",
    "vtep",
    "external",
    "virtual",
    "remote",
];

fn lsp_set_type(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 2, 2)?;
    let lsp = lsp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let ty = &cmd.args[1];
    if !LSP_TYPES.contains(&ty.as_str()) {
        bail!("Logical switch port type '{ty}' is unrecognized. Not setting type.");
    }
    ctx.db.set(LSP, &lsp, "type", Value::scalar(ty.clone()))
}

fn lsp_get_type(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let lsp = lsp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let ty = ctx.db.row(LSP, &lsp)?.str("type").to_owned();
    ctx.out.push_str(&format!("{ty}\n"));
    Ok(())
}

/// `KEY=VALUE` arguments as a string map; arguments without `=` are skipped, as in C.
pub fn options_map(args: &[String]) -> Value {
    let pairs = args
        .iter()
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| (Atom::String(k.to_owned()), Atom::String(v.to_owned())))
        .collect();
    map_of(pairs)
}

fn lsp_set_options(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, usize::MAX)?;
    let lsp = lsp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    ctx.db
        .set(LSP, &lsp, "options", options_map(&cmd.args[1..]))
}

fn lsp_get_options(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let lsp = lsp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let row = ctx.db.row(LSP, &lsp)?;
    for (k, v) in smap_iter_pairs(string_pairs(row.get("options"))) {
        ctx.out.push_str(&format!("{k}={v}\n"));
    }
    Ok(())
}

/// A string map's pairs as plain strings.
pub fn string_pairs(d: &Value) -> Vec<(String, String)> {
    d.pairs().map(|(k, v)| (k.to_bare(), v.to_bare())).collect()
}
