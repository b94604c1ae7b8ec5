//! The schema as the command-line tools use it: the `ovsdb` crate's
//! [`DatabaseSchema`](ovsdb::DatabaseSchema), plus the C tools' lookups with their error
//! messages (`db-ctl-base.c`: abbreviated, case-insensitive table and column names).

use anyhow::{anyhow, bail, Result};

pub use ovsdb::schema::{
    BaseType, ColumnSchema as Column, ColumnType, DatabaseSchema as Schema, RefType,
    TableSchema as Table,
};
pub use ovsdb::value::AtomType as AtomicType;

/// Lookups that fail with the C tools' messages.
pub trait SchemaExt {
    /// A table by its exact name.
    fn table_or_err(&self, name: &str) -> Result<&Table>;
    /// Resolves a possibly abbreviated table name (as OVS's `get_table()`).
    fn find_table(&self, given: &str) -> Result<&Table>;
}

/// Column lookups that fail with the C tools' messages.
pub trait TableExt {
    /// A column by its exact name.
    fn column_or_err(&self, name: &str) -> Result<&Column>;
    /// Resolves a possibly abbreviated column name.
    fn find_column(&self, given: &str) -> Result<&Column>;
}

/// The `max` of a column type as a number (`unlimited` is `u64::MAX`).
pub fn max_of(ty: &ColumnType) -> u64 {
    ty.max.unwrap_or(u64::MAX)
}

/// OVS's `score_partial_match()`: table and column names may be abbreviated and are
/// matched case-insensitively, with `-` standing for `_`.
fn score_partial_match(name: &str, given: &str) -> u32 {
    if name == given {
        return u32::MAX;
    }
    let norm = |c: u8| {
        if c == b'-' {
            b'_'
        } else {
            c.to_ascii_lowercase()
        }
    };
    let (n, g) = (name.as_bytes(), given.as_bytes());
    let mut score = 0;
    loop {
        let (a, b) = (n.get(score).copied(), g.get(score).copied());
        match (a, b) {
            (None, None) => return u32::MAX - 1,
            (Some(a), Some(b)) if norm(a) == norm(b) => score += 1,
            (_, None) => return score as u32,
            _ => return 0,
        }
    }
}

/// Picks the single best match of `given` among `names` (as OVS's `get_table()`).
pub fn best_match<'a>(names: impl Iterator<Item = &'a String>, given: &str) -> Vec<&'a String> {
    let mut best: Vec<&String> = Vec::new();
    let mut best_score = 0;
    for name in names {
        let score = score_partial_match(name, given);
        if score > 0 && score >= best_score {
            if score > best_score {
                best.clear();
            }
            best.push(name);
            best_score = score;
        }
    }
    best
}

impl SchemaExt for Schema {
    fn table_or_err(&self, name: &str) -> Result<&Table> {
        self.tables
            .get(name)
            .ok_or_else(|| anyhow!("unknown table \"{name}\""))
    }

    fn find_table(&self, given: &str) -> Result<&Table> {
        let best = best_match(self.tables.keys(), given);
        match best.as_slice() {
            [] => bail!("unknown table \"{given}\""),
            [one] => Ok(&self.tables[*one]),
            many => bail!(
                "\"{given}\" matches multiple table names: {}",
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl TableExt for Table {
    fn find_column(&self, given: &str) -> Result<&Column> {
        let best = best_match(self.columns.keys(), given);
        match best.as_slice() {
            [] => bail!(
                "{} does not contain a column whose name matches \"{given}\"",
                self.name
            ),
            [one] => Ok(&self.columns[*one]),
            many => bail!(
                "{} contains more than one column whose name matches \"{given}\": {}",
                self.name,
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn column_or_err(&self, name: &str) -> Result<&Column> {
        self.columns
            .get(name)
            .ok_or_else(|| anyhow!("{}: no column {name}", self.name))
    }
}
