//! One `kube-ovn-sandbox` under test, driven as a person drives it: the binary with
//! its own state directory and name prefix (others run sandboxes on this machine
//! too), and the real `kubectl` with the sandbox's kubeconfig. Dropping it runs
//! `down`, so a failing test leaves nothing running.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const SANDBOX: &str = env!("CARGO_BIN_EXE_kube-ovn-sandbox");
const TOOLS: &[&str] = &[
    "ovsdb-server",
    "ovsdb-tool",
    "ovs-vswitchd",
    "ovs-vsctl",
    "ovn-northd",
    "ovn-controller",
    "ovn-nbctl",
    "ovn-sbctl",
    "ip",
    "ping",
    "bash",
    "timeout",
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
    /// A sandbox to be (its names are known before `up`); `None` when a real part
    /// is missing outside CI (under CI=true that fails).
    pub fn new() -> Option<Sandbox> {
        if !ovn_harness::require_root(TOOLS) {
            return None;
        }
        Some(Sandbox {
            dir: tempfile::tempdir().expect("temp dir"),
            prefix: ovn_harness::unique_tag("c"),
        })
    }

    /// `up --nodes 2` with `manifest` (YAML).
    pub fn up(&self, manifest: &str) {
        let path = self.write("manifest.yaml", manifest);
        let start = Instant::now();
        let out = Command::new(SANDBOX)
            .arg("--state-dir")
            .arg(self.state())
            .args(["up", "--nodes", "2", "--prefix", &self.prefix])
            .args(["--timeout", "180"])
            .arg(path)
            .output()
            .expect("run kube-ovn-sandbox up");
        assert!(out.status.success(), "up: {}", text(&out));
        eprintln!("sandbox up in {:.1} s", start.elapsed().as_secs_f64());
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

    /// The emergency lines (`|EMER|`, an assertion that killed it) of each node's
    /// `ovs-vswitchd` log: OVS 3.1.0's userspace conntrack has been seen to abort
    /// (`conn_update_state`), which takes that node's datapath down.
    pub fn datapath_emergencies(&self) -> Vec<String> {
        let record = self.state().join("sandbox-processes.json");
        let Ok(Some(record)) = kube_ovn::sandbox::cluster::SandboxRecord::load(&record) else {
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

pub fn name(pod: &Value) -> &str {
    pod["metadata"]["name"].as_str().unwrap_or_default()
}

pub fn pod_ip(pod: &Value) -> &str {
    pod["status"]["podIP"].as_str().unwrap_or_default()
}

pub fn node_of(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or_default()
}

/// The status of condition `kind` (`"True"`, `"False"`), if the pod has it.
pub fn condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a str> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
        .and_then(|c| c["status"].as_str())
}

/// Running, not being deleted, and Ready as asked.
pub fn running(pod: &Value, ready: bool) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["metadata"]["deletionTimestamp"].is_null()
        && condition(pod, "Ready") == Some(if ready { "True" } else { "False" })
}

/// The names of the pods `running(pod, true)` whose name starts with `prefix`.
pub fn ready_named(pods: &[Value], prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = pods
        .iter()
        .filter(|p| name(p).starts_with(prefix) && running(p, true))
        .map(|p| name(p).to_string())
        .collect();
    names.sort();
    names
}

/// `count` TCP connections from pod `client` of `namespace` to `ip:port`, one after
/// another, each with a 2 s bound: what answered each (empty when nothing did).
pub fn connect_many(
    sb: &Sandbox,
    namespace: &str,
    client: &str,
    ip: &str,
    port: u16,
    count: usize,
) -> Vec<String> {
    let script = format!(
        "for i in $(seq {count}); do timeout 2 bash -c 'exec 3<>/dev/tcp/{ip}/{port}; cat <&3' 2>/dev/null; echo; done"
    );
    let out = sb.kubectl(&["-n", namespace, "exec", client, "--", "bash", "-c", &script]);
    assert!(out.status.success(), "exec in {client}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}
