//! The generic "Database Commands" of `ovs-vsctl(8)` and `ovn-nbctl(8)`: `list`, `find`,
//! `get`, `set`, `add`, `remove`, `clear`, `create`, `destroy` on any table, driven by the
//! schema alone. Behaviour and messages follow OVS's `lib/db-ctl-base.c`.

use super::cli::{check_args, Command};
use super::idl::{Db, Row};
use super::notation::{
    atom_from_string, parse_token, value_from_text, AtomText, Symtab, ValueText,
};
use super::schema::{max_of, Column, ColumnType, SchemaExt, Table, TableExt};
use anyhow::{anyhow, bail, Result};
use ovsdb::{Map, Set, Value};
use std::cmp::Ordering;

/// A column that names the rows of a table on the command line (`ovs-vsctl(8)` "Identifying
/// Tables, Records, and Columns").
#[derive(Debug, Clone, Copy)]
pub struct RowId {
    pub table: &'static str,
    pub name_column: &'static str,
}

/// State shared by the commands of one run.
#[derive(Debug)]
pub struct Ctx<'a> {
    pub db: &'a mut Db,
    pub symtab: Symtab,
    pub out: String,
    pub row_ids: &'a [RowId],
    pub bare: bool,
}

/// The generic commands and their argument counts.
pub const GENERIC: &[(&str, usize, usize)] = &[
    ("list", 1, usize::MAX),
    ("find", 1, usize::MAX),
    ("get", 2, usize::MAX),
    ("set", 3, usize::MAX),
    ("add", 4, usize::MAX),
    ("remove", 4, usize::MAX),
    ("clear", 3, usize::MAX),
    ("create", 2, usize::MAX),
    ("destroy", 1, usize::MAX),
];

/// Runs `cmd` if it is a generic command; returns false otherwise.
pub fn run_generic(ctx: &mut Ctx, cmd: &Command) -> Result<bool> {
    let Some(&(_, min, max)) = GENERIC.iter().find(|(n, _, _)| *n == cmd.name) else {
        return Ok(false);
    };
    check_args(cmd, min, max)?;
    match cmd.name.as_str() {
        "list" => cmd_list(ctx, cmd, false)?,
        "find" => cmd_list(ctx, cmd, true)?,
        "get" => cmd_get(ctx, cmd)?,
        "set" => cmd_set(ctx, cmd)?,
        "add" => cmd_add(ctx, cmd)?,
        "remove" => cmd_remove(ctx, cmd)?,
        "clear" => cmd_clear(ctx, cmd)?,
        "create" => cmd_create(ctx, cmd)?,
        _ => cmd_destroy(ctx, cmd)?,
    }
    Ok(true)
}

/// Length of the UUID-looking prefix of `s` (hex digits and dashes in the right places).
fn partial_uuid_len(s: &str) -> usize {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        let ok = if matches!(i, 8 | 13 | 18 | 23) {
            c == b'-'
        } else {
            c.is_ascii_hexdigit()
        };
        if !ok || i >= 36 {
            return 0;
        }
    }
    b.len()
}

/// OVS's `ctl_get_row()`: a record named by UUID, `.`, a name column, or a UUID prefix.
pub fn get_row(ctx: &mut Ctx, table: &str, id: &str, must_exist: bool) -> Result<Option<String>> {
    let lower = id.to_ascii_lowercase();
    let name_columns: Vec<&str> = ctx
        .row_ids
        .iter()
        .filter(|r| r.table == table)
        .map(|r| r.name_column)
        .collect();
    // Only the name columns of the whole table; the row found is completed on use.
    ctx.db.load_columns(table, &name_columns)?;
    if ctx.db.get(table, &lower)?.is_some() {
        return Ok(Some(lower));
    }
    let rows = ctx.db.index_rows(table, &name_columns)?;
    if id == "." && rows.len() == 1 {
        return Ok(Some(rows[0].uuid.clone()));
    }
    for rid in ctx.row_ids.iter().filter(|r| r.table == table) {
        let mut found: Option<&Row> = None;
        for row in &rows {
            if row
                .get(rid.name_column)
                .keys()
                .any(|k| k.as_str() == Some(id))
            {
                if found.is_some() {
                    bail!("multiple rows in {table} match \"{id}\"");
                }
                found = Some(row);
            }
        }
        if let Some(row) = found {
            return Ok(Some(row.uuid.clone()));
        }
    }
    if partial_uuid_len(&lower) >= 4 {
        let matches: Vec<&Row> = rows.iter().filter(|r| r.uuid.starts_with(&lower)).collect();
        match matches.as_slice() {
            [one] => return Ok(Some(one.uuid.clone())),
            [a, b, ..] => bail!(
                "{table} contains 2 or more rows whose UUIDs begin with {id}: at least {} and {}",
                a.uuid,
                b.uuid
            ),
            [] => {}
        }
    }
    if must_exist {
        bail!("no row \"{id}\" in table {table}");
    }
    Ok(None)
}

/// `COLUMN[:KEY]` followed by an operator and a value (`parse_column_key_value()`).
struct ColumnKeyValue<'t> {
    column: &'t Column,
    key: Option<String>,
    op: Option<&'static str>,
    value: Option<String>,
}

fn parse_ckv<'t>(arg: &str, table: &'t Table, ops: &[&'static str]) -> Result<ColumnKeyValue<'t>> {
    let (name, mut rest) = parse_token(arg)?;
    if name.is_empty() {
        bail!("{arg}: missing column name");
    }
    let column = table.find_column(&name)?;
    let mut key = None;
    if let Some(r) = rest.strip_prefix(':') {
        let (k, r) = parse_token(r)?;
        key = Some(k);
        rest = r;
    }
    if ops.is_empty() {
        if !rest.is_empty() {
            bail!("{arg}: trailing garbage \"{rest}\" in argument");
        }
        return Ok(ColumnKeyValue {
            column,
            key,
            op: None,
            value: None,
        });
    }
    let best = ops
        .iter()
        .filter(|op| rest.starts_with(**op) && rest.len() > op.len())
        .max_by_key(|op| op.len());
    let Some(op) = best else {
        let quoted: Vec<String> = ops.iter().map(|o| format!("\"{o}\"")).collect();
        let list = match quoted.len() {
            1 => quoted[0].clone(),
            2 => format!("{} or {}", quoted[0], quoted[1]),
            n => format!("{}, or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
        };
        bail!("{arg}: argument does not end in {list} followed by a value.");
    };
    Ok(ColumnKeyValue {
        column,
        key,
        op: Some(op),
        value: Some(rest[op.len()..].to_owned()),
    })
}

/// Column headings and values of `row` for `list`/`find`.
fn column_names(table: &Table, spec: Option<&str>) -> Result<Vec<Option<String>>> {
    let Some(spec) = spec else {
        let mut all = vec![None];
        all.extend(table.columns.keys().map(|c| Some(c.clone())));
        return Ok(all);
    };
    let mut out = Vec::new();
    for name in spec.split([',', ' ']).filter(|s| !s.is_empty()) {
        if name.eq_ignore_ascii_case("_uuid") {
            out.push(None);
        } else {
            out.push(Some(table.find_column(name)?.name.to_string()));
        }
    }
    if out.is_empty() {
        bail!("must specify at least one column name");
    }
    Ok(out)
}

/// Prints records in the C tools' "list" format: `name<pad> : value`, blank line between.
fn print_records(ctx: &mut Ctx, table: &Table, cols: &[Option<String>], rows: &[Row]) {
    // OVS's table_print_list__() pads headings with "%-20s: ".
    let heading = |c: &Option<String>| c.clone().unwrap_or_else(|| "_uuid".into());
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            ctx.out.push('\n');
        }
        for c in cols {
            let text = match c {
                None => row.uuid.clone(),
                Some(c) if ctx.bare => row.get(c).to_bare(),
                Some(c) => row.get(c).to_text(&table.columns[c].type_),
            };
            if ctx.bare {
                ctx.out.push_str(&format!("{text}\n"));
            } else {
                ctx.out.push_str(&format!("{:<20}: {text}\n", heading(c)));
            }
        }
    }
}

const RELOPS: &[&str] = &[
    "=", "!=", "<", ">", "<=", ">=", "{=}", "{!=}", "{<}", "{>}", "{<=}", "{>=}", "{in}",
    "{not-in}",
];

/// `ovsdb_datum_includes_all()`: every element (pair, for a map) of `a` is in `b`.
fn includes_all(a: &Value, b: &Value) -> bool {
    match a {
        Value::Set(set) => set.iter().all(|k| b.contains_key(k)),
        Value::Map(map) => map
            .iter()
            .all(|(k, v)| b.as_map().and_then(|m| m.get(k)) == Some(v)),
    }
}

fn evaluate(op: &str, a: &Value, b: &Value) -> bool {
    let c = a.compare_3way(b);
    match op {
        "=" | "{=}" => c == Ordering::Equal,
        "!=" | "{!=}" => c != Ordering::Equal,
        "<" => c == Ordering::Less,
        ">" => c == Ordering::Greater,
        "<=" => c != Ordering::Greater,
        ">=" => c != Ordering::Less,
        "{<}" => b.len() > a.len() && includes_all(a, b),
        "{>}" => a.len() > b.len() && includes_all(b, a),
        "{<=}" | "{in}" => includes_all(a, b),
        "{>=}" => includes_all(b, a),
        _ => a.keys().all(|k| !b.contains_key(k)),
    }
}

/// OVS's `check_condition()` for `find`.
fn check_condition(ctx: &mut Ctx, table: &Table, row: &Row, arg: &str) -> Result<bool> {
    let ckv = parse_ckv(arg, table, RELOPS)?;
    let (op, value) = (ckv.op.unwrap_or("="), ckv.value.unwrap_or_default());
    let mut ty = ckv.column.type_.clone();
    ty.max = None;
    let have = row.get(&ckv.column.name);
    match ckv.key {
        Some(key) => {
            let Some(vt) = ty.value.clone() else {
                bail!(
                    "cannot specify key to check for non-map column {}",
                    ckv.column.name
                );
            };
            let key = atom_from_string(&ty.key, &key, &mut ctx.symtab)?;
            let want_ty = ColumnType {
                key: vt,
                value: None,
                min: 0,
                max: None,
            };
            let want = value_from_text(&want_ty, &value, &mut ctx.symtab)?;
            match have.as_map().and_then(|m| m.get(&key)) {
                Some(v) => Ok(evaluate(op, &Value::scalar(v.clone()), &want)),
                None if op.starts_with('{') => Ok(evaluate(op, &Value::default(), &want)),
                None => Ok(false),
            }
        }
        None => {
            let want = value_from_text(&ckv.column.type_, &value, &mut ctx.symtab)?;
            Ok(evaluate(op, have, &want))
        }
    }
}

fn cmd_list(ctx: &mut Ctx, cmd: &Command, find: bool) -> Result<()> {
    let table = ctx.db.schema.find_table(&cmd.args[0])?.clone();
    let cols = column_names(&table, cmd.option("--columns"))?;
    let mut rows = Vec::new();
    if !find && cmd.args.len() > 1 {
        for id in &cmd.args[1..] {
            if let Some(u) = get_row(ctx, &table.name, id, !cmd.has("--if-exists"))? {
                rows.push(ctx.db.row(&table.name, &u)?);
            }
        }
    } else {
        let all: Vec<Row> = ctx.db.rows(&table.name)?;
        'rows: for row in all {
            if find {
                for cond in &cmd.args[1..] {
                    if !check_condition(ctx, &table, &row, cond)? {
                        continue 'rows;
                    }
                }
            }
            rows.push(row);
        }
    }
    print_records(ctx, &table, &cols, &rows);
    Ok(())
}

fn cmd_get(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    let must_exist = !cmd.has("--if-exists");
    let id = cmd.option("--id");
    if id.is_some() && !must_exist {
        bail!("--if-exists and --id may not be specified together");
    }
    let table = ctx.db.schema.find_table(&cmd.args[0])?.clone();
    let Some(uuid) = get_row(ctx, &table.name, &cmd.args[1], must_exist)? else {
        return Ok(());
    };
    if let Some(id) = id {
        if ctx.symtab.symbols.contains_key(id) {
            bail!("row id \"{id}\" specified on \"get\" command was used before it was defined");
        }
        ctx.symtab.symbols.insert(id.to_owned(), uuid.clone());
    }
    let row = ctx.db.row(&table.name, &uuid)?;
    for arg in &cmd.args[2..] {
        if arg.eq_ignore_ascii_case("_uuid") || arg.eq_ignore_ascii_case("-uuid") {
            ctx.out.push_str(&format!("{uuid}\n"));
            continue;
        }
        let ckv = parse_ckv(arg, &table, &[])?;
        let datum = row.get(&ckv.column.name);
        if let Some(key) = ckv.key {
            let Some(_) = &ckv.column.type_.value else {
                bail!(
                    "cannot specify key to get for non-map column {}",
                    ckv.column.name
                );
            };
            let k = atom_from_string(&ckv.column.type_.key, &key, &mut ctx.symtab)?;
            // `get` prints the text form even under --bare, as db-ctl-base does.
            match datum.as_map().and_then(|m| m.get(&k)) {
                Some(v) => ctx.out.push_str(&v.to_text()),
                None if must_exist => bail!(
                    "no key \"{key}\" in {} record \"{}\" column {}",
                    table.name,
                    cmd.args[1],
                    ckv.column.name
                ),
                None => {}
            }
        } else {
            ctx.out.push_str(&datum.to_text(&ckv.column.type_));
        }
        ctx.out.push('\n');
    }
    Ok(())
}

/// `set_column()`: one `COLUMN[:KEY]=VALUE` argument applied to a row.
pub fn set_column(
    ctx: &mut Ctx,
    table: &Table,
    uuid: &str,
    arg: &str,
    new_row: bool,
) -> Result<()> {
    let ckv = parse_ckv(arg, table, &["="])?;
    let value = ckv.value.unwrap_or_default();
    let col = ckv.column;
    if !col.mutable && !new_row {
        bail!(
            "cannot modify read-only column {} in table {}",
            col.name,
            table.name
        );
    }
    let datum = match ckv.key {
        Some(key) => {
            let Some(vt) = &col.type_.value else {
                bail!("cannot specify key to set for non-map column {}", col.name);
            };
            let k = atom_from_string(&col.type_.key, &key, &mut ctx.symtab)?;
            let v = atom_from_string(vt, &value, &mut ctx.symtab)?;
            let old = ctx.db.row(&table.name, uuid)?;
            let mut map = old.get(&col.name).as_map().cloned().unwrap_or_default();
            map.insert(k, v);
            Value::Map(map)
        }
        None => value_from_text(&col.type_, &value, &mut ctx.symtab)?,
    };
    ctx.db.set(&table.name, uuid, &col.name, datum)
}

fn target(ctx: &mut Ctx, cmd: &Command) -> Result<Option<(Table, String)>> {
    let table = ctx.db.schema.find_table(&cmd.args[0])?.clone();
    let uuid = get_row(ctx, &table.name, &cmd.args[1], !cmd.has("--if-exists"))?;
    Ok(uuid.map(|u| (table, u)))
}

fn cmd_set(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    let Some((table, uuid)) = target(ctx, cmd)? else {
        return Ok(());
    };
    for arg in &cmd.args[2..] {
        set_column(ctx, &table, &uuid, arg, false)?;
    }
    Ok(())
}

fn mutable_column<'t>(table: &'t Table, name: &str) -> Result<&'t Column> {
    let col = table.find_column(name)?;
    if !col.mutable {
        bail!(
            "cannot modify read-only column {} in table {}",
            col.name,
            table.name
        );
    }
    Ok(col)
}

fn count_word(ty: &ColumnType) -> &'static str {
    if ty.is_map() {
        "pairs"
    } else {
        "values"
    }
}

fn cmd_add(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    let Some((table, uuid)) = target(ctx, cmd)? else {
        return Ok(());
    };
    let col = mutable_column(&table, &cmd.args[2])?.clone();
    let mut add_ty = col.type_.clone();
    add_ty.min = 0;
    add_ty.max = None;
    let mut datum = ctx.db.row(&table.name, &uuid)?.get(&col.name).clone();
    for arg in &cmd.args[3..] {
        let add = value_from_text(&add_ty, arg, &mut ctx.symtab)?;
        datum = union(&datum, &add);
    }
    if datum.len() as u64 > max_of(&col.type_) {
        bail!(
            "\"add\" operation would put {} {} in column {} of table {} but the maximum number is {}",
            datum.len(), count_word(&col.type_), col.name, table.name, max_of(&col.type_)
        );
    }
    ctx.db.set(&table.name, &uuid, &col.name, datum)
}

/// Union of two values; for maps, keys already in `a` keep their value.
fn union(a: &Value, b: &Value) -> Value {
    match b {
        Value::Map(b) => {
            let mut union = a.as_map().cloned().unwrap_or_default();
            for (k, v) in b.iter() {
                if union.get(k).is_none() {
                    union.insert(k.clone(), v.clone());
                }
            }
            Value::Map(union)
        }
        _ => Value::Set(a.keys().chain(b.keys()).cloned().collect()),
    }
}

fn cmd_remove(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    let Some((table, uuid)) = target(ctx, cmd)? else {
        return Ok(());
    };
    let col = mutable_column(&table, &cmd.args[2])?.clone();
    let mut datum = ctx.db.row(&table.name, &uuid)?.get(&col.name).clone();
    let mut rm_ty = col.type_.clone();
    rm_ty.min = 0;
    rm_ty.max = None;
    for arg in &cmd.args[3..] {
        let by_pair = value_from_text(&rm_ty, arg, &mut ctx.symtab);
        let (rm, keys_only) = match (by_pair, &col.type_.value) {
            (Ok(d), _) => (d, false),
            (Err(e), None) => return Err(e),
            (Err(e), Some(_)) => {
                let key_ty = ColumnType {
                    value: None,
                    ..rm_ty.clone()
                };
                (
                    value_from_text(&key_ty, arg, &mut ctx.symtab).map_err(|_| e)?,
                    true,
                )
            }
        };
        datum = subtract(&datum, &rm, keys_only);
    }
    if (datum.len() as u64) < col.type_.min {
        bail!(
            "\"remove\" operation would put {} {} in column {} of table {} but the minimum number is {}",
            datum.len(), count_word(&col.type_), col.name, table.name, col.type_.min
        );
    }
    ctx.db.set(&table.name, &uuid, &col.name, datum)
}

/// `a` without the elements of `b`; for maps, without the pairs of `b` (or, with
/// `keys_only`, without the keys `b` holds as a set).
fn subtract(a: &Value, b: &Value, keys_only: bool) -> Value {
    match a {
        Value::Map(map) => Value::Map(
            map.iter()
                .filter(|(k, v)| match b.as_map().and_then(|m| m.get(k)) {
                    _ if keys_only => !b.contains_key(k),
                    Some(bv) => bv != *v,
                    None => true,
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map>(),
        ),
        Value::Set(set) => Value::Set(
            set.iter()
                .filter(|k| !b.contains_key(k))
                .cloned()
                .collect::<Set>(),
        ),
    }
}

fn cmd_clear(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    let Some((table, uuid)) = target(ctx, cmd)? else {
        return Ok(());
    };
    for name in &cmd.args[2..] {
        let col = mutable_column(&table, name)?.clone();
        if col.type_.min > 0 {
            bail!(
                "\"clear\" operation cannot be applied to column {} of table {}, which is not allowed to be empty",
                col.name, table.name
            );
        }
        ctx.db
            .set(&table.name, &uuid, &col.name, col.type_.empty_value())?;
    }
    Ok(())
}

fn cmd_create(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    let table = ctx.db.schema.find_table(&cmd.args[0])?.clone();
    let uuid = match cmd.option("--id") {
        Some(id) => {
            if !id.starts_with('@') || id.len() < 2 {
                bail!("row id \"{id}\" does not begin with \"@\"");
            }
            if ctx.symtab.symbols.contains_key(id) {
                bail!("row id \"{id}\" may only be specified on one --id option");
            }
            let u = ctx.symtab.uuid_for(id);
            ctx.db.insert_with_uuid(&table.name, u)?
        }
        None => ctx.db.insert(&table.name)?,
    };
    for arg in &cmd.args[1..] {
        set_column(ctx, &table, &uuid, arg, true)?;
    }
    ctx.out.push_str(&format!("{uuid}\n"));
    Ok(())
}

fn cmd_destroy(ctx: &mut Ctx, cmd: &Command) -> Result<()> {
    let table = ctx.db.schema.find_table(&cmd.args[0])?.clone();
    if cmd.has("--all") {
        if cmd.args.len() > 1 {
            bail!("--all and records argument should not be specified together");
        }
        let all: Vec<String> = ctx
            .db
            .rows(&table.name)?
            .iter()
            .map(|r| r.uuid.clone())
            .collect();
        for u in all {
            ctx.db.delete(&table.name, &u)?;
        }
        return Ok(());
    }
    if cmd.args.len() < 2 {
        bail!("either --all or records argument should be specified");
    }
    for id in &cmd.args[1..] {
        if let Some(u) = get_row(ctx, &table.name, id, !cmd.has("--if-exists"))? {
            ctx.db.delete(&table.name, &u)?;
        }
    }
    Ok(())
}

/// Looks a row up by name in a table's name column (first match), for tool commands.
pub fn find_by_name(db: &mut Db, table: &str, column: &str, name: &str) -> Result<Option<String>> {
    let rows = db.rows(table)?;
    Ok(rows
        .iter()
        .find(|r| r.str(column) == name)
        .map(|r| r.uuid.clone()))
}

/// A typed error helper: the referenced row vanished mid-run.
pub fn missing(table: &str, uuid: &str) -> anyhow::Error {
    anyhow!("{table} row {uuid} is missing")
}
