//! Test fixtures: real namespaces, bridges and links, each removed by a
//! Drop guard even when the test fails. Names carry the process id and a
//! counter so tests running in parallel never collide.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use datapath::{Ipv4Dad, Ipv6Dad, MacAddr, PodInterface};
use serde_json::Value;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Fail under CI, skip (loudly) elsewhere, when we cannot manage namespaces.
pub fn require_root() -> bool {
    let root = nix::unistd::Uid::effective().is_root();
    if !root {
        assert!(
            !ovn_harness::in_ci(),
            "datapath kernel tests need root (CI is set)"
        );
        eprintln!("SKIPPED: datapath kernel tests need root");
    }
    root
}

/// A 12-hex-digit id, unique in this process and across processes.
pub fn unique_id() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!(
        "{:06x}{:06x}",
        std::process::id() & 0xff_ffff,
        n & 0xff_ffff
    )
}

/// Run a command, panic with its stderr on failure, return stdout.
pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd}: {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Run and only report whether it succeeded.
pub fn succeeds(cmd: &str, args: &[&str]) -> bool {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// `ip [-n NS] -j ARGS` parsed.
pub fn ip_json(netns: Option<&str>, args: &[&str]) -> Value {
    let mut full = Vec::new();
    if let Some(ns) = netns {
        full.extend(["-n", ns]);
    }
    full.push("-j");
    full.extend(args);
    let text = run("ip", &full);
    serde_json::from_str(if text.trim().is_empty() { "[]" } else { &text }).unwrap()
}

/// Names of all links, host (`None`) or in a namespace.
pub fn link_names(netns: Option<&str>) -> Vec<String> {
    ip_json(netns, &["link", "show"])
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["ifname"].as_str().unwrap().to_string())
        .collect()
}

/// A network namespace under /var/run/netns, deleted on drop.
#[derive(Debug)]
pub struct TestNetns {
    pub name: String,
}

impl TestNetns {
    pub fn new() -> Self {
        let name = format!("dptest-{}", unique_id());
        run("ip", &["netns", "add", &name]);
        TestNetns { name }
    }

    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/var/run/netns/{}", self.name))
    }

    pub fn ping(&self, target: IpAddr) -> bool {
        succeeds(
            "ip",
            &[
                "netns",
                "exec",
                &self.name,
                "ping",
                "-c1",
                "-W2",
                &target.to_string(),
            ],
        )
    }
}

impl Drop for TestNetns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// A host link created by the test (a bridge), deleted on drop.
#[derive(Debug)]
pub struct TestLink {
    pub name: String,
}

impl TestLink {
    pub fn bridge() -> Self {
        let name = format!("dpbr{}", &unique_id()[2..]);
        run("ip", &["link", "add", &name, "type", "bridge"]);
        run("ip", &["link", "set", &name, "up"]);
        TestLink { name }
    }

    pub fn squatter(name: &str) -> Self {
        run("ip", &["link", "add", name, "type", "bridge"]);
        TestLink { name: name.into() }
    }
}

impl Drop for TestLink {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.name])
            .output();
    }
}

/// Deletes a pod's host end on drop, for tests that fail before teardown.
#[derive(Debug)]
pub struct HostEndGuard(pub String);

impl Drop for HostEndGuard {
    fn drop(&mut self) {
        if succeeds("ip", &["link", "show", &self.0]) {
            let _ = Command::new("ip").args(["link", "del", &self.0]).output();
        }
    }
}

/// A pod on `bridge` in `ns` with the given addresses, no DAD wait, no
/// gateway check: the caller adjusts what the test is about.
pub fn pod(
    ns: &TestNetns,
    bridge: Option<&TestLink>,
    addrs: &[&str],
) -> (PodInterface, HostEndGuard) {
    let mut pod = PodInterface::new(&unique_id(), ns.path(), "eth0").unwrap();
    pod.host.bridge = bridge.map(|b| b.name.clone());
    pod.container.addresses = addrs.iter().map(|a| a.parse().unwrap()).collect();
    pod.container.ipv4_dad = Ipv4Dad::Announce;
    pod.container.ipv6_dad = Ipv6Dad::Skip;
    let guard = HostEndGuard(pod.host.name.clone());
    (pod, guard)
}

pub fn mac(s: &str) -> MacAddr {
    s.parse().unwrap()
}
