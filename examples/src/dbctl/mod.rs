//! What `ovn-nbctl` and `ovs-vsctl` share: the command line, the database replica and
//! transaction, value syntax and printing, and the generic database commands.

pub mod cli;
pub mod commands;
pub mod idl;
pub mod notation;
pub mod order;
pub mod schema;

use anyhow::{bail, Result};
use cli::Command;
use commands::{Ctx, RowId};
use idl::{CommitFailed, Db};
use ovsdb::client::{
    connect_cluster, ClusterOptions, Deadline, OneshotConnection, OneshotError, Remote, TlsConfig,
};

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

/// The TLS files of `-p`, `-c` and `-C`, loaded when all three are given and a remote is
/// `ssl:`: like the C tools, a run on `unix:` or `tcp:` does not care whether they load.
fn tls_config(global: &cli::Global, remotes: &[Remote]) -> Result<Option<TlsConfig>> {
    if !remotes.iter().any(Remote::is_tls) {
        return Ok(None);
    }
    match (&global.private_key, &global.certificate, &global.ca_cert) {
        (Some(key), Some(cert), Some(ca)) => Ok(Some(TlsConfig::from_files(key, cert, ca)?)),
        _ => Ok(None),
    }
}

/// Runs one invocation (arguments without the program name); returns what to print.
///
/// Like the C tools, a run that loses its server (connection dropped, leadership moved,
/// the cluster could not commit) connects again, re-reads and runs its commands again.
/// A commit whose reply was lost is settled first: its rows were inserted under UUIDs
/// chosen here, so reading one back tells whether it went through, and a retry reuses
/// the same UUIDs, so the server refuses a second copy.
pub fn run(tool: &Tool, args: &[String]) -> Result<String> {
    let (global, commands) = cli::parse(args)?;
    let remote = global
        .db
        .clone()
        .or_else(|| std::env::var(tool.env_var).ok())
        .unwrap_or_else(|| tool.default_remote.to_owned());
    let remotes = Remote::parse_list(&remote)?;
    let options = ClusterOptions {
        leader_only: global.leader_only,
        shuffle: global.shuffle,
        deadline: (global.timeout > 0).then(|| Deadline::after_secs(global.timeout)),
        tls: tls_config(&global, &remotes)?,
    };
    tracing::debug!(%remote, n = commands.len(), "running commands");
    let mut seen = ovsdb::client::Seen::default();
    let mut unsettled: Option<Unsettled> = None;
    for retry in 0u32.. {
        if retry > 0 {
            // A server that keeps failing commits (e.g. a cluster mid-election) is not
            // hammered: 10 ms, doubling, at most 640 ms between attempts.
            std::thread::sleep(std::time::Duration::from_millis(10 << retry.min(6)));
        }
        notation::rewind_uuids();
        let conn = connect_cluster(&remotes, tool.database, &options, &mut seen)?;
        match attempt(tool, &global, &commands, conn, unsettled.as_ref()) {
            Ok(Attempt::Done(out)) => return Ok(out),
            Ok(Attempt::Unsettled(u)) => {
                tracing::debug!(?u, "commit outcome unknown; reconnecting");
                // The first unsettled attempt is the one whose UUIDs every retry reuses.
                unsettled.get_or_insert(u);
            }
            Err(e) if is_transient(&e) => tracing::debug!(error = %e, "retrying"),
            Err(e) => return Err(e),
        }
    }
    unreachable!("the retry loop only ends by returning")
}

/// A commit that may or may not have gone through.
#[derive(Debug)]
struct Unsettled {
    /// What the run printed, given that it did.
    out: String,
    /// A row it inserted, as `(table, uuid)`; without one, the commands simply run again.
    probe: Option<(String, String)>,
}

enum Attempt {
    Done(String),
    Unsettled(Unsettled),
}

/// One pass over the commands on a fresh connection, then the commit.
fn attempt(
    tool: &Tool,
    global: &cli::Global,
    commands: &[Command],
    conn: OneshotConnection,
    unsettled: Option<&Unsettled>,
) -> Result<Attempt> {
    let mut db = Db::open(conn, tool.database)?;
    if let Some(Unsettled {
        out,
        probe: Some((table, uuid)),
    }) = unsettled
    {
        if db.row_exists(table, uuid)? {
            return Ok(Attempt::Done(out.clone()));
        }
    }
    let mut ctx = Ctx {
        db: &mut db,
        symtab: Default::default(),
        out: String::new(),
        row_ids: tool.row_ids,
        bare: global.bare,
    };
    for cmd in commands {
        if !(tool.dispatch)(&mut ctx, cmd)? && !commands::run_generic(&mut ctx, cmd)? {
            bail!("unknown command '{}'; use --help for help", cmd.name);
        }
    }
    let mut out = std::mem::take(&mut ctx.out);
    if global.dry_run {
        return Ok(Attempt::Done(out));
    }
    let probe = db.first_insert();
    match db.commit() {
        Ok(real) => {
            for (provisional, real) in real {
                out = out.replace(&provisional, &real);
            }
            Ok(Attempt::Done(out))
        }
        Err(e) => match e.downcast_ref::<CommitFailed>() {
            Some(CommitFailed::DuplicateUuid(_)) if unsettled.is_some() => {
                // Our own earlier attempt committed these rows.
                Ok(Attempt::Done(
                    unsettled.map(|u| u.out.clone()).unwrap_or(out),
                ))
            }
            Some(CommitFailed::Cluster(_)) => Ok(Attempt::Unsettled(Unsettled { out, probe })),
            _ if is_transient(&e) => Ok(Attempt::Unsettled(Unsettled { out, probe })),
            _ => Err(e),
        },
    }
}

/// Whether `e` came from the connection or the cluster rather than from the commands.
fn is_transient(e: &anyhow::Error) -> bool {
    e.downcast_ref::<OneshotError>()
        .is_some_and(OneshotError::is_transient)
        || matches!(
            e.downcast_ref::<CommitFailed>(),
            Some(CommitFailed::Cluster(_))
        )
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
