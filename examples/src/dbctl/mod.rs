//! What `ovn-nbctl` and `ovs-vsctl` share: the command line, the database replica and
//! transaction, value syntax and printing, and the generic database commands.

pub mod cli;
pub mod commands;
pub mod datum;
pub mod idl;
pub mod jsonrpc;
pub mod order;
pub mod schema;

use anyhow::{bail, Result};
use cli::Command;
use commands::{Ctx, RowId};
use idl::Db;

/// A tool's specific commands: returns `Ok(false)` for a command it does not know.
pub type Dispatch = fn(&mut Ctx, &Command) -> Result<bool>;

/// Describes one tool.
#[derive(Debug)]
pub struct Tool {
    /// Program name, used as the prefix of error messages.
    pub program: &'static str,
    /// Database name in the schema (`OVN_Northbound`, `Open_vSwitch`).
    pub database: &'static str,
    /// Environment variable naming the remote, and the built-in default remote.
    pub env_var: &'static str,
    pub default_remote: &'static str,
    pub row_ids: &'static [RowId],
    pub dispatch: Dispatch,
}

/// Runs one invocation (arguments without the program name); returns what to print.
pub fn run(tool: &Tool, args: &[String]) -> Result<String> {
    let (global, commands) = cli::parse(args)?;
    let remote = global
        .db
        .clone()
        .or_else(|| std::env::var(tool.env_var).ok())
        .unwrap_or_else(|| tool.default_remote.to_owned());
    tracing::debug!(%remote, n = commands.len(), "running commands");
    let mut db = Db::open(&remote, tool.database)?;
    let mut ctx = Ctx {
        db: &mut db,
        symtab: Default::default(),
        out: String::new(),
        row_ids: tool.row_ids,
        bare: global.bare,
    };
    for cmd in &commands {
        if !(tool.dispatch)(&mut ctx, cmd)? && !commands::run_generic(&mut ctx, cmd)? {
            bail!("unknown command '{}'; use --help for help", cmd.name);
        }
    }
    let mut out = std::mem::take(&mut ctx.out);
    if !global.dry_run {
        for (provisional, real) in db.commit()? {
            out = out.replace(&provisional, &real);
        }
    }
    Ok(out)
}

/// `main()` of a tool: prints the output, or `program: error` and exits 1.
pub fn main(tool: &Tool) -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(tool, &args) {
        Ok(out) => {
            print!("{out}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{}: {e:#}", tool.program);
            std::process::ExitCode::FAILURE
        }
    }
}
