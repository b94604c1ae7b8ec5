//! One OVN node: a local Open_vSwitch database, `ovs-vswitchd` on the userspace (`netdev`)
//! datapath, and `ovn-controller`, bound to a Southbound database.
//!
//! The userspace datapath creates tap devices named `ovs-netdev` and after the bridge in
//! the network namespace vswitchd runs in, so two chassis can only run side by side when
//! each has its own namespace: give each a `netns`. Ports added to the bridge (veth host
//! ends) must then live in that namespace too. `ovn-controller` runs there as well.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use crate::process::{wait_until, Daemon, HarnessError, ProcessInfo};
use crate::server::{Db, OvsdbServer};

/// How a chassis is set up.
#[derive(Debug, Clone)]
pub struct ChassisConfig {
    /// Chassis name (`external_ids:system-id`).
    pub name: String,
    /// The Southbound remote ovn-controller connects to.
    pub sb_remote: String,
    /// Network namespace to run vswitchd in; created when missing and then deleted on
    /// drop. `None` runs in the caller's namespace (only one such chassis at a time).
    pub netns: Option<String>,
    /// Tunnel endpoint address (`ovn-encap-ip`); chassis sharing one SB need distinct ones.
    pub encap_ip: String,
    /// Integration bridge name.
    pub bridge: String,
}

impl ChassisConfig {
    /// A chassis called `name` on `sb_remote`, in its own namespace `name`, with
    /// `encap_ip` as its geneve endpoint.
    pub fn new(name: &str, sb_remote: &str, encap_ip: &str) -> Self {
        Self {
            name: name.to_string(),
            sb_remote: sb_remote.to_string(),
            netns: Some(name.to_string()),
            encap_ip: encap_ip.to_string(),
            bridge: "br-int".to_string(),
        }
    }
}

/// A running chassis. Dropping it stops ovn-controller (which removes its Chassis record),
/// vswitchd (with `exit --cleanup`), the local database, and a namespace it created.
#[derive(Debug)]
pub struct Chassis {
    config: ChassisConfig,
    // Drop order: controller, then vswitchd, then the database.
    controller: Option<Daemon>,
    // behind a lock so that a crashed vswitchd can be restarted while pods plugged
    // into the chassis borrow it
    vswitchd: Mutex<Option<Daemon>>,
    db: OvsdbServer,
    created_netns: bool,
}

impl Chassis {
    /// Starts the chassis and waits until ovn-controller has registered it in SB.
    pub fn start(config: ChassisConfig) -> Result<Self, HarnessError> {
        let db = OvsdbServer::start(Db::OpenVswitch)?;
        let mut chassis = Self {
            config,
            controller: None,
            vswitchd: Mutex::new(None),
            db,
            created_netns: false,
        };
        chassis.create_netns()?;
        chassis.init_db()?;
        chassis.start_vswitchd()?;
        chassis.start_controller()?;
        Ok(chassis)
    }

    fn create_netns(&mut self) -> Result<(), HarnessError> {
        if let Some(ns) = &self.config.netns {
            if !Path::new("/var/run/netns").join(ns).exists() {
                crate::run("ip", &["netns", "add", ns])?;
                self.created_netns = true;
            }
            crate::run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn init_db(&self) -> Result<(), HarnessError> {
        let c = &self.config;
        self.vsctl(&[
            "--no-wait",
            "--",
            "init",
            "--",
            "set",
            "Open_vSwitch",
            ".",
            &format!("external_ids:system-id={}", c.name),
            &format!("external_ids:hostname={}", c.name),
            &format!("external_ids:ovn-remote={}", c.sb_remote),
            "external_ids:ovn-encap-type=geneve",
            &format!("external_ids:ovn-encap-ip={}", c.encap_ip),
            &format!("external_ids:ovn-bridge={}", c.bridge),
            "external_ids:ovn-bridge-datapath-type=netdev",
        ])?;
        Ok(())
    }

    fn start_vswitchd(&self) -> Result<(), HarnessError> {
        let dir = self.db.dir().to_path_buf();
        let log = dir.join("ovs-vswitchd.log");
        let mut cmd = match &self.config.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "ovs-vswitchd"]);
                c
            }
            None => Command::new("ovs-vswitchd"),
        };
        cmd.arg(self.db.unix_remote())
            .arg("--disable-system")
            .arg(format!(
                "--unixctl={}",
                dir.join("ovs-vswitchd.ctl").display()
            ))
            .arg(format!("--log-file={}", log.display()))
            .arg("--no-chdir")
            .arg("-vconsole:off")
            .env("OVS_RUNDIR", &dir)
            .env("OVS_LOGDIR", &dir)
            .env("OVS_DBDIR", &dir);
        let mut slot = self.vswitchd.lock().unwrap_or_else(|p| p.into_inner());
        *slot = Some(Daemon::spawn("ovs-vswitchd", cmd, &log)?);
        let br = self.config.bridge.clone();
        // ovs-vsctl waits for vswitchd to apply the change; the OpenFlow management socket
        // answering proves the bridge really exists.
        self.vsctl(&[
            "--timeout=30",
            "--",
            "--may-exist",
            "add-br",
            &br,
            "--",
            "set",
            "Bridge",
            &br,
            "datapath_type=netdev",
            "fail-mode=secure",
            "other-config:disable-in-band=true",
        ])?;
        let mgmt = format!("unix:{}", dir.join(format!("{br}.mgmt")).display());
        let vswitchd = slot.as_mut().expect("just started");
        vswitchd.wait_ready("the integration bridge", || {
            crate::run("ovs-ofctl", &["-O", "OpenFlow15", "show", &mgmt]).is_ok()
        })
    }

    /// Starts `ovs-vswitchd` again when it has exited, as `ovs-ctl`'s monitor or
    /// systemd does on a real node: OVS 3.1.0's userspace conntrack has been seen to
    /// abort (`conn_update_state` assertion) under the sandbox's traffic, and a node
    /// without its datapath drops everything. ovn-controller reconnects and installs
    /// its flows again; ports are reopened from the database, but the devices of
    /// internal ports are new (their addresses are for their owners to put back).
    /// Returns whether it was restarted.
    pub fn revive_vswitchd(&self) -> Result<bool, HarnessError> {
        let dead = {
            let mut slot = self.vswitchd.lock().unwrap_or_else(|p| p.into_inner());
            if slot.as_mut().is_none_or(Daemon::is_running) {
                return Ok(false);
            }
            slot.take()
        };
        if let Some(mut dead) = dead {
            tracing::warn!(
                chassis = %self.config.name,
                log = %dead.log_tail(),
                "ovs-vswitchd exited; starting it again"
            );
            dead.stop(); // reaped already: stop sends nothing
        }
        self.start_vswitchd()?;
        Ok(true)
    }

    /// `ovs-appctl revalidator/purge` on the chassis' ovs-vswitchd: every datapath
    /// flow (megaflow) dropped, so the next packets are classified again against the
    /// current OpenFlow tables. OVS 3.1.0's userspace datapath has been seen here to keep
    /// a megaflow whose action no longer matched the tables after a run of
    /// NetworkPolicy updates (the datapath dropping what `ovn-trace` on the Southbound
    /// and the OpenFlow tables deliver), for as long as traffic kept it alive.
    pub fn purge_datapath_flows(&self) -> Result<(), HarnessError> {
        self.vswitchd_appctl(&["revalidator/purge"])?;
        Ok(())
    }

    /// `ovs-appctl ARGS` on the chassis' ovs-vswitchd; its output.
    pub fn vswitchd_appctl(&self, args: &[&str]) -> Result<String, HarnessError> {
        let ctl = self.db.dir().join("ovs-vswitchd.ctl");
        let ctl = ctl.to_string_lossy();
        let mut all = vec!["-t", ctl.as_ref()];
        all.extend_from_slice(args);
        crate::run("ovs-appctl", &all)
    }

    fn start_controller(&mut self) -> Result<(), HarnessError> {
        let dir = self.db.dir().to_path_buf();
        let log = dir.join("ovn-controller.log");
        // in the node's namespace too: it opens the netdevs of the bridges it manages,
        // and outside the namespace logs `could not open netdev` for each
        let mut cmd = match &self.config.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, "ovn-controller"]);
                c
            }
            None => Command::new("ovn-controller"),
        };
        // ovn-controller 23.03 has no --unixctl option: its control socket is
        // OVN_RUNDIR/ovn-controller.PID.ctl.
        cmd.arg(self.db.unix_remote())
            .arg(format!("--log-file={}", log.display()))
            .arg("--no-chdir")
            .arg("-vconsole:off")
            .env("OVS_RUNDIR", &dir)
            .env("OVN_RUNDIR", &dir)
            .env("OVN_LOGDIR", &dir);
        let mut controller = Daemon::spawn("ovn-controller", cmd, &log)?;
        let sb = format!("--db={}", self.config.sb_remote);
        let name = self.config.name.clone();
        controller.wait_ready("the Chassis record in SB", || {
            crate::run(
                "ovn-sbctl",
                &[
                    &sb,
                    "--bare",
                    "--columns=name",
                    "find",
                    "Chassis",
                    &format!("name={name}"),
                ],
            )
            .map(|out| out.trim() == name)
            .unwrap_or(false)
        })?;
        self.controller = Some(controller);
        Ok(())
    }

    /// Runs `ovs-vsctl` against this chassis' database.
    pub fn vsctl(&self, args: &[&str]) -> Result<String, HarnessError> {
        let db = format!("--db={}", self.db.unix_remote());
        let mut all = vec![db.as_str()];
        all.extend_from_slice(args);
        crate::run("ovs-vsctl", &all)
    }

    /// The local Open_vSwitch database's remote (`unix:...`).
    pub fn ovs_remote(&self) -> String {
        self.db.unix_remote()
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &ChassisConfig {
        &self.config
    }

    /// ovn-controller, ovs-vswitchd and the local ovsdb-server as records (those
    /// running); they share one directory.
    pub fn processes(&self) -> Vec<ProcessInfo> {
        let dir = self.db.dir();
        let name = &self.config.name;
        let record = |what: &str, pid: Option<u32>| {
            pid.map(|pid| ProcessInfo {
                name: format!("{what} {name}"),
                pid,
                dir: dir.to_path_buf(),
            })
        };
        [
            record(
                "ovn-controller",
                self.controller.as_ref().and_then(Daemon::pid),
            ),
            record(
                "ovs-vswitchd",
                self.vswitchd
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .as_ref()
                    .and_then(Daemon::pid),
            ),
            record("ovsdb-server", self.db.pid()),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The directory of its database, sockets, control sockets and logs.
    pub fn dir(&self) -> &Path {
        self.db.dir()
    }

    /// The namespace vswitchd runs in, if any.
    pub fn netns(&self) -> Option<&str> {
        self.config.netns.as_deref()
    }

    /// Waits until `Interface iface external_ids:ovn-installed="true"`, as the CNI does.
    pub fn wait_ovn_installed(&self, iface: &str, timeout: Duration) -> bool {
        wait_until(timeout, || {
            self.vsctl(&[
                "--if-exists",
                "get",
                "Interface",
                iface,
                "external_ids:ovn-installed",
            ])
            .map(|v| v.trim() == "\"true\"")
            .unwrap_or(false)
        })
    }
}

impl Drop for Chassis {
    fn drop(&mut self) {
        let dir = self.db.dir().to_path_buf();
        if let Some(mut c) = self.controller.take() {
            if let Some(pid) = c.pid() {
                // `exit` removes the Chassis record from SB, as a node leaving would.
                let ctl = dir.join(format!("ovn-controller.{pid}.ctl"));
                let _ = crate::run("ovn-appctl", &["-t", &ctl.to_string_lossy(), "exit"]);
            }
            c.stop();
        }
        let vswitchd = self.vswitchd.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(mut v) = vswitchd.take() {
            let ctl = dir.join("ovs-vswitchd.ctl");
            let _ = crate::run(
                "ovs-appctl",
                &["-t", &ctl.to_string_lossy(), "exit", "--cleanup"],
            );
            v.stop();
        }
        if self.created_netns {
            if let Some(ns) = &self.config.netns {
                let _ = crate::run("ip", &["netns", "del", ns]);
            }
        }
    }
}
