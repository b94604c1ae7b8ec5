//! What both modes share: a real NB `ovsdb-server` (ovn-harness), the embedded API
//! server with Kube-OVN's CRDs, namespaces each bound to its own Subnet, and the real
//! `kube-ovn-controller` binary as a child process whose memory and CPU time are read
//! from `/proc`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime};

use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::Client;
use kube_ovn_api::annotations::NamespaceAnnotations;
use kube_ovn_api::crd::{Subnet, SubnetSpec};
use ovn_harness::{Db, OvsdbServer};

/// Creates or deletes in flight at once against the API server.
pub const IN_FLIGHT: usize = 64;
/// How long any one wait may take before the bench gives up.
pub const DEADLINE: Duration = Duration::from_secs(1800);

/// Namespace `i`.
pub fn ns_name(i: usize) -> String {
    format!("bench-{i}")
}

/// The Subnet bound to namespace `i`.
pub fn subnet_name(i: usize) -> String {
    format!("bench-net-{i}")
}

/// Subnet `i`'s CIDR: `10.(100+i).0.0/16` (room for 65,533 pods per subnet).
pub fn subnet_base(i: usize) -> [u8; 4] {
    assert!(i < 150, "at most 150 subnets");
    [10, 100 + i as u8, 0, 0]
}

/// The NB server and the API server (with the CRDs and a kubeconfig).
pub struct Cluster {
    pub nb: OvsdbServer,
    _api: Handle,
    pub client: Client,
    _dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

impl Cluster {
    pub async fn start() -> Cluster {
        let nb = OvsdbServer::start(Db::Northbound).expect("NB ovsdb-server");
        let api = EmbeddedApiServer::start(Config::default())
            .await
            .expect("the embedded API server");
        let client = api.kube_client().expect("a client");
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for crd in kube_ovn_api::crd::crds() {
            crds.create(&PostParams::default(), &crd)
                .await
                .expect("CRD");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let kubeconfig = dir.path().join("kubeconfig");
        api.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Cluster {
            nb,
            _api: api,
            client,
            _dir: dir,
            kubeconfig,
        }
    }

    /// `kube-ovn-controller`'s flags for this cluster (no SB: node chassis are not
    /// what is measured; the controller logs that it does without).
    pub fn controller_args(&self) -> Vec<String> {
        vec![
            format!("--ovn-nb-addr={}", self.nb.unix_remote()),
            format!("--kubeconfig={}", self.kubeconfig.display()),
        ]
    }

    /// `n` namespaces, each named in the `namespaces` of its own Subnet.
    pub async fn bound_namespaces(&self, n: usize) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let subnets: Api<Subnet> = Api::all(self.client.clone());
        for i in 0..n {
            let ns = Namespace {
                metadata: ObjectMeta {
                    name: Some(ns_name(i)),
                    ..Default::default()
                },
                ..Default::default()
            };
            namespaces
                .create(&PostParams::default(), &ns)
                .await
                .unwrap();
            let [a, b, _, _] = subnet_base(i);
            let subnet = Subnet::new(
                &subnet_name(i),
                SubnetSpec {
                    cidr_block: Some(format!("{a}.{b}.0.0/16")),
                    namespaces: vec![ns_name(i)],
                    ..Default::default()
                },
            );
            subnets
                .create(&PostParams::default(), &subnet)
                .await
                .unwrap();
        }
    }

    /// Waits until the Subnet reconciler has bound all `n` namespaces.
    pub async fn wait_bound(&self, n: usize, controller: &mut Controller) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let start = Instant::now();
        loop {
            let list = namespaces.list(&ListParams::default()).await.unwrap();
            let bound = list
                .items
                .iter()
                .filter(|ns| {
                    let name = ns.metadata.name.as_deref().unwrap_or("");
                    let Some(i) = name.strip_prefix("bench-").and_then(|i| i.parse().ok()) else {
                        return false;
                    };
                    let map = ns.metadata.annotations.clone().unwrap_or_default();
                    let bound = NamespaceAnnotations::parse_lenient(&map).0.logical_switch;
                    bound.is_some_and(|names| names.0.contains(&subnet_name(i)))
                })
                .count();
            if bound >= n {
                return;
            }
            controller.assert_alive();
            assert!(
                start.elapsed() < DEADLINE,
                "only {bound} of {n} namespaces bound"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Runs `f(i)` for `0..n`, [`IN_FLIGHT`] at a time.
pub async fn for_each<F, Fut>(n: usize, f: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    futures::stream::iter(0..n)
        .map(f)
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
}

/// The newest modification time of the files under `dir`.
fn newest(dir: &Path) -> SystemTime {
    let mut latest = SystemTime::UNIX_EPOCH;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return latest;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let time = if path.is_dir() {
            newest(&path)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(latest)
        };
        latest = latest.max(time);
    }
    latest
}

/// The `kube-ovn-controller` binary of this workspace in release, beside this bench
/// (`KUBE_OVN_CONTROLLER` names another). It cannot be built from here (`cargo bench`
/// holds the target directory's lock while the bench runs), so it must be built first
/// and be newer than the sources it is made of.
pub fn controller_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("KUBE_OVN_CONTROLLER") {
        return PathBuf::from(path);
    }
    // target/release/deps/controller-HASH -> target/release
    let exe = std::env::current_exe().expect("own path");
    let binary = exe
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .join("kube-ovn-controller");
    let build = "cargo build --release -p kube-ovn-controller --bin kube-ovn-controller";
    let built = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("no {}: run `{build}` first", binary.display()));
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace");
    for krate in ["kube-ovn", "ovsdb", "ovn-nb", "ovn-sb", "ipam"] {
        let sources = workspace.join(krate).join("src");
        assert!(
            newest(&sources) <= built,
            "{} is older than {}: run `{build}` first",
            binary.display(),
            sources.display()
        );
    }
    binary
}

/// The controller process, its output in a log file.
pub struct Controller {
    child: Child,
    pub log: PathBuf,
    /// When it was spawned (wall clock, to place its log lines).
    pub spawned: SystemTime,
    pub spawned_at: Instant,
}

impl Controller {
    /// Starts it with its log in `log_dir()/<name>.log`.
    pub fn start(binary: &Path, args: &[String], name: &str) -> Controller {
        let log = log_dir().join(format!("{name}.log"));
        let out = File::create(&log).expect("log file");
        let spawned = SystemTime::now();
        let spawned_at = Instant::now();
        let child = Command::new(binary)
            .args(args)
            .env(
                "RUST_LOG",
                std::env::var("CONTROLLER_BENCH_LOG").unwrap_or_else(|_| "info".into()),
            )
            .env("POD_NAME", "kube-ovn-controller-bench")
            .env("POD_NAMESPACE", "kube-system")
            .stdout(out.try_clone().expect("log file"))
            .stderr(out)
            .spawn()
            .expect("start kube-ovn-controller");
        Controller {
            child,
            log,
            spawned,
            spawned_at,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails with the log's tail if the process has exited.
    pub fn assert_alive(&mut self) {
        if let Some(status) = self.child.try_wait().expect("wait") {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: String = log.lines().rev().take(40).collect::<Vec<_>>().join("\n");
            panic!("the controller exited ({status}); last lines, newest first:\n{tail}");
        }
    }

    /// SIGKILL, then reaped.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Its log lines with their offset from the spawn.
    pub fn log_lines(&self) -> Vec<(Duration, String)> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let spawned = Timestamp::try_from(self.spawned).expect("a timestamp");
        text.lines()
            .filter_map(|line| {
                let stamp: Timestamp = line.split_whitespace().next()?.parse().ok()?;
                let offset = stamp.duration_since(spawned);
                let offset = Duration::try_from(offset).unwrap_or_default();
                Some((offset, line.to_owned()))
            })
            .collect()
    }

    /// Offset of the first log line containing every one of `needles`.
    pub fn first_log(&self, needles: &[&str]) -> Option<Duration> {
        self.log_lines()
            .into_iter()
            .find(|(_, line)| needles.iter().all(|n| line.contains(n)))
            .map(|(at, _)| at)
    }
}

/// Where the controllers' logs stay after the run (`target/tmp/controller-bench`).
pub fn log_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("controller-bench");
    std::fs::create_dir_all(&dir).expect("log dir");
    dir
}

/// Resident and peak memory of a process, KiB (`VmRSS`, `VmHWM`).
pub fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// CPU time (user + system) a process has used.
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // fields after the command, which is in parentheses and may hold spaces
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|v| v.parse::<u64>().ok()))
        .sum();
    // USER_HZ is 100 on Linux
    Duration::from_millis(ticks * 10)
}

/// This process's CPU time.
pub fn own_cpu_time() -> Duration {
    cpu_time(std::process::id())
}

/// The machine's load average line.
pub fn uptime() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}
