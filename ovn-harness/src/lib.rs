//! Real OVS/OVN daemons for tests, benchmarks and the sandbox.
//!
//! Every process is started as a child of the calling process (never `--detach`ed), with
//! all its files (database, sockets, unixctl socket, log) under a private temporary
//! directory, and is stopped by its own pid when the owning value is dropped. Nothing
//! here touches the system's `/var/run/openvswitch` or `/var/run/ovn`, so several
//! harnesses can run side by side in one test binary.
//!
//! The commands are the ones Debian's OVS 3.1 / OVN 23.03 packages accept:
//! - a standalone database: `ovsdb-tool create DB SCHEMA` then
//!   `ovsdb-server DB --remote=punix:SOCK [--remote=ptcp:PORT:127.0.0.1]`, over TLS
//!   `--private-key=KEY --certificate=CERT --ca-cert=CACERT --remote=pssl:PORT:127.0.0.1`
//!   (certificates from [`Pki`]), or connecting out with `--remote=ssl:HOST:PORT`;
//! - a Raft cluster: `ovsdb-tool create-cluster` for the first member and
//!   `ovsdb-tool join-cluster` for the others, each on its own 127.0.0.1 port chosen
//!   free at start;
//! - `ovn-northd --ovnnb-db=... --ovnsb-db=...`, ready once `ovn-nbctl --wait=sb sync`
//!   returns;
//! - a chassis: a local Open_vSwitch database, `ovs-vswitchd --disable-system` on the
//!   userspace datapath inside a network namespace, and `ovn-controller`.
//!
//! Tests that need these tools call [`require`] first: outside CI a missing tool makes
//! the test return early with a message; under CI (see [`in_ci`]) it panics, so CI never
//! passes by skipping.

mod chassis;
mod node;
mod pki;
mod process;
mod server;
pub mod transfer;

pub use chassis::{Chassis, ChassisConfig};
pub use node::{
    unique_tag, Cluster, Netns, Node, Pod, PodSpec, Underlay, UNDERLAY_BRIDGE, UNDERLAY_MTU,
    UNDERLAY_NIC, UNDERLAY_PREFIX,
};
pub use pki::{OvsPki, Pki, TlsFiles};
pub use process::{Daemon, HarnessError, ProcessInfo};
pub use server::{Db, Northd, OvnCentral, OvsdbServer, RaftCluster};

use std::path::Path;
use std::process::Command;

/// True when running under CI, where every real part must be present and a test that
/// cannot drive one fails instead of skipping.
///
/// The one rule of the workspace, which every gate (harness, datapath, CNI plugins,
/// kubectl) goes through: the `CI` variable is set to anything but `""`, `"0"` or
/// `"false"` (any case). CI services set `CI=true` or `CI=1`; `scripts/test.sh` keeps an
/// inherited value and sets `true` otherwise.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| ci_value_is_on(&value))
}

/// The rule of [`in_ci`] applied to one value of `CI`.
pub fn ci_value_is_on(value: &str) -> bool {
    let value = value.trim();
    !(value.is_empty() || value == "0" || value.eq_ignore_ascii_case("false"))
}

/// Checks that every named tool is installed (on `PATH`, or an absolute path that
/// exists). Returns `false` when one is missing outside CI, after printing why, so the
/// caller can return early; panics when one is missing under CI ([`in_ci`]).
pub fn require(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !tool_exists(t)).collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!(
        "missing required tools {missing:?}: install openvswitch-switch ovn-central ovn-host \
         containernetworking-plugins (scripts/test.sh does)"
    );
    if in_ci() {
        panic!("{msg} (CI is set: tests that need real parts must not skip)");
    }
    eprintln!("skipping: {msg}");
    false
}

/// True when we are root, which tests that create namespaces or devices need.
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Like [`require`], for tests that also need root (namespaces, veth, vswitchd).
pub fn require_root(tools: &[&str]) -> bool {
    if !is_root() {
        if in_ci() {
            panic!("this test needs root (CI is set: tests that need real parts must not skip)");
        }
        eprintln!("skipping: this test needs root");
        return false;
    }
    require(tools)
}

/// The programs a simulated node with OVN central runs, and the tools its tests read
/// it with: the OVSDB server and tool, ovs-vswitchd, ovn-northd, ovn-controller, the
/// `*ctl` clients and `ip`.
pub const STACK_TOOLS: &[&str] = &[
    "ovsdb-server",
    "ovsdb-tool",
    "ovs-vswitchd",
    "ovs-vsctl",
    "ovn-northd",
    "ovn-controller",
    "ovn-nbctl",
    "ovn-sbctl",
    "ip",
];

/// [`require_root`] for a test that runs the whole stack ([`STACK_TOOLS`]) and also
/// drives the tools in `extra`.
pub fn require_stack(extra: &[&str]) -> bool {
    require_root(&[STACK_TOOLS, extra].concat())
}

fn tool_exists(tool: &str) -> bool {
    if tool.contains('/') {
        return Path::new(tool).exists();
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
        .unwrap_or(false)
}

/// Runs a command to completion and returns its standard output. A non-zero exit is an
/// error carrying the command line and its standard error.
pub fn run(cmd: &str, args: &[&str]) -> Result<String, HarnessError> {
    run_with_env(cmd, args, &[])
}

/// [`run`] with extra environment variables.
pub fn run_with_env(
    cmd: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<String, HarnessError> {
    let mut command = Command::new(cmd);
    command.args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().map_err(|source| HarnessError::Spawn {
        program: cmd.to_string(),
        source,
    })?;
    if !out.status.success() {
        return Err(HarnessError::CommandFailed {
            command: format!("{cmd} {}", args.join(" ")),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::ci_value_is_on;

    #[test]
    fn ci_is_on_for_any_value_but_empty_zero_or_false() {
        for on in ["true", "1", "yes", "TRUE", "github-actions"] {
            assert!(ci_value_is_on(on), "CI={on:?} must count as CI");
        }
        for off in ["", " ", "0", "false", "False", "FALSE"] {
            assert!(!ci_value_is_on(off), "CI={off:?} must not count as CI");
        }
    }
}
