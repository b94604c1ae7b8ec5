//! NAT and DHCP options commands (`ovn-nbctl(8)` "NAT Commands", "DHCP Options
//! Commands").

use super::addr::{is_mac, normalize_addr, normalize_prefix, parse_cidr};
use super::lb::{lr_get, LR};
use super::switch::{looks_like_uuid, lsp_get, options_map};
use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::Ctx;
use crate::dbctl::idl::Row;
use crate::dbctl::notation::{string, uuid_atom};
use anyhow::{bail, Result};
use ovsdb::Value;

pub const NAT: &str = "NAT";
pub const DHCP: &str = "DHCP_Options";

pub fn run(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    match cmd.name.as_str() {
        "lr-nat-add" => nat_add(ctx, cmd)?,
        "lr-nat-del" => nat_del(ctx, cmd)?,
        "lr-nat-list" => nat_list(ctx, cmd)?,
        "dhcp-options-create" => dhcp_create(ctx, cmd)?,
        "dhcp-options-set-options" => dhcp_set_options(ctx, cmd)?,
        "dhcp-options-get-options" => dhcp_get_options(ctx, cmd)?,
        "dhcp-options-del" => dhcp_del(ctx, cmd)?,
        "dhcp-options-list" => dhcp_list(ctx, cmd)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn check_type(t: &str) -> Result<()> {
    if !matches!(t, "dnat" | "snat" | "dnat_and_snat") {
        bail!("{t}: type must be one of \"dnat\", \"snat\" and \"dnat_and_snat\".");
    }
    Ok(())
}

fn nats(ctx: &mut Ctx, lr: &str) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    for u in ctx.db.row(LR, lr)?.refs("nat") {
        if let Some(r) = ctx.db.get(NAT, &u)? {
            out.push(r.clone());
        }
    }
    Ok(out)
}

/// `is_valid_port_range()`: `LO` or `LO-HI` with 0 < LO < HI <= 65535.
fn valid_port_range(r: &str) -> bool {
    let mut parts = r.split('-');
    let lo = parts
        .next()
        .and_then(|p| p.parse::<i64>().ok())
        .unwrap_or(0);
    match (parts.next(), parts.next()) {
        (None, _) => lo > 0,
        (Some(hi), None) => hi
            .parse::<i64>()
            .is_ok_and(|hi| lo > 0 && lo < hi && hi <= 65535),
        _ => false,
    }
}

fn nat_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 4, 7)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let (nat_type, external_ip, logical_ip) = (&cmd.args[1], &cmd.args[2], &cmd.args[3]);
    check_type(nat_type)?;
    let (new_external, v6) = match normalize_addr(external_ip, false) {
        Some(a) => (a, false),
        None => match normalize_addr(external_ip, true) {
            Some(a) => (a, true),
            None => bail!("{external_ip}: Not a valid IPv4 or IPv6 address."),
        },
    };
    let family = if v6 { "IPv6" } else { "IPv4" };
    let is_snat = nat_type == "snat";
    let new_logical = if is_snat {
        match parse_cidr(logical_ip).filter(|(ip, _)| ip.is_ipv6() == v6) {
            Some(_) => normalize_prefix(logical_ip).unwrap_or_default(),
            None => bail!("{logical_ip}: should be an {family} address or network."),
        }
    } else {
        match normalize_addr(logical_ip, v6) {
            Some(a) => a,
            None => bail!("{logical_ip}: Not a valid {family} address."),
        }
    };
    let is_portrange = cmd.has("--portrange");
    let (mut logical_port, mut external_mac, mut port_range) = (None, None, None);
    if cmd.args.len() == 5 {
        if !is_portrange {
            bail!("lr-nat-add with logical_port must also specify external_mac.");
        }
        port_range = Some(cmd.args[4].clone());
    } else if cmd.args.len() >= 6 {
        if nat_type != "dnat_and_snat" {
            bail!("logical_port and external_mac are only valid when type is \"dnat_and_snat\".");
        }
        if cmd.args.len() == 6 && is_portrange {
            bail!("lr-nat-add with logical_port must also specify external_mac.");
        }
        lsp_get(ctx, &cmd.args[4], true)?;
        logical_port = Some(cmd.args[4].clone());
        if !is_mac(&cmd.args[5]) {
            bail!("invalid mac address {}.", cmd.args[5]);
        }
        external_mac = Some(cmd.args[5].clone());
        port_range = cmd.args.get(6).cloned();
    }
    if let Some(r) = port_range.as_deref().filter(|r| !valid_port_range(r)) {
        bail!("invalid port range {r}.");
    }
    let stateless = cmd.has("--stateless");
    if nat_type != "dnat_and_snat" && stateless {
        bail!("stateless is not applicable to dnat or snat types");
    }
    for nat in nats(ctx, &lr)? {
        let (Some(old_ext), Some(old_log)) = (
            normalize_prefix(nat.str("external_ip")),
            normalize_prefix(nat.str("logical_ip")),
        ) else {
            continue;
        };
        if nat.str("type") == nat_type.as_str() {
            let (key_new, key_old) = if is_snat {
                (&new_logical, &old_log)
            } else {
                (&new_external, &old_ext)
            };
            let (other_new, other_old) = if is_snat {
                (&new_external, &old_ext)
            } else {
                (&new_logical, &old_log)
            };
            if key_new == key_old {
                if other_new != other_old {
                    let which = if is_snat { "logical_ip" } else { "external_ip" };
                    bail!(
                        "a NAT with this type ({nat_type}) and {which} ({key_new}) already exists"
                    );
                }
                if !cmd.has("--may-exist") {
                    bail!("{new_external}, {new_logical}: a NAT with this external_ip and logical_ip already exists");
                }
                let opt = |v: &Option<String>| v.as_deref().map(string).unwrap_or_default();
                ctx.db
                    .set(NAT, &nat.uuid, "logical_port", opt(&logical_port))?;
                ctx.db
                    .set(NAT, &nat.uuid, "external_mac", opt(&external_mac))?;
                return Ok(());
            }
        }
        if (nat_type == "dnat_and_snat" || nat.str("type") == "dnat_and_snat")
            && old_ext == new_external
            && (nat.map_get("options", "stateless") == Some("true") || stateless)
        {
            bail!("{new_external}, {new_logical}: External ip cannot be shared across stateless and stateful NATs");
        }
    }
    let nat = ctx.db.insert(NAT)?;
    ctx.db.set(NAT, &nat, "type", string(nat_type))?;
    ctx.db.set(NAT, &nat, "external_ip", string(external_ip))?;
    ctx.db.set(NAT, &nat, "logical_ip", string(&new_logical))?;
    if let (Some(p), Some(m)) = (&logical_port, &external_mac) {
        ctx.db.set(NAT, &nat, "logical_port", string(p))?;
        ctx.db.set(NAT, &nat, "external_mac", string(m))?;
    }
    if let Some(r) = &port_range {
        ctx.db.set(NAT, &nat, "external_port_range", string(r))?;
    }
    let stateless = if stateless {
        "stateless=true"
    } else {
        "stateless=false"
    };
    ctx.db
        .set(NAT, &nat, "options", options_map(&[stateless.to_owned()]))?;
    ctx.db.set_add(LR, &lr, "nat", uuid_atom(&nat)?)
}

fn nat_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 3)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let Some(nat_type) = cmd.args.get(1) else {
        return ctx.db.set(LR, &lr, "nat", Value::empty_set());
    };
    check_type(nat_type)?;
    let all = nats(ctx, &lr)?;
    let Some(ip) = cmd.args.get(2) else {
        for n in all.iter().filter(|n| n.str("type") == nat_type.as_str()) {
            ctx.db
                .set_remove(LR, &lr, "nat", &uuid_atom(&n.uuid.clone())?)?;
        }
        return Ok(());
    };
    let Some(nat_ip) = normalize_prefix(ip) else {
        bail!("{ip}: Invalid IP address or CIDR")
    };
    let is_snat = nat_type == "snat";
    for n in &all {
        let old = normalize_prefix(if is_snat {
            n.str("logical_ip")
        } else {
            n.str("external_ip")
        });
        if n.str("type") == nat_type.as_str() && old.as_deref() == Some(nat_ip.as_str()) {
            return ctx
                .db
                .set_remove(LR, &lr, "nat", &uuid_atom(&n.uuid.clone())?);
        }
    }
    if !cmd.has("--if-exists") {
        let which = if is_snat { "logical_ip" } else { "external_ip" };
        bail!("no matching NAT with the type ({nat_type}) and {which} ({nat_ip})");
    }
    Ok(())
}

fn trunc(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn nat_list(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let lr = lr_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let mut lines = Vec::new();
    for n in nats(ctx, &lr)? {
        let gw = n.get("gateway_port").as_uuid().map(|u| u.to_string());
        let gw = match gw {
            Some(u) => ctx
                .db
                .get("Logical_Router_Port", &u)?
                .map(|r| r.str("name").to_owned())
                .unwrap_or_default(),
            None => String::new(),
        };
        let key = format!(
            "{:<17}{:<22}{}",
            trunc(n.str("type"), 13),
            trunc(&gw, 18),
            n.str("external_ip")
        );
        let tail = match (
            n.get("external_mac").as_str(),
            n.get("logical_port").as_str(),
        ) {
            (Some(mac), Some(port)) => format!(
                "{:<17}{:<20}{:<21}{port}",
                trunc(n.str("external_port_range"), 13),
                trunc(n.str("logical_ip"), 16),
                trunc(mac, 17)
            ),
            _ => format!(
                "{:<17}{}",
                trunc(n.str("external_port_range"), 13),
                n.str("logical_ip")
            ),
        };
        lines.push((key, tail));
    }
    if lines.is_empty() {
        return Ok(());
    }
    let keys: Vec<&str> = lines.iter().map(|(k, _)| k.as_str()).collect();
    let order = crate::dbctl::order::smap_sorted(&keys);
    let lines: Vec<(String, String)> = order.into_iter().map(|i| lines[i].clone()).collect();
    ctx.out.push_str(&format!(
        "{:<17}{:<22}{:<19}{:<17}{:<20}{:<21}{}\n",
        "TYPE",
        "GATEWAY_PORT",
        "EXTERNAL_IP",
        "EXTERNAL_PORT",
        "LOGICAL_IP",
        "EXTERNAL_MAC",
        "LOGICAL_PORT"
    ));
    for (key, tail) in lines {
        ctx.out
            .push_str(&format!("{:<58}{tail}\n", trunc(&key, 54)));
    }
    Ok(())
}

fn dhcp_get(ctx: &mut Ctx, id: &str, must_exist: bool) -> Result<Option<String>> {
    let lower = id.to_ascii_lowercase();
    if looks_like_uuid(id) && ctx.db.get(DHCP, &lower)?.is_some() {
        return Ok(Some(lower));
    }
    if must_exist {
        bail!("{id}: dhcp options UUID not found");
    }
    Ok(None)
}

fn dhcp_create(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, usize::MAX)?;
    let cidr = &cmd.args[0];
    if parse_cidr(cidr).is_none() || !cidr.contains('/') && parse_cidr(cidr).is_none() {
        bail!("Invalid cidr format '{cidr}'");
    }
    let d = ctx.db.insert(DHCP)?;
    ctx.db.set(DHCP, &d, "cidr", string(cidr))?;
    ctx.db
        .set(DHCP, &d, "external_ids", options_map(&cmd.args[1..]))
}

fn dhcp_set_options(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, usize::MAX)?;
    let d = dhcp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    ctx.db.set(DHCP, &d, "options", options_map(&cmd.args[1..]))
}

fn dhcp_get_options(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    let d = dhcp_get(ctx, &cmd.args[0], true)?.expect("must_exist");
    let row = ctx.db.row(DHCP, &d)?;
    for (k, v) in
        crate::dbctl::order::smap_iter_pairs(super::switch::string_pairs(row.get("options")))
    {
        ctx.out.push_str(&format!("{k}={v}\n"));
    }
    Ok(())
}

fn dhcp_del(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 1, 1)?;
    if let Some(d) = dhcp_get(ctx, &cmd.args[0], !cmd.has("--if-exists"))? {
        ctx.db.delete(DHCP, &d)?;
    }
    Ok(())
}

fn dhcp_list(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 0, 0)?;
    let lines: Vec<(String, String)> = ctx
        .db
        .rows(DHCP)?
        .iter()
        .map(|r| (r.str("cidr").to_owned(), r.uuid.clone()))
        .collect();
    for u in crate::dbctl::order::smap_sorted_values(lines) {
        ctx.out.push_str(&format!("{u}\n"));
    }
    Ok(())
}
