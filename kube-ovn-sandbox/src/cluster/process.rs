//! Processes by pid: liveness, command lines, the members of a process group, and
//! stopping one (SIGTERM, then SIGKILL).

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// True while `pid` exists (a zombie counts as gone).
pub(crate) fn alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // the state follows the parenthesised command name, which may hold spaces
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .is_some_and(|state| state != "Z" && state != "X")
}

/// The command line of `pid`, its arguments joined by spaces.
pub(crate) fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .map(|arg| String::from_utf8_lossy(arg).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The live processes in process group `pgid`.
pub(crate) fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // after "(comm)": state ppid pgrp ...
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let zombie = fields.first().is_some_and(|s| *s == "Z" || *s == "X");
        if !zombie && fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            members.push(pid);
        }
    }
    members
}

/// Sends SIGTERM to `pid` and waits up to `grace` for it to go, then SIGKILLs it.
/// True when it is gone.
pub(crate) fn stop(pid: u32, grace: Duration) -> bool {
    let target = Pid::from_raw(pid as i32);
    if !alive(pid) {
        return true;
    }
    let _ = kill(target, Signal::SIGTERM);
    if wait_gone(pid, grace) {
        return true;
    }
    tracing::warn!(pid, "did not stop on SIGTERM; killing");
    let _ = kill(target, Signal::SIGKILL);
    wait_gone(pid, Duration::from_secs(5))
}

/// Waits up to `timeout` for `pid` to go.
pub(crate) fn wait_gone(pid: u32, timeout: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    !alive(pid)
}

/// The last `lines` lines of a log file.
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_in_its_group() {
        let me = std::process::id();
        assert!(alive(me));
        assert!(cmdline(me).contains("kube_ovn") || !cmdline(me).is_empty());
        let group = nix::unistd::getpgrp().as_raw() as u32;
        assert!(group_members(group).contains(&me));
    }

    #[test]
    fn a_stopped_child_is_gone() {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(alive(pid));
        // reap it from another thread, as its parent would, so it does not linger as a zombie
        let reaper = std::thread::spawn(move || {
            let mut child = child;
            child.wait()
        });
        assert!(stop(pid, Duration::from_secs(5)));
        reaper.join().unwrap().unwrap();
        assert!(!alive(pid));
    }
}
