//! `up`: check the input, start the supervisor (unless one runs), wait for it, apply
//! the manifests and wait for their pods.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;

use super::apply::{apply_manifests, client, load_manifests, wait_pods_running};
use super::error::SandboxError;
use super::layout::{Names, StateLayout};
use super::process::{alive, cmdline, log_tail};
use super::record::SandboxRecord;
use super::MAX_NODES;

/// How long the supervisor may take to start everything (OVN, nodes, API server,
/// controller, daemons) on a busy machine.
const START_TIMEOUT: Duration = Duration::from_secs(300);

/// What `up` is asked to do.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// The state directory.
    pub layout: StateLayout,
    /// How many nodes.
    pub nodes: usize,
    /// The prefix of the namespaces it creates.
    pub prefix: String,
    /// Manifest files or directories.
    pub manifests: Vec<PathBuf>,
    /// Where the sandbox's binaries are (`kube-ovn-sandbox` itself, the controller,
    /// the daemon, the CNI binary).
    pub bin_dir: PathBuf,
    /// How long to wait for pods to be Running.
    pub pod_timeout: Duration,
}

/// What `up` found and did.
#[derive(Debug)]
pub struct UpOutcome {
    /// False when a running sandbox was found (the manifests were applied to it).
    pub started: bool,
    /// Its supervisor.
    pub supervisor: u32,
    /// Its record.
    pub record: SandboxRecord,
    /// Every pod, all Running.
    pub pods: Vec<Pod>,
}

/// Brings the sandbox up (or finds it up), applies the manifests and waits for every
/// pod to be Running.
pub async fn up(opts: UpOptions) -> Result<UpOutcome, SandboxError> {
    if opts.nodes == 0 || opts.nodes > MAX_NODES {
        return Err(SandboxError::NodeCount {
            given: opts.nodes,
            max: MAX_NODES,
        });
    }
    if opts.prefix.is_empty() || opts.prefix.len() > 10 {
        return Err(SandboxError::Usage(format!(
            "--prefix must be 1 to 10 characters (it starts namespace and chassis names), not {:?}",
            opts.prefix
        )));
    }
    if !nix::unistd::geteuid().is_root() {
        return Err(SandboxError::Usage(
            "up must run as root: it creates network namespaces and runs OVS".into(),
        ));
    }
    // a bad manifest fails before anything starts
    let manifests = load_manifests(&opts.manifests)?;
    let layout = &opts.layout;
    std::fs::create_dir_all(layout.dir()).map_err(SandboxError::io(layout.dir()))?;
    let (started, record) = match running_record(layout)? {
        Some(record) => {
            tracing::info!(
                supervisor = record.supervisor,
                "a sandbox is already running here"
            );
            let record = wait_ready(layout, None).await?.unwrap_or(record);
            (false, record)
        }
        None => {
            if SandboxRecord::load(&layout.record())?.is_some() {
                tracing::warn!("a previous sandbox here is not running: cleaning up after it");
                super::down::down(layout)?;
                std::fs::create_dir_all(layout.dir()).map_err(SandboxError::io(layout.dir()))?;
            }
            check_names_free(&opts)?;
            let record = start_supervisor(&opts).await?;
            (true, record)
        }
    };
    let client = client(&layout.kubeconfig()).await?;
    apply_manifests(&client, &manifests).await?;
    let pods = wait_pods_running(&client, opts.pod_timeout).await?;
    Ok(UpOutcome {
        started,
        supervisor: record.supervisor,
        record,
        pods,
    })
}

/// The record of a sandbox whose supervisor still runs.
pub(crate) fn running_record(layout: &StateLayout) -> Result<Option<SandboxRecord>, SandboxError> {
    Ok(SandboxRecord::load(&layout.record())?.filter(|r| is_supervisor(r.supervisor, layout)))
}

/// True when `pid` is a supervisor of this state directory (not a reused pid).
pub(crate) fn is_supervisor(pid: u32, layout: &StateLayout) -> bool {
    let line = cmdline(pid);
    alive(pid) && line.contains(" supervise ") && line.contains(&*layout.dir().to_string_lossy())
}

fn check_names_free(opts: &UpOptions) -> Result<(), SandboxError> {
    let names = Names::new(&opts.prefix);
    let mut wanted: Vec<String> = (1..=opts.nodes).map(|i| names.node(i)).collect();
    wanted.push(names.underlay());
    for netns in wanted {
        if crate::netns::netns_path(&netns).exists() {
            return Err(SandboxError::NameTaken {
                netns,
                prefix: opts.prefix.clone(),
            });
        }
    }
    Ok(())
}

async fn start_supervisor(opts: &UpOptions) -> Result<SandboxRecord, SandboxError> {
    let layout = &opts.layout;
    let log = layout.supervisor_log();
    let out = File::create(&log).map_err(SandboxError::io(&log))?;
    let err = out.try_clone().map_err(SandboxError::io(&log))?;
    let exe = opts.bin_dir.join("kube-ovn-sandbox");
    let mut cmd = Command::new(&exe);
    cmd.arg("supervise")
        .arg("--state-dir")
        .arg(layout.dir())
        .arg("--nodes")
        .arg(opts.nodes.to_string())
        .arg("--prefix")
        .arg(&opts.prefix)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err))
        // its own process group: a Ctrl-C at `up`'s terminal does not reach it, and
        // `down` finds everything it started by that group
        .process_group(0);
    let child = cmd.spawn().map_err(|source| SandboxError::Spawn {
        what: exe.display().to_string(),
        source,
    })?;
    tracing::info!(pid = child.id(), "supervisor started");
    let record = wait_ready(layout, Some(child)).await?;
    record.ok_or_else(|| SandboxError::Supervisor {
        what: "exited".into(),
        log: log.clone(),
        tail: log_tail(&log, 30),
    })
}

/// Waits until the record says ready. With `child`, fails as soon as it exits.
async fn wait_ready(
    layout: &StateLayout,
    mut child: Option<std::process::Child>,
) -> Result<Option<SandboxRecord>, SandboxError> {
    let log = layout.supervisor_log();
    let fail = |what: String| SandboxError::Supervisor {
        what,
        log: log.clone(),
        tail: log_tail(&log, 30),
    };
    let start = Instant::now();
    loop {
        if let Some(child) = child.as_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(fail(format!("exited during start-up ({status})")));
            }
        }
        match SandboxRecord::load(&layout.record())? {
            Some(r) if r.ready => return Ok(Some(r)),
            Some(r) if child.is_none() && !alive(r.supervisor) => {
                return Err(fail("exited during start-up".into()))
            }
            _ => {}
        }
        if start.elapsed() > START_TIMEOUT {
            return Err(fail(format!(
                "was not ready within {}s (it keeps running: `kube-ovn-sandbox down` stops it)",
                START_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
