//! The `ovs-vsctl(8)`/`ovn-nbctl(8)` command line: global options, then one or more
//! commands separated by `--`, each optionally preceded by its own `--option`s:
//!
//! ```text
//! ovn-nbctl --db=unix:nb.sock --may-exist ls-add sw0 -- lsp-add sw0 p1 -- show
//! ```

use anyhow::{bail, Result};
use std::collections::BTreeMap;

/// One command with its own options (`--may-exist`, `--if-exists`, `--id=@x`, ...).
#[derive(Debug, Clone, Default)]
pub struct Command {
    pub name: String,
    pub options: BTreeMap<String, Option<String>>,
    pub args: Vec<String>,
}

impl Command {
    pub fn has(&self, option: &str) -> bool {
        self.options.contains_key(option)
    }

    pub fn option(&self, option: &str) -> Option<&str> {
        self.options.get(option).and_then(|v| v.as_deref())
    }
}

/// Global options shared by both tools.
#[derive(Debug, Clone)]
pub struct Global {
    pub db: Option<String>,
    /// `--bare` / `--data=bare`: values only, strings unquoted.
    pub bare: bool,
    pub dry_run: bool,
    /// `--timeout=SECS` / `-t SECS`: give up after that long (0: never).
    pub timeout: u64,
    /// `--no-leader-only` clears it: then any connected cluster member will do.
    pub leader_only: bool,
    /// `--no-shuffle-remotes` clears it: then remotes are tried in the order given.
    pub shuffle: bool,
    /// `-p`/`--private-key`, `-c`/`--certificate`, `-C`/`--ca-cert`: the files an `ssl:`
    /// remote is spoken to with.
    pub private_key: Option<String>,
    pub certificate: Option<String>,
    pub ca_cert: Option<String>,
}

impl Default for Global {
    fn default() -> Self {
        Global {
            db: None,
            bare: false,
            dry_run: false,
            timeout: 0,
            leader_only: true,
            shuffle: true,
            private_key: None,
            certificate: None,
            ca_cert: None,
        }
    }
}

/// Global options each tool accepts and ignores (timing, logging, waiting).
const IGNORED: &[&str] = &[
    "--no-wait",
    "--wait",
    "--no-syslog",
    "--oneline",
    "--print-wait-time",
    "-v",
    "--verbose",
    "--retry",
    "--no-heading",
    "--no-headings",
    "--pretty",
    "--log-file",
];

fn split_option(arg: &str) -> (String, Option<String>) {
    match arg.split_once('=') {
        Some((k, v)) => (k.to_owned(), Some(v.to_owned())),
        None => (arg.to_owned(), None),
    }
}

/// Global options with a required argument, which getopt also takes as the next word.
fn takes_argument(key: &str) -> bool {
    matches!(
        key,
        "--db"
            | "-d"
            | "--timeout"
            | "-t"
            | "--private-key"
            | "-p"
            | "--certificate"
            | "-c"
            | "--ca-cert"
            | "-C"
    )
}

/// The argument of `key`, which must have one.
fn required(key: &str, value: Option<String>) -> Result<String> {
    match value {
        Some(v) => Ok(v),
        None => bail!("option '{key}' requires an argument"),
    }
}

/// Parses the whole argument list (without the program name).
pub fn parse(args: &[String]) -> Result<(Global, Vec<Command>)> {
    let mut global = Global::default();
    let mut i = 0;
    let mut pending = BTreeMap::new();
    while i < args.len() && args[i].starts_with('-') && args[i] != "--" {
        let (key, mut value) = split_option(&args[i]);
        // Options with a required argument also take it as the next word (getopt).
        if value.is_none() && takes_argument(&key) {
            i += 1;
            value = args.get(i).cloned();
        }
        match key.as_str() {
            "--db" | "-d" => global.db = value,
            "--timeout" | "-t" => global.timeout = parse_timeout(value.as_deref())?,
            "--private-key" | "-p" => global.private_key = Some(required(&key, value)?),
            "--certificate" | "-c" => global.certificate = Some(required(&key, value)?),
            "--ca-cert" | "-C" => global.ca_cert = Some(required(&key, value)?),
            "--leader-only" => global.leader_only = true,
            "--no-leader-only" => global.leader_only = false,
            "--shuffle-remotes" => global.shuffle = true,
            "--no-shuffle-remotes" => global.shuffle = false,
            "--bare" => global.bare = true,
            "--data" if value.as_deref() == Some("bare") => global.bare = true,
            "--dry-run" => global.dry_run = true,
            "--format" | "-f" | "--data" => {}
            k if IGNORED.contains(&k) || k.starts_with("-v") => {}
            "--db-remote" => {}
            _ => {
                pending.insert(key, value);
            }
        }
        i += 1;
    }
    let mut commands = Vec::new();
    let mut current = Command {
        options: pending,
        ..Command::default()
    };
    for arg in &args[i..] {
        if arg == "--" {
            if !current.name.is_empty() {
                commands.push(std::mem::take(&mut current));
            }
        } else if current.name.is_empty() && arg.starts_with("--") {
            let (k, v) = split_option(arg);
            current.options.insert(k, v);
        } else if current.name.is_empty() {
            current.name = arg.clone();
        } else {
            current.args.push(arg.clone());
        }
    }
    if !current.name.is_empty() {
        commands.push(current);
    } else if !current.options.is_empty() {
        bail!("missing command name (use --help for help)");
    }
    if commands.is_empty() {
        bail!("missing command name (use --help for help)");
    }
    Ok((global, commands))
}

/// `--timeout`'s value: whole seconds, as the C tools' `ctl_timeout_setup()` takes.
fn parse_timeout(value: Option<&str>) -> Result<u64> {
    let text = value.unwrap_or("");
    match text.parse() {
        Ok(secs) if secs > 0 => Ok(secs),
        _ => bail!("value {text} on -t or --timeout is invalid"),
    }
}

/// Checks a command's argument count, with the C tools' messages.
pub fn check_args(cmd: &Command, min: usize, max: usize) -> Result<()> {
    let n = cmd.args.len();
    if n < min {
        if min == max {
            bail!("'{}' command requires exactly {min} arguments", cmd.name);
        }
        bail!("'{}' command requires at least {min} arguments", cmd.name);
    }
    if n > max {
        if min == max {
            bail!("'{}' command requires exactly {min} arguments", cmd.name);
        }
        bail!("'{}' command takes at most {max} arguments", cmd.name);
    }
    Ok(())
}
