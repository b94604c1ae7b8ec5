//! The `kube-ovn-sandbox` binary as a person runs it: `up --nodes 2` in a temporary
//! state directory with a small manifest set, pods Running on both nodes, a
//! cross-node ping through `kubectl exec`, `status`, `matrix`, `down` with nothing
//! left behind, `up` again from the same directory, and `down` after an `up` whose
//! supervisor was killed half-way.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

mod common;

use common::sandbox::{text, Sandbox};
use kube_ovn_sandbox::cluster::SandboxRecord;
use serde_json::Value;

const MANIFEST: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: cli, labels: {name: cli}}
---
apiVersion: v1
kind: Pod
metadata: {namespace: cli, name: a, labels: {app: a}}
spec:
  containers:
    - name: serve
      image: agnhost
      ports: [{name: http, containerPort: 80, protocol: TCP}]
---
apiVersion: v1
kind: Pod
metadata: {namespace: cli, name: b, labels: {app: b}}
spec:
  containers:
    - name: serve
      image: agnhost
      ports: [{name: http, containerPort: 80, protocol: TCP}]
"#;

/// What this test checks of a sandbox beyond the shared driver: that `down` leaves
/// nothing of it behind.
trait LeavesNothing {
    fn namespaces(&self) -> Vec<String>;
    fn processes(&self, record: &SandboxRecord) -> Vec<String>;
    fn down_and_check(&self, record: &SandboxRecord);
}

impl LeavesNothing for Sandbox {
    /// Namespaces with our prefix that still exist.
    fn namespaces(&self) -> Vec<String> {
        std::fs::read_dir("/run/netns")
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(self.prefix()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Live processes whose command line names our state directory, or one of the
    /// recorded processes still running.
    fn processes(&self, record: &SandboxRecord) -> Vec<String> {
        let state = self.state().display().to_string();
        let mut out = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let line = String::from_utf8_lossy(&raw).replace('\0', " ");
            let recorded = record
                .processes
                .iter()
                .any(|p| p.pid == pid && line.contains(&*p.dir.to_string_lossy()));
            let ours = (line.contains(&state) && pid != std::process::id()) || recorded;
            if ours && !is_zombie(pid) {
                out.push(format!("{pid}: {line}"));
            }
        }
        out
    }

    /// `down`, then checks that nothing of `record` is left.
    fn down_and_check(&self, record: &SandboxRecord) {
        let out = self.sandbox(&["down"]);
        assert!(out.status.success(), "down: {}", text(&out));
        assert_eq!(self.namespaces(), Vec::<String>::new(), "namespaces left");
        // `ip netns add` bind-mounts each namespace under /run/netns
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let ours: Vec<&str> = mounts
            .lines()
            .filter(|l| l.contains(&format!("/run/netns/{}", self.prefix())))
            .collect();
        assert!(ours.is_empty(), "mounts left: {ours:?}");
        assert_eq!(
            self.processes(record),
            Vec::<String>::new(),
            "processes left"
        );
        for p in &record.processes {
            if p.dir.to_string_lossy().starts_with("/tmp/ovn-h.") {
                assert!(!p.dir.exists(), "{} left", p.dir.display());
            }
        }
        assert!(!self.state().join("sandbox.json").exists());
        assert!(!self.state().join("kubeconfig").exists());
        let again = self.sandbox(&["down"]);
        assert!(again.status.success(), "second down: {}", text(&again));
        assert!(
            String::from_utf8_lossy(&again.stdout).contains("nothing to stop"),
            "{}",
            text(&again)
        );
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// `up` with [`MANIFEST`].
fn up_command(sb: &Sandbox) -> Command {
    let manifest = sb.write("manifest.yaml", MANIFEST);
    sb.up_command(&manifest, 120)
}

fn pods(sb: &Sandbox) -> Vec<Value> {
    sb.pods("cli")
}

fn up_and_check(sb: &Sandbox) -> SandboxRecord {
    let out = up_command(sb).output().expect("run up");
    assert!(out.status.success(), "up: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("export KUBECONFIG="), "{stdout}");
    assert!(stdout.contains("2 pods Running"), "{stdout}");
    let record = sb.record().expect("a record after up");
    assert!(record.ready);
    let pods = pods(sb);
    assert_eq!(pods.len(), 2, "{pods:?}");
    let mut nodes: Vec<&str> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 2, "one pod per node: {nodes:?}");
    for p in &pods {
        assert_eq!(p["status"]["phase"], "Running", "{p}");
        assert!(
            p["status"]["podIP"]
                .as_str()
                .is_some_and(|ip| ip.starts_with("10.16.")),
            "{p}"
        );
    }
    // each node's daemon pinged its join gateway from ovn0 and said so on the Node
    let start = Instant::now();
    loop {
        let out = sb.kubectl(&[
            "get",
            "nodes",
            "-o",
            r#"jsonpath={range .items[*]}{.status.conditions[?(@.type=="NetworkUnavailable")].reason}{"\n"}{end}"#,
        ]);
        let reasons = String::from_utf8_lossy(&out.stdout).to_string();
        let reachable = reasons
            .lines()
            .filter(|r| *r == "JoinSubnetGatewayReachable")
            .count();
        if reachable == 2 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "NetworkUnavailable reasons: {reasons:?} ({})",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    record
}

#[test]
fn up_status_matrix_down_then_up_again_and_down_after_a_killed_up() {
    let Some(sb) = Sandbox::new("s") else {
        return;
    };
    let record = up_and_check(&sb);

    // a cross-node ping from a to b, through kubectl exec into a's network namespace
    let b_ip = pods(&sb)
        .iter()
        .find(|p| p["metadata"]["name"] == "b")
        .and_then(|p| p["status"]["podIP"].as_str().map(str::to_string))
        .unwrap();
    let ping = sb.kubectl(&[
        "-n", "cli", "exec", "a", "--", "ping", "-c", "2", "-W", "5", &b_ip,
    ]);
    assert!(ping.status.success(), "ping a -> b: {}", text(&ping));

    // up again while it runs: says so, re-applies
    let again = up_command(&sb).output().unwrap();
    assert!(again.status.success(), "second up: {}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("already running"),
        "{}",
        text(&again)
    );

    let status = sb.sandbox(&["status"]);
    assert!(status.status.success(), "status: {}", text(&status));
    let shown = String::from_utf8_lossy(&status.stdout);
    let wanted = [
        format!("{}n1", sb.prefix()),
        format!("{}n2", sb.prefix()),
        "ovn-default".to_string(),
        b_ip.clone(),
    ];
    for want in &wanted {
        assert!(shown.contains(want), "{want} not in status:\n{shown}");
    }
    let pod_lines: Vec<&str> = shown.lines().filter(|l| l.starts_with("cli ")).collect();
    assert_eq!(pod_lines.len(), 2, "{shown}");
    assert!(
        pod_lines.iter().all(|l| l.trim_end().ends_with("true")),
        "ovn-installed: {shown}"
    );

    let matrix = sb.sandbox(&["matrix", "--ports", "80", "--protocols", "tcp", "--json"]);
    assert!(matrix.status.success(), "matrix: {}", text(&matrix));
    let report: Value = serde_json::from_slice(&matrix.stdout).unwrap();
    assert_eq!(report["mismatches"], 0, "{report}");
    let probes = report["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 4, "{report}");
    assert!(probes.iter().all(|p| p["observed"] == true), "{report}");

    // kubectl ko finds the sandbox by its state directory; every check passes once
    // the nodes' ovn0 have converged (the supervisor does it in the background)
    let start = Instant::now();
    loop {
        let out = Command::new(common::workspace_binary("kubectl-ko"))
            .args(["diagnose", "all"])
            .env("KUBE_OVN_SANDBOX", sb.state())
            .output()
            .unwrap();
        if out.status.success() {
            assert!(
                String::from_utf8_lossy(&out.stdout).contains(", 0 failed"),
                "{}",
                text(&out)
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "kubectl ko diagnose all: {}",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    sb.down_and_check(&record);

    // the same state directory again
    let record = up_and_check(&sb);
    sb.down_and_check(&record);

    // `up` killed half-way: its supervisor (and `up`) SIGKILLed once OVN runs
    let mut up = up_command(&sb).spawn().unwrap();
    let start = Instant::now();
    let half = loop {
        if let Some(r) = sb.record().filter(|r| !r.processes.is_empty()) {
            break r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "up never started OVN"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(half.supervisor as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = up.kill();
    let _ = up.wait();
    assert!(
        !sb.namespaces().is_empty(),
        "the killed sandbox had namespaces"
    );
    assert!(
        !sb.processes(&half).is_empty(),
        "the killed sandbox left processes to stop"
    );
    sb.down_and_check(&half);
}

/// Bad input fails before anything starts, naming the offender; commands on a state
/// directory without a sandbox say so.
#[test]
fn bad_input_names_the_offender() {
    let sb = Sandbox::unchecked("s");
    let fails = |args: &[&str]| {
        let out = sb.sandbox(args);
        assert!(!out.status.success(), "{args:?} succeeded: {}", text(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = fails(&["up", "--nodes", "0"]);
    assert!(err.contains("--nodes must be 1 to 16, not 0"), "{err}");
    let err = fails(&["up", "--nodes", "two"]);
    assert!(err.contains("--nodes"), "{err}");
    let bad = sb.dir().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\n",
    )
    .unwrap();
    let err = fails(&["up", bad.to_str().unwrap()]);
    assert!(
        err.contains("bad.yaml") && err.contains("Pod has no metadata.name"),
        "{err}"
    );
    let missing = sb.dir().join("missing.yaml");
    let err = fails(&["up", missing.to_str().unwrap()]);
    assert!(
        err.contains("cannot read manifest") && err.contains("missing.yaml"),
        "{err}"
    );
    // nothing was started by any of these
    assert_eq!(sb.namespaces(), Vec::<String>::new());
    assert!(sb.record().is_none());
    for command in ["status", "matrix"] {
        let err = fails(&[command]);
        assert!(
            err.contains("no sandbox in") && err.contains("sandbox.json is missing"),
            "{command}: {err}"
        );
    }
    let err = fails(&["matrix", "--protocols", "sctp"]);
    assert!(err.contains("\"sctp\" is not tcp or udp"), "{err}");
    let out = sb.sandbox(&["down"]);
    assert!(
        out.status.success(),
        "down with nothing running: {}",
        text(&out)
    );
}

/// Mbit/s of a transfer of `bytes` from pod `from` into pod `to` (at `to_ip`), both
/// in namespace `tour`: a sink in `to` (python3, run through `kubectl exec` inside the
/// pod's namespace) counts what arrives until the sender closes and prints the count
/// and the seconds from its first byte.
fn transfer_into(sb: &Sandbox, to: &str, from: &str, to_ip: &str, bytes: usize) -> f64 {
    const SINK: &str = r#"
import socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5201))
s.listen(1)
c, _ = s.accept()
n, t = 0, None
while True:
    b = c.recv(65536)
    if not b:
        break
    t = t or time.time()
    n += len(b)
print(n, time.time() - t)
"#;
    let sink = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(sb.state().join("kubeconfig"))
        .env("HOME", sb.dir())
        .args(["-n", "tour", "exec", to, "--", "python3", "-c", SINK])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the sink");
    let send = format!(
        r#"
import socket, time
for _ in range(100):
    try:
        s = socket.create_connection(("{to_ip}", 5201), timeout=2)
        break
    except OSError:
        time.sleep(0.1)
s.sendall(b"x" * {bytes})
s.close()
"#
    );
    let out = sb.kubectl(&["-n", "tour", "exec", from, "--", "python3", "-c", &send]);
    assert!(out.status.success(), "sender: {}", text(&out));
    let sink = sink.wait_with_output().expect("the sink's output");
    let line = String::from_utf8_lossy(&sink.stdout).trim().to_string();
    let mut parts = line.split_whitespace();
    let (Some(n), Some(secs)) = (parts.next(), parts.next()) else {
        panic!("sink printed {line:?}: {}", text(&sink));
    };
    let n: f64 = n.parse().expect("a byte count");
    let secs: f64 = secs.parse().expect("seconds");
    assert_eq!(n as usize, bytes, "every byte arrived");
    let mbps = n * 8.0 / secs / 1e6;
    eprintln!("{from} -> {to}: {n} bytes in {secs:.2} s, {mbps:.2} Mbit/s");
    mbps
}

/// The tour in `examples/sandbox`, the README's default: every feature it shows is
/// there (static address and MAC, excludeIps, the IP pool, the namespace-bound and the
/// private subnet, the rate limit's OVS rows and a bounded transfer it paces, the Service balancing to the
/// Deployment's pods), and the whole matrix (80, 81 x TCP, UDP) matches the policies.
#[test]
fn the_tour_in_examples_runs_every_feature() {
    let Some(sb) = Sandbox::new("s") else {
        return;
    };
    let tour = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/sandbox");
    let out = sb.up_command(&tour, 120).output().unwrap();
    assert!(out.status.success(), "up: {}", text(&out));
    let record = sb.record().unwrap();
    let field = |pods: &[Value], name: &str, path: &[&str]| -> String {
        let pod = pods
            .iter()
            .find(|p| p["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no pod {name}"));
        let mut v = pod;
        for key in path {
            v = &v[*key];
        }
        v.as_str().unwrap_or_default().to_string()
    };
    let ip = |pods: &[Value], name: &str| field(pods, name, &["status", "podIP"]);
    let tour_pods = sb.pods("tour");
    assert_eq!(ip(&tour_pods, "web-static"), "10.16.0.50");
    let mac = field(
        &tour_pods,
        "web-static",
        &["metadata", "annotations", "ovn.kubernetes.io/mac_address"],
    );
    assert_eq!(mac, "00:00:00:53:00:50");
    let last = |ip: &str| ip.rsplit('.').next().unwrap().parse::<u8>().unwrap();
    let custom = ip(&tour_pods, "custom-a");
    assert!(
        custom.starts_with("10.66.0.") && last(&custom) > 10,
        "excludeIps: {custom}"
    );
    let pooled = ip(&tour_pods, "pool-a");
    assert!(
        pooled.starts_with("10.66.0.") && (100..=120).contains(&last(&pooled)),
        "pool: {pooled}"
    );
    for p in sb.pods("bound") {
        let ip = p["status"]["podIP"].as_str().unwrap();
        assert!(ip.starts_with("10.67.0."), "namespace-bound subnet: {p}");
    }
    let private = ip(&sb.pods("private"), "private-a");
    assert!(private.starts_with("10.68.0."), "{private}");
    let ping = |from: &str, ns: &str, to: &str| {
        sb.kubectl(&[
            "-n", ns, "exec", from, "--", "ping", "-c", "1", "-W", "2", to,
        ])
        .status
        .success()
    };
    assert!(ping("web-static", "tour", &pooled), "across subnets");
    assert!(
        !ping("web-static", "tour", &private),
        "the private subnet isolates"
    );

    // the rate limit's rows on the node running `limited` (linux-htb QoS and Queue)
    let node = field(&tour_pods, "limited", &["spec", "nodeName"]);
    let state: Value =
        serde_json::from_slice(&std::fs::read(sb.state().join("sandbox.json")).unwrap()).unwrap();
    let ovs = state["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == node.as_str())
        .and_then(|n| n["ovs_remote"].as_str())
        .unwrap()
        .to_string();
    let queues = ovn_harness::run(
        "ovs-vsctl",
        &[
            &format!("--db={ovs}"),
            "--bare",
            "--columns=other_config",
            "list",
            "Queue",
        ],
    )
    .unwrap();
    assert!(queues.contains("max-rate=10000000"), "Queue rows: {queues}");
    // and the limit holds on real traffic: a bounded transfer into `limited`
    let limited_ip = field(&tour_pods, "limited", &["status", "podIP"]);
    let mbps = transfer_into(&sb, "limited", "web-static", &limited_ip, 3_000_000);
    assert!(
        mbps > 0.5 && mbps < 15.0,
        "into a pod with ingress_rate 10 (Mbit/s): {mbps:.2} Mbit/s"
    );

    // the Service's ClusterIP answers with a backend's name (the responder's)
    let svc = sb.kubectl(&[
        "-n",
        "tour",
        "get",
        "svc",
        "web",
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    let vip = String::from_utf8_lossy(&svc.stdout).trim().to_string();
    assert!(!vip.is_empty(), "{}", text(&svc));
    let script = format!("exec 3<>/dev/tcp/{vip}/80; timeout 3 cat <&3");
    let start = Instant::now();
    let answer = loop {
        let out = sb.kubectl(&[
            "-n", "tour", "exec", "custom-a", "--", "bash", "-c", &script,
        ]);
        let answer = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if answer.starts_with("web-") {
            break answer;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "ClusterIP {vip}: {}",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        tour_pods
            .iter()
            .any(|p| p["metadata"]["name"] == answer.as_str()),
        "{answer} is not a pod of the Deployment"
    );

    let matrix = sb.sandbox(&["matrix", "--json"]);
    assert!(matrix.status.success(), "matrix: {}", text(&matrix));
    let report: Value = serde_json::from_slice(&matrix.stdout).unwrap();
    assert_eq!(report["mismatches"], 0);
    // 8 pods (private-a is left out) x 8 x 2 ports x 2 protocols
    assert_eq!(
        report["probes"].as_array().unwrap().len(),
        256,
        "{}",
        report["left_out"]
    );
    let denied = report["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["observed"] == false)
        .count();
    assert!(denied > 0, "the policies deny something");
    sb.down_and_check(&record);
}
