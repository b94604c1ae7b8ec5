//! Helpers shared by the interop tests: run a tool against a database, normalize UUIDs,
//! dump a database in a UUID-independent form.

#![allow(dead_code)]

use std::process::Command;

/// What one invocation printed and whether it succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `program --db=REMOTE args...`.
pub fn run_tool(program: &str, remote: &str, args: &[&str]) -> Outcome {
    let out = Command::new(program)
        .arg(format!("--db={remote}"))
        .args(args)
        .env_remove("OVN_NB_DB")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    Outcome {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn is_uuid_at(b: &[u8], i: usize) -> bool {
    b.len() >= i + 36
        && (0..36).all(|k| {
            let c = b[i + k];
            if matches!(k, 8 | 13 | 18 | 23) {
                c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        })
}

/// Replaces every UUID in `s` with `<uuid>`, so outputs from two databases compare.
pub fn normalize_uuids(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if is_uuid_at(b, i) {
            out.push_str("<uuid>");
            i += 36;
        } else {
            let ch = s[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// `list TABLE` through `program`, records UUID-normalized and sorted: equal for two
/// databases with the same content.
pub fn dump_table(program: &str, remote: &str, table: &str) -> Vec<String> {
    let out = run_tool(program, remote, &["list", table]);
    assert!(out.ok, "{program} list {table}: {}", out.stderr);
    let mut records: Vec<String> = normalize_uuids(&out.stdout)
        .split("\n\n")
        .map(|r| r.trim_end().to_owned())
        .collect();
    records.sort();
    records
}

/// Lines of a command script: one invocation per line, arguments split on spaces, with
/// `'...'` grouping words.
pub fn script(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut args = Vec::new();
            let mut cur = String::new();
            let mut quoted = false;
            for c in l.chars() {
                match c {
                    '\'' => quoted = !quoted,
                    ' ' if !quoted => {
                        if !cur.is_empty() {
                            args.push(std::mem::take(&mut cur));
                        }
                    }
                    _ => cur.push(c),
                }
            }
            if !cur.is_empty() {
                args.push(cur);
            }
            args
        })
        .collect()
}
