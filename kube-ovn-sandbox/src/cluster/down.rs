//! `down`: stop everything the sandbox started, by pid, and remove what it made.
//! Safe when nothing runs, on a half-started sandbox, and after a killed supervisor.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use super::error::SandboxError;
use super::layout::{Names, StateLayout};
use super::process::{alive, cmdline, group_members, stop};
use super::record::SandboxRecord;
use super::up::is_supervisor;

/// How long the supervisor is given to stop its parts in order.
const SUPERVISOR_GRACE: Duration = Duration::from_secs(60);

/// What `down` did.
#[derive(Debug, Default)]
pub struct DownReport {
    /// Processes stopped by `down` itself (the supervisor first).
    pub stopped: Vec<String>,
    /// Namespaces deleted (those the supervisor had not removed already).
    pub namespaces: Vec<String>,
    /// Files and directories removed.
    pub files: Vec<String>,
}

impl DownReport {
    /// True when there was nothing to stop or remove.
    pub fn is_empty(&self) -> bool {
        self.stopped.is_empty() && self.namespaces.is_empty() && self.files.is_empty()
    }
}

/// Stops the sandbox of `layout` and removes what it made; every failure is collected
/// and reported together, after everything else was tried.
pub fn down(layout: &StateLayout) -> Result<DownReport, SandboxError> {
    let mut report = DownReport::default();
    if !layout.dir().exists() {
        return Ok(report);
    }
    let mut failures = Vec::new();
    let record = SandboxRecord::load(&layout.record())?;
    if let Some(record) = &record {
        stop_processes(layout, record, &mut report, &mut failures);
        let names = Names::new(&record.prefix);
        remove_namespaces(&names, &mut report, &mut failures);
        remove_harness_dirs(record, &mut report, &mut failures);
    }
    for path in layout.owned_paths() {
        remove_path(&path, &mut report, &mut failures);
    }
    // the directory itself only when nothing else is in it (it may be the user's)
    if std::fs::remove_dir(layout.dir()).is_ok() {
        report.files.push(layout.dir().display().to_string());
    }
    if failures.is_empty() {
        Ok(report)
    } else {
        Err(SandboxError::Leftovers(failures))
    }
}

fn stop_processes(
    layout: &StateLayout,
    record: &SandboxRecord,
    report: &mut DownReport,
    failures: &mut Vec<String>,
) {
    let supervisor = record.supervisor;
    if is_supervisor(supervisor, layout) {
        // the supervisor stops its parts in order (ovn-controller leaves SB first)
        if stop(supervisor, SUPERVISOR_GRACE) {
            report
                .stopped
                .push(format!("supervisor (pid {supervisor})"));
        } else {
            failures.push(format!("supervisor (pid {supervisor}) did not stop"));
        }
    }
    // what a killed supervisor left: its process group, checked member by member
    // (a pid is only ours if its command line names our files)
    let state_dir = layout.dir().to_string_lossy().into_owned();
    let dirs: Vec<String> = record
        .processes
        .iter()
        .map(|p| p.dir.to_string_lossy().into_owned())
        .collect();
    let ours = |pid: u32| {
        let line = cmdline(pid);
        line.contains(&state_dir) || dirs.iter().any(|d| line.contains(d.as_str()))
    };
    let mut pids: BTreeSet<u32> = group_members(supervisor)
        .into_iter()
        .filter(|p| ours(*p))
        .collect();
    pids.extend(
        record
            .processes
            .iter()
            .filter(|p| alive(p.pid) && cmdline(p.pid).contains(&*p.dir.to_string_lossy()))
            .map(|p| p.pid),
    );
    for pid in pids {
        let what = format!("{} (pid {pid})", short(&cmdline(pid)));
        if stop(pid, Duration::from_secs(5)) {
            report.stopped.push(what);
        } else {
            failures.push(format!("{what} did not stop"));
        }
    }
}

fn short(cmdline: &str) -> String {
    cmdline
        .split_whitespace()
        .take(4)
        .collect::<Vec<_>>()
        .join(" ")
}

fn remove_namespaces(names: &Names, report: &mut DownReport, failures: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return;
    };
    let mut ours: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| names.owns_netns(n))
        .collect();
    // pods before nodes before the underlay: each takes its veths along
    ours.sort_by_key(|n| (!n.contains("p-"), n.ends_with("ul"), n.clone()));
    for netns in ours {
        match ovn_harness::run("ip", &["netns", "del", &netns]) {
            Ok(_) => report.namespaces.push(netns),
            Err(e) => failures.push(format!("network namespace {netns}: {e}")),
        }
    }
}

/// The harness's directories in /tmp (databases, sockets, logs) of a supervisor that
/// could not remove them itself.
fn remove_harness_dirs(
    record: &SandboxRecord,
    report: &mut DownReport,
    failures: &mut Vec<String>,
) {
    let dirs: BTreeSet<&Path> = record.processes.iter().map(|p| p.dir.as_path()).collect();
    for dir in dirs {
        let harness = dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("ovn-h."))
            && dir.parent() == Some(Path::new("/tmp"));
        if harness && dir.exists() {
            remove_path(dir, report, failures);
        }
    }
}

fn remove_path(path: &Path, report: &mut DownReport, failures: &mut Vec<String>) {
    let result = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match result {
        Ok(()) => report.files.push(path.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => failures.push(format!("{}: {e}", path.display())),
    }
}
