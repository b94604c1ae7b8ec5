//! The supervisor: the background process that runs the sandbox (see the module docs
//! of [`super`]). Started by `up` as `kube-ovn-sandbox supervise`; stopped by SIGTERM.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use ovn_harness::{Cluster, Node, ProcessInfo};
use tokio::task::JoinHandle;

use super::error::SandboxError;
use super::layout::{Names, StateLayout};
use super::process::{log_tail, stop};
use super::record::SandboxRecord;
use crate::agent::{AgentConfig, NodeAgent};
use crate::controllers::run_controllers;
use crate::runtime::PodDirectory;
use kubectl_ko::target::{SandboxNode, SandboxState};

/// Where Debian's CNI plugins are (`portmap`, chained after `kube-ovn`).
pub const SYSTEM_CNI_DIR: &str = "/usr/lib/cni";
/// How long a daemon or the controller may take to come up.
const PART_READY: Duration = Duration::from_secs(60);
/// How often the node agents and the sandbox controllers make a pass.
const RESYNC: Duration = Duration::from_millis(250);
/// How often the supervisor looks for a node whose `ovs-vswitchd` has exited.
const DATAPATH_CHECK: Duration = Duration::from_secs(1);
/// How often each node's datapath flow cache is emptied (see [`keep_datapaths_up`]).
const PURGE_EVERY: Duration = Duration::from_secs(2);
/// How often the nodes' tunnel neighbour entries are set again (they last 15 minutes
/// from their last use; see [`Cluster::share_underlay_neighbours`]).
const NEIGHBOURS_EVERY: Duration = Duration::from_secs(60);
/// The pods' and `ovn0`'s MTU: the underlay's 1600 leaves room for GENEVE, and 1400
/// is what the nodes were measured with (`node-simulation.md`).
const POD_MTU: u32 = 1400;

/// How the supervisor runs.
#[derive(Debug, Clone)]
pub struct SuperviseOptions {
    /// The state directory.
    pub layout: StateLayout,
    /// How many nodes.
    pub nodes: usize,
    /// The names' prefix.
    pub prefix: String,
    /// Where `kube-ovn-controller`, `kube-ovn-daemon` and `kube-ovn` are.
    pub bin_dir: PathBuf,
}

/// A child process of the supervisor, stopped by its pid on drop.
struct Part {
    name: String,
    child: Child,
    log: PathBuf,
}

impl Part {
    fn spawn(name: &str, mut command: Command, log: &Path) -> Result<Part, SandboxError> {
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(SandboxError::io(log))?;
        let err = out.try_clone().map_err(SandboxError::io(log))?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            );
        let child = command.spawn().map_err(|source| SandboxError::Spawn {
            what: name.to_string(),
            source,
        })?;
        tracing::info!(part = name, pid = child.id(), "started");
        Ok(Part {
            name: name.to_string(),
            child,
            log: log.to_path_buf(),
        })
    }

    /// Waits until `ready` holds, failing when the process exits first.
    async fn wait_ready(&mut self, mut ready: impl FnMut() -> bool) -> Result<(), SandboxError> {
        let start = Instant::now();
        loop {
            if ready() {
                return Ok(());
            }
            let exited = matches!(self.child.try_wait(), Ok(Some(_)));
            if exited || start.elapsed() > PART_READY {
                return Err(SandboxError::NotReady {
                    what: if exited {
                        format!("{} (it exited)", self.name)
                    } else {
                        self.name.clone()
                    },
                    secs: PART_READY.as_secs(),
                    log: self.log.clone(),
                    tail: log_tail(&self.log, 20),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn info(&self, dir: &Path) -> ProcessInfo {
        ProcessInfo {
            name: self.name.clone(),
            pid: self.child.id(),
            dir: dir.to_path_buf(),
        }
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        stop(self.child.id(), Duration::from_secs(10));
        let _ = self.child.wait();
        tracing::info!(part = %self.name, "stopped");
    }
}

/// What runs while the sandbox is up. Dropped in field order: the tasks and the
/// daemons before the API server and OVN.
struct Running {
    tasks: Vec<JoinHandle<()>>,
    daemons: Vec<Part>,
    controller: Option<Part>,
    server: Option<Handle>,
    cluster: Option<Cluster>,
    names: Names,
}

impl Running {
    async fn shut_down(mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
            let _ = task.await;
        }
        let daemons = std::mem::take(&mut self.daemons);
        let controller = self.controller.take();
        let cluster = self.cluster.take();
        let pod_prefix = self.names.pod_netns_prefix();
        let server = self.server.take();
        if let Some(server) = server {
            server.shutdown().await;
        }
        // dropping the parts waits for processes: off the async workers
        let _ = tokio::task::spawn_blocking(move || {
            drop(daemons);
            drop(controller);
            remove_netns_with_prefix(&pod_prefix);
            drop(cluster);
        })
        .await;
    }
}

/// Deletes every namespace whose name starts with `prefix` (the pods' namespaces, whose
/// veths go with them).
pub(crate) fn remove_netns_with_prefix(prefix: &str) -> Vec<String> {
    let mut failed = Vec::new();
    let Ok(entries) = std::fs::read_dir("/run/netns") else {
        return failed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(prefix) {
            if let Err(e) = ovn_harness::run("ip", &["netns", "del", &name]) {
                failed.push(format!("network namespace {name}: {e}"));
            }
        }
    }
    failed
}

/// Runs the sandbox until SIGTERM or SIGINT. Any start-up failure stops what was
/// started and is returned.
pub async fn supervise(opts: SuperviseOptions) -> Result<(), SandboxError> {
    let layout = opts.layout.clone();
    let mut record = SandboxRecord {
        prefix: opts.prefix.clone(),
        nodes: opts.nodes,
        supervisor: std::process::id(),
        processes: Vec::new(),
        ready: false,
    };
    record.save(&layout.record())?;
    let mut running = Running {
        tasks: Vec::new(),
        daemons: Vec::new(),
        controller: None,
        server: None,
        cluster: None,
        names: Names::new(&opts.prefix),
    };
    let started = start(&opts, &mut running, &mut record).await;
    if let Err(err) = started {
        tracing::error!(error = %err, "start-up failed; stopping what was started");
        running.shut_down().await;
        return Err(err);
    }
    record.ready = true;
    record.save(&layout.record())?;
    tracing::info!("sandbox ready");
    keep_datapaths_up(&layout, &mut running, &mut record).await;
    tracing::info!("stopping the sandbox");
    running.shut_down().await;
    let _ = std::fs::remove_file(layout.ko_state());
    Ok(())
}

/// Until SIGTERM or SIGINT: every second, a node whose `ovs-vswitchd` has exited gets
/// it started again ([`Cluster::revive_nodes`], as a node's service manager would), and
/// the process record follows, so `down` still finds every pid; every [`PURGE_EVERY`]
/// each node's datapath flow cache is emptied ([`Cluster::purge_datapath_flows`]):
/// Debian's OVS 3.1.0 userspace datapath has been seen here to keep serving a cached
/// flow that no longer matched the OpenFlow tables after NetworkPolicy updates (a
/// connection `ovn-trace` and the tables allow, dropped), as long as traffic used it;
/// every [`NEIGHBOURS_EVERY`] each node is told the others' underlay MACs again, so an
/// idle sandbox's first packet to another node is not lost to an ARP request.
async fn keep_datapaths_up(
    layout: &StateLayout,
    running: &mut Running,
    record: &mut SandboxRecord,
) {
    let signal = kube_ovn_cmd::shutdown_signal();
    tokio::pin!(signal);
    let mut tick = tokio::time::interval(DATAPATH_CHECK);
    let mut last_purge = Instant::now();
    let mut last_neighbours = Instant::now();
    loop {
        tokio::select! {
            () = &mut signal => return,
            _ = tick.tick() => {}
        }
        let Some(cluster) = running.cluster.as_ref() else {
            continue;
        };
        if last_purge.elapsed() >= PURGE_EVERY {
            last_purge = Instant::now();
            if let Err(err) = tokio::task::block_in_place(|| cluster.purge_datapath_flows()) {
                tracing::warn!(error = %err, "datapath flow purge failed");
            }
        }
        if last_neighbours.elapsed() >= NEIGHBOURS_EVERY {
            last_neighbours = Instant::now();
            if let Err(err) = tokio::task::block_in_place(|| cluster.share_underlay_neighbours()) {
                tracing::warn!(error = %err, "renewing the tunnel neighbours failed");
            }
        }
        // a restart waits (bounded) for the bridge: off the async workers
        match tokio::task::block_in_place(|| cluster.revive_nodes()) {
            Ok(revived) if revived.is_empty() => continue,
            Ok(revived) => tracing::warn!(nodes = ?revived, "ovs-vswitchd restarted"),
            Err(err) => {
                tracing::error!(error = %err, "restarting ovs-vswitchd failed");
                continue;
            }
        }
        let mut processes = cluster.processes();
        processes.extend(running.controller.iter().map(|c| c.info(layout.dir())));
        processes.extend(running.daemons.iter().map(|d| d.info(layout.dir())));
        record.processes = processes;
        if let Err(err) = record.save(&layout.record()) {
            tracing::error!(error = %err, "the process record could not be saved");
        }
    }
}

async fn start(
    opts: &SuperviseOptions,
    running: &mut Running,
    record: &mut SandboxRecord,
) -> Result<(), SandboxError> {
    let layout = &opts.layout;
    std::fs::create_dir_all(layout.log_dir()).map_err(SandboxError::io(layout.log_dir()))?;
    let (prefix, nodes) = (opts.prefix.clone(), opts.nodes);
    tracing::info!(nodes, prefix = %prefix, "starting OVN central and the nodes");
    let cluster = tokio::task::spawn_blocking(move || Cluster::start(&prefix, nodes))
        .await
        .map_err(|e| SandboxError::Usage(format!("OVN start-up task failed: {e}")))??;
    record.processes = cluster.processes();
    record.save(&layout.record())?;
    let (nb, sb): (String, String) = (cluster.central().nb_remote(), cluster.central().sb_remote());
    running.cluster = Some(cluster);

    let directory = PodDirectory::default();
    let server = EmbeddedApiServer::start(Config {
        // the sandbox's API state lives as long as the supervisor: no journal to sync
        fsync: false,
        ..Config::default()
    })
    .await
    .map_err(|e| SandboxError::ApiServer(e.to_string()))?;
    server.set_pod_runtime(Arc::new(directory.clone()));
    server
        .write_kubeconfig(&layout.kubeconfig())
        .map_err(|e| SandboxError::ApiServer(e.to_string()))?;
    running.server = Some(server);
    let client = super::apply::client(&layout.kubeconfig()).await?;
    install_crds(&client).await?;

    let controller = start_controller(opts, &nb, &sb)?;
    record.processes.push(controller.info(layout.dir()));
    running.controller = Some(controller);
    record.save(&layout.record())?;

    let cluster = running.cluster.as_ref().expect("set above");
    let mut ko_nodes = Vec::new();
    for node in cluster.nodes() {
        let daemon = start_daemon(opts, node, &sb).await?;
        record.processes.push(daemon.info(layout.dir()));
        running.daemons.push(daemon);
        record.save(&layout.record())?;
        let agent = NodeAgent::new(client.clone(), agent_config(opts, node), directory.clone())?;
        agent.register_node().await?;
        running.tasks.push(tokio::spawn(agent.run()));
        ko_nodes.push(SandboxNode {
            name: node.name().to_string(),
            netns: node.netns().name().to_string(),
            ovs_remote: node.chassis().ovs_remote(),
            ctl_dir: node.chassis().dir().to_path_buf(),
        });
    }
    running
        .tasks
        .push(tokio::spawn(run_controllers(client.clone(), RESYNC)));
    wait_default_subnet(&client, running.controller.as_mut().expect("set above")).await?;
    let cluster = running.cluster.as_ref().expect("set above");
    for (node, daemon) in cluster.nodes().iter().zip(running.daemons.iter_mut()) {
        wait_ovn0_plugged(node, daemon).await?;
    }
    SandboxState {
        nb_remote: nb,
        sb_remote: sb,
        kubeconfig: layout.kubeconfig(),
        nodes: ko_nodes,
    }
    .save(layout.dir())?;
    Ok(())
}

async fn install_crds(client: &kube::Client) -> Result<(), SandboxError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in kube_ovn_api::crd::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        match api.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(SandboxError::api(format!("creating CRD {name}"))(e)),
        }
    }
    Ok(())
}

fn start_controller(opts: &SuperviseOptions, nb: &str, sb: &str) -> Result<Part, SandboxError> {
    let layout = &opts.layout;
    let mut cmd = Command::new(opts.bin_dir.join("kube-ovn-controller"));
    cmd.arg(format!("--kubeconfig={}", layout.kubeconfig().display()))
        .arg(format!("--ovn-nb-addr={nb}"))
        .arg(format!("--ovn-sb-addr={sb}"))
        .env("POD_NAMESPACE", "kube-system")
        .env("POD_NAME", format!("{}controller", opts.prefix));
    let log = layout.log_dir().join("kube-ovn-controller.log");
    Part::spawn("kube-ovn-controller", cmd, &log)
}

/// The node's daemon. It runs in the host namespace, where the API server's
/// 127.0.0.1 is, and works in the node's namespace through `--host-netns` (a node
/// namespace cannot reach the host's loopback); it reaches the node's OVS through
/// the socket file. It keeps the node bootstrapped (`ovn0` on the join network with
/// routes to every subnet and the service range) with `br-phy`, which carries the
/// node's underlay address, as its tunnel interface.
async fn start_daemon(
    opts: &SuperviseOptions,
    node: &Node,
    sb: &str,
) -> Result<Part, SandboxError> {
    let layout = &opts.layout;
    let name = node.name();
    let bin = layout.cni_bin_dir(name);
    std::fs::create_dir_all(&bin).map_err(SandboxError::io(&bin))?;
    // the CNI binary installed per node, as the DaemonSet's init container copies it
    let cni = bin.join("kube-ovn");
    std::fs::copy(opts.bin_dir.join("kube-ovn"), &cni).map_err(SandboxError::io(&cni))?;
    let socket = layout.daemon_socket(name);
    let conf_dir = layout.cni_conf_dir(name);
    let mut cmd = Command::new(opts.bin_dir.join("kube-ovn-daemon"));
    cmd.arg(format!("--kubeconfig={}", layout.kubeconfig().display()))
        .arg(format!("--bind-socket={}", socket.display()))
        .arg(format!("--ovs-socket={}", node.chassis().ovs_remote()))
        .arg(format!(
            "--host-netns={}",
            crate::netns::netns_path(node.netns().name()).display()
        ))
        .arg(format!("--iface={}", ovn_harness::UNDERLAY_BRIDGE))
        .arg(format!("--ovn-remote={sb}"))
        .arg(format!("--mtu={POD_MTU}"))
        .arg("--install-cni-config")
        .arg(format!("--cni-conf-dir={}", conf_dir.display()))
        .env("KUBE_NODE_NAME", name);
    let log = layout.log_dir().join(format!("kube-ovn-daemon-{name}.log"));
    let mut part = Part::spawn(&format!("kube-ovn-daemon {name}"), cmd, &log)?;
    let conflist = conf_dir.join(kube_ovn_daemon::cniconf::DEFAULT_CONF_NAME);
    part.wait_ready(|| socket.exists() && conflist.exists())
        .await?;
    Ok(part)
}

/// A node is ready for its pods once its daemon has plugged `ovn0` into `br-int` and
/// ovn-controller has installed it: before that the node cannot reach its pods (kubelet's
/// probes) and `kubectl ko diagnose` reports the port missing.
async fn wait_ovn0_plugged(node: &Node, daemon: &mut Part) -> Result<(), SandboxError> {
    let port = kube_ovn_api::naming::node_port_name(node.name());
    let iface_id = format!("external_ids:iface-id={port}");
    daemon
        .wait_ready(|| {
            let found = node.chassis().vsctl(&[
                "--bare",
                "--columns=name",
                "find",
                "Interface",
                &iface_id,
                "external_ids:ovn-installed=true",
            ]);
            found.is_ok_and(|names| !names.trim().is_empty())
        })
        .await
}

fn agent_config(opts: &SuperviseOptions, node: &Node) -> AgentConfig {
    let layout = &opts.layout;
    let name = node.name();
    AgentConfig {
        node: name.to_string(),
        host_ip: node.underlay_ip().to_string(),
        conflist: layout
            .cni_conf_dir(name)
            .join(kube_ovn_daemon::cniconf::DEFAULT_CONF_NAME),
        plugin_dirs: vec![layout.cni_bin_dir(name), PathBuf::from(SYSTEM_CNI_DIR)],
        cache_dir: layout.node_dir(name).join("cni-cache"),
        node_netns: Some(crate::netns::netns_path(node.netns().name())),
        netns_prefix: Names::new(&opts.prefix).pod_netns_prefix(),
        resync: RESYNC,
    }
}

/// The controller's default subnet, created at its start-up: pods applied before it
/// exists would wait on it anyway, and `up` reports readiness only once it does.
async fn wait_default_subnet(
    client: &kube::Client,
    controller: &mut Part,
) -> Result<(), SandboxError> {
    let api: Api<kube_ovn_api::crd::Subnet> = Api::all(client.clone());
    let start = Instant::now();
    loop {
        if let Ok(Some(subnet)) = api.get_opt("ovn-default").await {
            if subnet.status.is_some() {
                return Ok(());
            }
        }
        let exited = matches!(controller.child.try_wait(), Ok(Some(_)));
        if exited || start.elapsed() > PART_READY {
            return Err(SandboxError::NotReady {
                what: "kube-ovn-controller (the ovn-default subnet)".into(),
                secs: PART_READY.as_secs(),
                log: controller.log.clone(),
                tail: log_tail(&controller.log, 20),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
