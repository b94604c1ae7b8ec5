//! One child daemon, owned by pid and stopped on drop.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// What can go wrong while starting or driving the real daemons.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    #[error("failed to start {program}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    CommandFailed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("{daemon} exited during start-up; last log lines:\n{log}")]
    DiedAtStart { daemon: String, log: String },
    #[error("timed out after {secs}s waiting for {what}; last log lines:\n{log}")]
    Timeout {
        what: String,
        secs: u64,
        log: String,
    },
    #[error("i/o error on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Unexpected(String),
}

/// One running daemon as a record outside the value that owns it: enough for another
/// process (the sandbox's `down` after its supervisor was killed) to stop it by pid and
/// remove its files, checking first that the pid still names that daemon.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessInfo {
    /// What it is (`ovsdb-server nb`, `ovs-vswitchd n1`, ...).
    pub name: String,
    /// Its process id.
    pub pid: u32,
    /// The directory holding its database, sockets and log; it appears on the
    /// daemon's command line, so a reused pid can be told apart.
    pub dir: PathBuf,
}

/// A daemon started in the foreground as our child. Dropping it stops it.
#[derive(Debug)]
pub struct Daemon {
    name: String,
    child: Option<Child>,
    log: PathBuf,
}

/// How long a daemon is given to become ready or to exit.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(30);

impl Daemon {
    /// Spawns `command` with stdout/stderr appended to `log` (the daemons also write their
    /// own `--log-file` there).
    pub(crate) fn spawn(
        name: &str,
        mut command: Command,
        log: &Path,
    ) -> Result<Self, HarnessError> {
        let io_err = |source| HarnessError::Io {
            path: log.to_path_buf(),
            source,
        };
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(io_err)?;
        let err = out.try_clone().map_err(io_err)?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        let child = command.spawn().map_err(|source| HarnessError::Spawn {
            program: name.to_string(),
            source,
        })?;
        tracing::debug!(daemon = name, pid = child.id(), "started");
        Ok(Self {
            name: name.to_string(),
            child: Some(child),
            log: log.to_path_buf(),
        })
    }

    /// The daemon's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Its log file.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// True while the process has not exited.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// The last lines of its log, for error messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }

    /// Polls `ready` every 50 ms until it returns true, failing early if the daemon dies.
    pub(crate) fn wait_ready(
        &mut self,
        what: &str,
        mut ready: impl FnMut() -> bool,
    ) -> Result<(), HarnessError> {
        let start = Instant::now();
        loop {
            if ready() {
                return Ok(());
            }
            if !self.is_running() {
                return Err(HarnessError::DiedAtStart {
                    daemon: self.name.clone(),
                    log: self.log_tail(),
                });
            }
            if start.elapsed() > READY_TIMEOUT {
                return Err(HarnessError::Timeout {
                    what: what.to_string(),
                    secs: READY_TIMEOUT.as_secs(),
                    log: self.log_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then SIGKILL after 5 s; waits for the process to be gone.
    pub fn stop(&mut self) {
        self.signal_and_reap(Signal::SIGTERM);
    }

    /// SIGKILL at once, as a crash would; waits for the process to be gone.
    pub fn kill(&mut self) {
        self.signal_and_reap(Signal::SIGKILL);
    }

    fn signal_and_reap(&mut self, first: Signal) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = Pid::from_raw(child.id() as i32);
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = kill(pid, first);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_)) | Err(_)) {
                tracing::debug!(daemon = %self.name, %pid, "stopped");
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        tracing::warn!(daemon = %self.name, %pid, "did not stop on {first}; killing");
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A TCP port on 127.0.0.1 that was free a moment ago and that this process has not
/// handed out before. Raft addresses are written into the database file before the
/// server starts, so they cannot be `ptcp:0`; and the kernel may give the same port
/// to two binds in a row once the first listener is closed (seen: two members of one
/// cluster given one port), hence the record of ports already handed out.
pub(crate) fn free_port() -> Result<u16, HarnessError> {
    static HANDED_OUT: std::sync::Mutex<std::collections::BTreeSet<u16>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let io_err = |source| HarnessError::Io {
        path: PathBuf::from("127.0.0.1:0"),
        source,
    };
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(io_err)?
            .port();
        let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
        if handed_out.insert(port) {
            return Ok(port);
        }
    }
}

/// Polls `cond` every 50 ms for up to `timeout`.
pub(crate) fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    cond()
}
