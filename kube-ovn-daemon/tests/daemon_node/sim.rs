//! One simulated node: a network namespace created for the test, a local Open_vSwitch
//! ovsdb-server (ovn-harness) and ovs-vswitchd on the userspace datapath running inside
//! the namespace, so every device it creates (`br-int`, `ovn0`) and every address and
//! route the bootstrap sets stays there; the host's tables are never touched.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ovn_harness::{Db, OvsdbServer};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// The tools the simulated node needs.
pub const TOOLS: &[&str] = &[
    "ovsdb-server",
    "ovsdb-tool",
    "ovs-vswitchd",
    "ovs-vsctl",
    "ovs-appctl",
    "ip",
];

/// A namespace with ovs-vswitchd in it, stopped by pid and deleted on drop.
pub struct SimNode {
    pub netns: String,
    vswitchd: Option<Child>,
    ctl: PathBuf,
    // dropped after vswitchd: its database
    pub db: OvsdbServer,
}

impl SimNode {
    /// Starts the database, the namespace and ovs-vswitchd; returns once vswitchd answers
    /// on its control socket.
    pub fn start() -> SimNode {
        let db = OvsdbServer::start(Db::OpenVswitch).expect("start the Open_vSwitch database");
        let netns = format!(
            "kod{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        ovn_harness::run("ip", &["netns", "add", &netns]).expect("ip netns add");
        ovn_harness::run("ip", &["-n", &netns, "link", "set", "lo", "up"]).expect("lo up");
        let dir = db.dir().to_path_buf();
        let ctl = dir.join("ovs-vswitchd.ctl");
        let log = std::fs::File::create(dir.join("ovs-vswitchd.out")).expect("log file");
        let vswitchd = Command::new("ip")
            .args(["netns", "exec", &netns, "ovs-vswitchd"])
            .arg(db.unix_remote())
            .arg("--disable-system")
            .arg(format!("--unixctl={}", ctl.display()))
            .arg(format!(
                "--log-file={}",
                dir.join("ovs-vswitchd.log").display()
            ))
            .args(["--no-chdir", "-vconsole:off"])
            .env("OVS_RUNDIR", &dir)
            .env("OVS_DBDIR", &dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("spawn ovs-vswitchd");
        let node = SimNode {
            netns,
            vswitchd: Some(vswitchd),
            ctl,
            db,
        };
        let ready = wait_until(Duration::from_secs(30), || {
            node.appctl(&["version"]).is_ok()
        });
        assert!(
            ready,
            "ovs-vswitchd did not answer on {}",
            node.ctl.display()
        );
        node
    }

    /// `/var/run/netns/<netns>`.
    pub fn netns_path(&self) -> PathBuf {
        PathBuf::from("/var/run/netns").join(&self.netns)
    }

    /// The real `ovs-vsctl` against this node's database.
    pub fn vsctl(&self, args: &[&str]) -> String {
        let db = format!("--db={}", self.db.unix_remote());
        let mut all = vec![db.as_str(), "--timeout=20"];
        all.extend_from_slice(args);
        ovn_harness::run("ovs-vsctl", &all).expect("ovs-vsctl")
    }

    /// `ovs-vsctl get TABLE RECORD COLUMN`, without quotes.
    pub fn get(&self, table: &str, record: &str, column: &str) -> String {
        self.vsctl(&["get", table, record, column])
            .trim()
            .trim_matches('"')
            .to_string()
    }

    /// `ip -n <netns> ARGS`.
    pub fn ip(&self, args: &[&str]) -> String {
        let mut all = vec!["-n", self.netns.as_str()];
        all.extend_from_slice(args);
        ovn_harness::run("ip", &all).expect("ip")
    }

    fn appctl(&self, args: &[&str]) -> Result<String, ovn_harness::HarnessError> {
        let ctl = self.ctl.display().to_string();
        let mut all = vec!["-t", ctl.as_str()];
        all.extend_from_slice(args);
        ovn_harness::run("ovs-appctl", &all)
    }
}

impl Drop for SimNode {
    fn drop(&mut self) {
        if let Some(mut child) = self.vswitchd.take() {
            let _ = self.appctl(&["exit", "--cleanup"]);
            let exited = wait_until(Duration::from_secs(5), || {
                matches!(child.try_wait(), Ok(Some(_)))
            });
            if !exited {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        let _ = ovn_harness::run("ip", &["netns", "del", &self.netns]);
    }
}

/// Polls `check` every 20 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}
