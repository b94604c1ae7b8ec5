//! ovsdb-server (standalone and Raft), ovn-northd, and NB+SB+northd together.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use crate::pki::TlsFiles;
use crate::process::ProcessInfo;
use crate::process::{free_port, log_tail, wait_until, Daemon, HarnessError};

/// A database schema shipped by Debian's packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Db {
    Northbound,
    Southbound,
    OpenVswitch,
}

impl Db {
    /// Where the package installs the schema.
    pub fn schema_path(self) -> PathBuf {
        PathBuf::from(match self {
            Db::Northbound => "/usr/share/ovn/ovn-nb.ovsschema",
            Db::Southbound => "/usr/share/ovn/ovn-sb.ovsschema",
            Db::OpenVswitch => "/usr/share/openvswitch/vswitch.ovsschema",
        })
    }

    /// The database name inside the schema.
    pub fn name(self) -> &'static str {
        match self {
            Db::Northbound => "OVN_Northbound",
            Db::Southbound => "OVN_Southbound",
            Db::OpenVswitch => "Open_vSwitch",
        }
    }

    fn short(self) -> &'static str {
        match self {
            Db::Northbound => "nb",
            Db::Southbound => "sb",
            Db::OpenVswitch => "vs",
        }
    }
}

fn new_dir() -> Result<TempDir, HarnessError> {
    // Unix socket paths are limited to 108 bytes: keep the directory short.
    tempfile::Builder::new()
        .prefix("ovn-h.")
        .tempdir_in("/tmp")
        .map_err(|source| HarnessError::Io {
            path: PathBuf::from("/tmp"),
            source,
        })
}

/// Environment that keeps the OVS/OVN tools away from the system's run directories.
fn rundir_env(command: &mut Command, dir: &Path) {
    for var in [
        "OVS_RUNDIR",
        "OVS_LOGDIR",
        "OVS_DBDIR",
        "OVS_SYSCONFDIR",
        "OVN_RUNDIR",
        "OVN_LOGDIR",
        "OVN_DBDIR",
        "OVN_SYSCONFDIR",
    ] {
        command.env(var, dir);
    }
}

/// Where one ovsdb-server keeps its files and listens.
#[derive(Debug)]
struct ServerFiles {
    name: String,
    db_file: PathBuf,
    sock: PathBuf,
    ctl: PathBuf,
    log: PathBuf,
    tcp_port: Option<u16>,
    /// `pssl:PORT:127.0.0.1`, with `tls`'s files.
    ssl_port: Option<u16>,
    tls: Option<TlsFiles>,
    /// Active remotes (`--remote=ssl:HOST:PORT`): the server connects to a listener.
    connect: Vec<String>,
}

impl ServerFiles {
    fn new(dir: &Path, name: &str) -> Self {
        Self {
            name: name.to_string(),
            db_file: dir.join(format!("{name}.db")),
            sock: dir.join(format!("{name}.sock")),
            ctl: dir.join(format!("{name}.ctl")),
            log: dir.join(format!("{name}.log")),
            tcp_port: None,
            ssl_port: None,
            tls: None,
            connect: Vec::new(),
        }
    }

    /// Starts ovsdb-server on this member's files. `want_tcp` listens on a free
    /// 127.0.0.1 port (kept across restarts).
    fn launch(&mut self, dir: &Path, want_tcp: bool) -> Result<Daemon, HarnessError> {
        if want_tcp && self.tcp_port.is_none() {
            self.tcp_port = Some(free_port()?);
        }
        let _ = std::fs::remove_file(&self.sock);
        let mut cmd = Command::new("ovsdb-server");
        cmd.arg(&self.db_file)
            .arg(format!("--remote=punix:{}", self.sock.display()))
            .arg(format!("--unixctl={}", self.ctl.display()))
            .arg(format!("--log-file={}", self.log.display()))
            .arg("--no-chdir")
            .arg("-vconsole:off");
        if let Some(port) = self.tcp_port {
            cmd.arg(format!("--remote=ptcp:{port}:127.0.0.1"));
        }
        if let Some(tls) = &self.tls {
            cmd.arg(format!("--private-key={}", tls.private_key.display()))
                .arg(format!("--certificate={}", tls.certificate.display()))
                .arg(format!("--ca-cert={}", tls.ca_cert.display()));
        }
        if let Some(port) = self.ssl_port {
            cmd.arg(format!("--remote=pssl:{port}:127.0.0.1"));
        }
        for remote in &self.connect {
            cmd.arg(format!("--remote={remote}"));
        }
        rundir_env(&mut cmd, dir);
        let mut daemon = Daemon::spawn(&format!("ovsdb-server {}", self.name), cmd, &self.log)?;
        let sock = self.sock.clone();
        daemon.wait_ready("ovsdb-server socket", || UnixStream::connect(&sock).is_ok())?;
        for (what, port) in [("tcp", self.tcp_port), ("ssl", self.ssl_port)] {
            if let Some(port) = port {
                daemon.wait_ready(&format!("ovsdb-server {what} port"), || {
                    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                })?;
            }
        }
        Ok(daemon)
    }

    fn unix_remote(&self) -> String {
        format!("unix:{}", self.sock.display())
    }

    fn tcp_remote(&self) -> Option<String> {
        self.tcp_port.map(|p| format!("tcp:127.0.0.1:{p}"))
    }

    fn ssl_remote(&self) -> Option<String> {
        self.ssl_port.map(|p| format!("ssl:127.0.0.1:{p}"))
    }
}

/// A standalone ovsdb-server serving one database, on a unix socket and optionally on
/// 127.0.0.1 TCP, on 127.0.0.1 TLS, or connecting out to a listener.
#[derive(Debug)]
pub struct OvsdbServer {
    db: Db,
    files: ServerFiles,
    daemon: Option<Daemon>,
    want_tcp: bool,
    // Dropped last: the daemon must be gone before its directory is removed.
    dir: TempDir,
}

impl OvsdbServer {
    /// A fresh database on a unix socket.
    pub fn start(db: Db) -> Result<Self, HarnessError> {
        Self::start_inner(db, false)
    }

    /// A fresh database on a unix socket and a free 127.0.0.1 TCP port.
    pub fn start_tcp(db: Db) -> Result<Self, HarnessError> {
        Self::start_inner(db, true)
    }

    /// A fresh database on a unix socket and, over TLS with `tls`'s key, certificate
    /// and CA certificate, on a free 127.0.0.1 port (`--remote=pssl:PORT:127.0.0.1`).
    /// As with ovsdb-server's SSL support in general, clients must present a
    /// certificate signed by that CA.
    pub fn start_ssl(db: Db, tls: &TlsFiles) -> Result<Self, HarnessError> {
        Self::start_configured(db, false, |files| {
            files.tls = Some(tls.clone());
            files.ssl_port = Some(free_port()?);
            Ok(())
        })
    }

    /// A fresh database on a unix socket that also connects, actively, to `remote`
    /// (`tcp:HOST:PORT`, or `ssl:HOST:PORT` with `tls`), retrying with ovsdb-server's
    /// own backoff until something listens there.
    pub fn start_connecting(
        db: Db,
        remote: &str,
        tls: Option<&TlsFiles>,
    ) -> Result<Self, HarnessError> {
        Self::start_configured(db, false, |files| {
            files.tls = tls.cloned();
            files.connect.push(remote.to_owned());
            Ok(())
        })
    }

    fn start_inner(db: Db, want_tcp: bool) -> Result<Self, HarnessError> {
        Self::start_configured(db, want_tcp, |_| Ok(()))
    }

    fn start_configured(
        db: Db,
        want_tcp: bool,
        configure: impl FnOnce(&mut ServerFiles) -> Result<(), HarnessError>,
    ) -> Result<Self, HarnessError> {
        let dir = new_dir()?;
        let mut files = ServerFiles::new(dir.path(), db.short());
        configure(&mut files)?;
        let schema = db.schema_path();
        crate::run(
            "ovsdb-tool",
            &[
                "create",
                &files.db_file.to_string_lossy(),
                &schema.to_string_lossy(),
            ],
        )?;
        let daemon = files.launch(dir.path(), want_tcp)?;
        Ok(Self {
            db,
            files,
            daemon: Some(daemon),
            want_tcp,
            dir,
        })
    }

    /// The database this server serves.
    pub fn db(&self) -> Db {
        self.db
    }

    /// `unix:/path/to/socket`.
    pub fn unix_remote(&self) -> String {
        self.files.unix_remote()
    }

    /// `tcp:127.0.0.1:PORT` when started with [`OvsdbServer::start_tcp`].
    pub fn tcp_remote(&self) -> Option<String> {
        self.files.tcp_remote()
    }

    /// `ssl:127.0.0.1:PORT` when started with [`OvsdbServer::start_ssl`].
    pub fn ssl_remote(&self) -> Option<String> {
        self.files.ssl_remote()
    }

    /// The server's process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.daemon.as_ref().and_then(Daemon::pid)
    }

    /// The directory holding the database file, sockets and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The database file.
    pub fn db_file(&self) -> &Path {
        &self.files.db_file
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.files.log).unwrap_or_default()
    }

    /// Graceful stop (SIGTERM). The database file is kept for [`OvsdbServer::restart`].
    pub fn stop(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            d.stop();
        }
    }

    /// Abrupt stop (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut d) = self.daemon.take() {
            d.kill();
        }
    }

    /// Starts the server again on the same database file, socket path and TCP port.
    pub fn restart(&mut self) -> Result<(), HarnessError> {
        self.stop();
        self.daemon = Some(self.files.launch(self.dir.path(), self.want_tcp)?);
        Ok(())
    }
}

impl Drop for OvsdbServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A Raft cluster of ovsdb-servers on 127.0.0.1, each member also on a unix socket.
#[derive(Debug)]
pub struct RaftCluster {
    db: Db,
    members: Vec<ServerFiles>,
    daemons: Vec<Option<Daemon>>,
    dir: TempDir,
}

impl RaftCluster {
    /// Creates and starts an `n`-member cluster and waits until it has a leader and every
    /// member has joined.
    pub fn start(db: Db, n: usize) -> Result<Self, HarnessError> {
        assert!(n >= 1, "a cluster needs at least one member");
        let dir = new_dir()?;
        let schema = db.schema_path();
        let raft_ports: Vec<u16> = (0..n).map(|_| free_port()).collect::<Result<_, _>>()?;
        let mut members = Vec::with_capacity(n);
        for (i, port) in raft_ports.iter().enumerate() {
            let mut files = ServerFiles::new(dir.path(), &format!("{}{i}", db.short()));
            files.tcp_port = Some(free_port()?);
            let raft = format!("tcp:127.0.0.1:{port}");
            let db_file = files.db_file.to_string_lossy().into_owned();
            if i == 0 {
                let schema = schema.to_string_lossy();
                crate::run("ovsdb-tool", &["create-cluster", &db_file, &schema, &raft])?;
            } else {
                let first = format!("tcp:127.0.0.1:{}", raft_ports[0]);
                crate::run(
                    "ovsdb-tool",
                    &["join-cluster", &db_file, db.name(), &raft, &first],
                )?;
            }
            members.push(files);
        }
        let mut cluster = Self {
            db,
            members,
            daemons: Vec::new(),
            dir,
        };
        for i in 0..n {
            let daemon = cluster.members[i].launch(cluster.dir.path(), true)?;
            cluster.daemons.push(Some(daemon));
        }
        cluster.wait_converged()?;
        Ok(cluster)
    }

    fn wait_converged(&mut self) -> Result<(), HarnessError> {
        let ok = wait_until(Duration::from_secs(60), || {
            let joined = (0..self.members.len())
                .filter(|&i| self.daemons[i].is_some())
                .all(|i| {
                    self.cluster_status(i)
                        .map(|s| s.contains("Status: cluster member"))
                        .unwrap_or(false)
                });
            joined && self.leader().is_ok()
        });
        if ok {
            Ok(())
        } else {
            Err(HarnessError::Timeout {
                what: "raft cluster to elect a leader".into(),
                secs: 60,
                log: log_tail(&self.members[0].log),
            })
        }
    }

    /// `ovs-appctl cluster/status` of member `i`.
    pub fn cluster_status(&self, i: usize) -> Result<String, HarnessError> {
        let ctl = self.members[i].ctl.to_string_lossy().into_owned();
        crate::run(
            "ovs-appctl",
            &["-t", &ctl, "cluster/status", self.db.name()],
        )
    }

    /// The index of the member that currently reports `Role: leader`.
    pub fn leader(&self) -> Result<usize, HarnessError> {
        (0..self.members.len())
            .filter(|&i| self.daemons.get(i).is_some_and(Option::is_some))
            .find(|&i| {
                self.cluster_status(i)
                    .map(|s| s.lines().any(|l| l.trim() == "Role: leader"))
                    .unwrap_or(false)
            })
            .ok_or_else(|| HarnessError::Unexpected("no member reports Role: leader".into()))
    }

    /// Waits (up to 60 s) until a running member is leader, and returns it.
    pub fn wait_leader(&self) -> Result<usize, HarnessError> {
        let mut found = None;
        wait_until(Duration::from_secs(60), || {
            found = self.leader().ok();
            found.is_some()
        });
        found.ok_or_else(|| HarnessError::Timeout {
            what: "a new raft leader".into(),
            secs: 60,
            log: String::new(),
        })
    }

    /// Client remotes of every member: `tcp:127.0.0.1:PORT`.
    pub fn remotes(&self) -> Vec<String> {
        self.members
            .iter()
            .filter_map(ServerFiles::tcp_remote)
            .collect()
    }

    /// Client remotes of every member: `unix:/path`.
    pub fn unix_remotes(&self) -> Vec<String> {
        self.members.iter().map(ServerFiles::unix_remote).collect()
    }

    /// Process id of member `i` while it runs.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.daemons[i].as_ref().and_then(Daemon::pid)
    }

    /// SIGKILL member `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut d) = self.daemons[i].take() {
            d.kill();
        }
    }

    /// SIGTERM member `i`.
    pub fn stop(&mut self, i: usize) {
        if let Some(mut d) = self.daemons[i].take() {
            d.stop();
        }
    }

    /// Starts member `i` again on its own database file and ports.
    pub fn restart(&mut self, i: usize) -> Result<(), HarnessError> {
        self.stop(i);
        let daemon = self.members[i].launch(self.dir.path(), true)?;
        self.daemons[i] = Some(daemon);
        Ok(())
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Never true: a cluster has at least one member.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

impl Drop for RaftCluster {
    fn drop(&mut self) {
        for i in 0..self.daemons.len() {
            self.stop(i);
        }
    }
}

/// ovn-northd between a NB and a SB database.
#[derive(Debug)]
pub struct Northd {
    daemon: Daemon,
    _dir: TempDir,
}

impl Northd {
    /// Starts ovn-northd and waits until a NB change is reflected in SB.
    pub fn start(nb_remote: &str, sb_remote: &str) -> Result<Self, HarnessError> {
        let dir = new_dir()?;
        let log = dir.path().join("ovn-northd.log");
        let mut cmd = Command::new("ovn-northd");
        cmd.arg(format!("--ovnnb-db={nb_remote}"))
            .arg(format!("--ovnsb-db={sb_remote}"))
            .arg(format!(
                "--unixctl={}",
                dir.path().join("ovn-northd.ctl").display()
            ))
            .arg(format!("--log-file={}", log.display()))
            .arg("--no-chdir")
            .arg("-vconsole:off");
        rundir_env(&mut cmd, dir.path());
        let mut daemon = Daemon::spawn("ovn-northd", cmd, &log)?;
        let db_arg = format!("--db={nb_remote}");
        daemon.wait_ready("ovn-northd to sync SB", || {
            crate::run("ovn-nbctl", &[&db_arg, "--timeout=5", "--wait=sb", "sync"]).is_ok()
        })?;
        Ok(Self { daemon, _dir: dir })
    }

    /// northd's process id.
    pub fn pid(&self) -> Option<u32> {
        self.daemon.pid()
    }

    /// The directory holding its control socket and log.
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }
}

/// The central part of OVN: NB and SB ovsdb-servers with ovn-northd between them.
#[derive(Debug)]
pub struct OvnCentral {
    // Field order is drop order: northd goes before the databases.
    pub northd: Northd,
    pub nb: OvsdbServer,
    pub sb: OvsdbServer,
}

impl OvnCentral {
    /// NB and SB on unix sockets, plus ovn-northd.
    pub fn start() -> Result<Self, HarnessError> {
        let nb = OvsdbServer::start(Db::Northbound)?;
        let sb = OvsdbServer::start(Db::Southbound)?;
        let northd = Northd::start(&nb.unix_remote(), &sb.unix_remote())?;
        Ok(Self { northd, nb, sb })
    }

    /// NB and SB also listening on 127.0.0.1 TCP (for chassis in other namespaces).
    pub fn start_tcp() -> Result<Self, HarnessError> {
        let nb = OvsdbServer::start_tcp(Db::Northbound)?;
        let sb = OvsdbServer::start_tcp(Db::Southbound)?;
        let northd = Northd::start(&nb.unix_remote(), &sb.unix_remote())?;
        Ok(Self { northd, nb, sb })
    }

    /// The NB database's unix remote.
    pub fn nb_remote(&self) -> String {
        self.nb.unix_remote()
    }

    /// The SB database's unix remote.
    pub fn sb_remote(&self) -> String {
        self.sb.unix_remote()
    }

    /// NB, SB and northd as records (those running).
    pub fn processes(&self) -> Vec<ProcessInfo> {
        let record = |name: &str, pid: Option<u32>, dir: &Path| {
            pid.map(|pid| ProcessInfo {
                name: name.to_string(),
                pid,
                dir: dir.to_path_buf(),
            })
        };
        [
            record("ovn-northd", self.northd.pid(), self.northd.dir()),
            record("ovsdb-server nb", self.nb.pid(), self.nb.dir()),
            record("ovsdb-server sb", self.sb.pid(), self.sb.dir()),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}
