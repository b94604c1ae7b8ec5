//! `ovs-vsctl show`: the Open_vSwitch → Manager/Bridge → Controller/Port → Interface tree,
//! printed as OVS's `cmd_show()` (lib/db-ctl-base.c) does with ovs-vsctl's show table:
//! each row is `Table name` (or its UUID when the table has no name column), followed by
//! the non-default values of the listed columns and, for reference columns, the referenced
//! rows one level deeper, in set (UUID) order.

use crate::dbctl::cli::{check_args, Command};
use crate::dbctl::commands::Ctx;
use crate::dbctl::idl::Row;
use crate::dbctl::notation::ValueText;
use crate::dbctl::schema::{SchemaExt, TableExt};
use anyhow::Result;
use ovsdb::{Atom, Value};

/// One table of the tree: its name column and the columns shown.
struct ShowTable {
    table: &'static str,
    name_column: Option<&'static str>,
    columns: &'static [&'static str],
}

const SHOW_TABLES: &[ShowTable] = &[
    ShowTable {
        table: "Open_vSwitch",
        name_column: None,
        columns: &["manager_options", "bridges", "ovs_version"],
    },
    ShowTable {
        table: "Bridge",
        name_column: Some("name"),
        columns: &["controller", "fail_mode", "datapath_type", "ports"],
    },
    ShowTable {
        table: "Port",
        name_column: Some("name"),
        columns: &["tag", "trunks", "interfaces"],
    },
    ShowTable {
        table: "Interface",
        name_column: Some("name"),
        columns: &["type", "options", "error"],
    },
    ShowTable {
        table: "Controller",
        name_column: Some("target"),
        columns: &["is_connected"],
    },
    ShowTable {
        table: "Manager",
        name_column: Some("target"),
        columns: &["is_connected"],
    },
];

fn find(table: &str) -> Option<&'static ShowTable> {
    SHOW_TABLES.iter().find(|t| t.table == table)
}

/// `ovsdb_datum_is_default()`.
fn is_default(d: &Value, min: u64) -> bool {
    if d.len() as u64 != min {
        return false;
    }
    let default_atom = |a: &ovsdb::Atom| *a == a.atom_type().default_atom();
    d.keys().all(default_atom) && d.pairs().all(|(_, v)| default_atom(v))
}

fn show_row(
    ctx: &mut Ctx,
    table: &str,
    row: &Row,
    level: usize,
    shown: &mut Vec<&'static str>,
) -> Result<()> {
    let show = find(table);
    let schema_table = ctx.db.schema.table_or_err(table)?.clone();
    let indent = " ".repeat(level * 4);
    match show.and_then(|s| s.name_column) {
        Some(nc) => {
            let text = row.get(nc).to_text(&schema_table.column_or_err(nc)?.type_);
            ctx.out.push_str(&format!("{indent}{table} {text}\n"));
        }
        None => ctx.out.push_str(&format!("{indent}{}\n", row.uuid)),
    }
    let Some(show) = show else { return Ok(()) };
    if shown.contains(&show.table) {
        return Ok(());
    }
    shown.push(show.table);
    for col in show.columns {
        let column = schema_table.column_or_err(col)?.clone();
        let datum = row.get(col).clone();
        if let Some(ref_table) = column
            .type_
            .key
            .ref_table
            .as_deref()
            .filter(|t| find(t).is_some())
        {
            for u in datum.keys().filter_map(Atom::as_uuid) {
                if let Some(child) = ctx.db.get(ref_table, &u.to_string())? {
                    show_row(ctx, ref_table, &child, level + 1, shown)?;
                }
            }
            continue;
        }
        if !is_default(&datum, column.type_.min) {
            let indent = " ".repeat((level + 1) * 4);
            ctx.out.push_str(&format!(
                "{indent}{col}: {}\n",
                datum.to_text(&column.type_)
            ));
        }
    }
    shown.retain(|t| *t != show.table);
    Ok(())
}

pub fn show(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    check_args(cmd, 0, 0)?;
    let tables: Vec<&str> = SHOW_TABLES.iter().map(|t| t.table).collect();
    ctx.db.load(&tables)?;
    let roots: Vec<Row> = ctx.db.rows("Open_vSwitch")?;
    let mut shown = Vec::new();
    for row in &roots {
        show_row(ctx, "Open_vSwitch", row, 0, &mut shown)?;
    }
    Ok(())
}
