//! One `kube-ovn-sandbox` under test, driven as a person drives it: the binary with
//! its own state directory and name prefix (others run sandboxes on this machine
//! too), and the real `kubectl` with the sandbox's kubeconfig. Dropping it runs
//! `down`, so a failing test leaves nothing running (after printing what a person
//! would look at, when the test failed). One driver for every sandbox test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use kube_ovn_sandbox::cluster::SandboxRecord;
use serde_json::Value;

pub const SANDBOX: &str = env!("CARGO_BIN_EXE_kube-ovn-sandbox");
/// The real parts a sandbox runs and its tests drive.
/// What a sandbox's tests drive beside the stack it runs ([`ovn_harness::STACK_TOOLS`]).
pub const EXTRA_TOOLS: &[&str] = &[
    "ping",
    "bash",
    "timeout",
    "python3",
    "/usr/bin/kubectl",
    "/usr/lib/cni/portmap",
];

/// How long a pod, an endpoint or a load balancer may take to follow a change.
pub const WAIT: Duration = Duration::from_secs(90);

pub struct Sandbox {
    dir: tempfile::TempDir,
    prefix: String,
}

impl Sandbox {
    /// A sandbox to be (its names are known before `up`), its name prefix starting
    /// with `tag`; `None` when a real part is missing outside CI (under CI=true that
    /// fails).
    pub fn new(tag: &str) -> Option<Sandbox> {
        if !ovn_harness::require_stack(EXTRA_TOOLS) {
            return None;
        }
        Some(Sandbox::unchecked(tag))
    }

    /// A sandbox whose tests never bring it up (bad input): nothing is required.
    pub fn unchecked(tag: &str) -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
            prefix: ovn_harness::unique_tag(tag),
        }
    }

    /// `up --nodes 2` with the manifests of `manifest` (a file or a directory), at most
    /// `timeout_secs` for the pods.
    pub fn up_command(&self, manifest: &Path, timeout_secs: u32) -> Command {
        let mut cmd = Command::new(SANDBOX);
        cmd.arg("--state-dir")
            .arg(self.state())
            .args(["up", "--nodes", "2", "--prefix", &self.prefix])
            .args(["--timeout", &timeout_secs.to_string()])
            .arg(manifest);
        cmd
    }

    /// `up --nodes 2` with `manifest` (YAML), which must succeed.
    pub fn up(&self, manifest: &str) {
        let path = self.write("manifest.yaml", manifest);
        let start = Instant::now();
        let out = self
            .up_command(&path, 180)
            .output()
            .expect("run kube-ovn-sandbox up");
        assert!(out.status.success(), "up: {}", text(&out));
        eprintln!("sandbox up in {:.1} s", start.elapsed().as_secs_f64());
    }

    /// The test's own directory (the state directory is inside it).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The prefix of every name the sandbox makes (nodes, namespaces).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// The name of node `i` (from 1).
    pub fn node(&self, i: usize) -> String {
        format!("{}n{i}", self.prefix)
    }

    /// Writes a file in the test's directory.
    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).expect("write a file");
        path
    }

    /// `kube-ovn-sandbox --state-dir DIR ARGS`.
    pub fn sandbox(&self, args: &[&str]) -> Output {
        Command::new(SANDBOX)
            .arg("--state-dir")
            .arg(self.state())
            .args(args)
            .output()
            .expect("run kube-ovn-sandbox")
    }

    /// `kubectl --kubeconfig KUBECONFIG ARGS`.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("/usr/bin/kubectl")
            .arg("--kubeconfig")
            .arg(self.state().join("kubeconfig"))
            .args(args)
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("run kubectl")
    }

    /// `kubectl ARGS`, which must succeed; its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(out.status.success(), "kubectl {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The record of the processes `up` started, once it wrote one.
    pub fn record(&self) -> Option<SandboxRecord> {
        SandboxRecord::load(&self.state().join("sandbox-processes.json"))
            .expect("a readable record")
    }

    /// The emergency lines (`|EMER|`, an assertion that killed it) of each node's
    /// `ovs-vswitchd` log: OVS 3.1.0's userspace conntrack has been seen to abort
    /// (`conn_update_state`), which takes that node's datapath down.
    pub fn datapath_emergencies(&self) -> Vec<String> {
        let record = self.state().join("sandbox-processes.json");
        let Ok(Some(record)) = SandboxRecord::load(&record) else {
            return vec!["no sandbox record".into()];
        };
        let mut out = Vec::new();
        for p in record
            .processes
            .iter()
            .filter(|p| p.name.starts_with("ovs-vswitchd"))
        {
            let log = std::fs::read_to_string(p.dir.join("ovs-vswitchd.log")).unwrap_or_default();
            for line in log.lines().filter(|l| l.contains("|EMER|")) {
                out.push(format!("{} (pid {}) died: {line}", p.name, p.pid));
            }
        }
        out
    }

    /// The pods of `namespace`, as `kubectl get pods -o json` lists them.
    pub fn pods(&self, namespace: &str) -> Vec<Value> {
        let out = self.kubectl_ok(&["-n", namespace, "get", "pods", "-o", "json"]);
        let list: Value = serde_json::from_str(&out).expect("a pod list");
        list["items"].as_array().cloned().unwrap_or_default()
    }

    /// The pods of `namespace` once `done` holds for them (bounded by [`WAIT`]).
    pub fn wait_pods(
        &self,
        namespace: &str,
        what: &str,
        done: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        eventually(what, || {
            let pods = self.pods(namespace);
            done(&pods).then_some(pods)
        })
    }
}

impl Sandbox {
    /// What a person would look at after a failure: the cluster's objects, the load
    /// balancers and the ends of the controller's and daemons' logs.
    fn print_diagnostics(&self) {
        let objects = self.kubectl(&[
            "get",
            "pods,services,endpointslices,networkpolicies",
            "-A",
            "-o",
            "wide",
        ]);
        eprintln!("--- kubectl get ...:\n{}", text(&objects));
        let lbs = self.sandbox(&["status"]);
        eprintln!("--- status:\n{}", text(&lbs));
        if let Ok(record) = std::fs::read_to_string(self.state().join("sandbox.json")) {
            let nb = serde_json::from_str::<Value>(&record)
                .ok()
                .and_then(|r| r["nb_remote"].as_str().map(str::to_string));
            if let Some(nb) = nb {
                let db = format!("--db={nb}");
                let out = Command::new("ovn-nbctl")
                    .args([db.as_str(), "lb-list"])
                    .output();
                if let Ok(out) = out {
                    eprintln!("--- ovn-nbctl lb-list:\n{}", text(&out));
                }
            }
        }
        let Ok(logs) = std::fs::read_dir(self.state().join("logs")) else {
            return;
        };
        for log in logs.flatten() {
            let contents = std::fs::read_to_string(log.path()).unwrap_or_default();
            let lines: Vec<&str> = contents.lines().collect();
            let tail = &lines[lines.len().saturating_sub(40)..];
            eprintln!("--- {} (last {} lines):", log.path().display(), tail.len());
            for line in tail {
                eprintln!("{line}");
            }
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if std::env::var_os("SANDBOX_TEST_KEEP").is_some() {
            // for a person debugging a failure: the sandbox stays up, its files kept
            let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"));
            eprintln!(
                "SANDBOX_TEST_KEEP: sandbox left up in {}",
                dir.keep().display()
            );
            return;
        }
        if std::thread::panicking() {
            self.print_diagnostics();
        }
        let out = self.sandbox(&["down"]);
        if !out.status.success() {
            eprintln!("down: {}", text(&out));
        }
    }
}

/// Tries `f` every half second until it gives a value, for at most [`WAIT`].
pub fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < WAIT, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
