//! `kube-ovn-daemon` (the `cni-server` container of Kube-OVN's `kube-ovn-cni`
//! DaemonSet): serves CNI ADD/DEL/CHECK/GC to the `kube-ovn` CNI binary on
//! `--bind-socket`, removes stale pod ports every minute, keeps the pods' QoS as their
//! annotations say (the QoS loop), keeps the node bootstrapped (`Open_vSwitch`
//! external_ids, `br-int`, `ovn0` on the join network with routes to every subnet and
//! the service range) once a tunnel endpoint is known (`--iface` or `POD_IP`), keeps
//! natOutgoing subnets masqueraded, and installs the conflist with
//! `--install-cni-config`; runs until SIGINT/SIGTERM.

use std::process::ExitCode;

use anyhow::Context;
use kube_ovn_cmd::kube_client::kube_client;
use kube_ovn_daemon::flags::DaemonFlags;
use kube_ovn_daemon::node::{keep_node_converged, tunnel_overhead, NodeSettings, TunnelInterface};
use kube_ovn_daemon::{
    cniconf, keep_collecting, nat, qos, server, CniDaemon, CniSettings, DatapathType, EncapType,
    HostNamespace, HostNetwork, GC_PERIOD, INTEGRATION_BRIDGE,
};
use ovs_vsctl::{Bridge, VsClient};

/// How often the QoS loop retries pods not plugged yet or whose QoS failed.
const QOS_RETRY: std::time::Duration = std::time::Duration::from_secs(5);
/// How often the node bootstrap is checked (Kube-OVN's `loopOvn0Check` runs every 5 s).
const NODE_PERIOD: std::time::Duration = std::time::Duration::from_secs(5);
/// How often natOutgoing rules are synced with the Subnets.
const NAT_PERIOD: std::time::Duration = std::time::Duration::from_secs(5);
/// The pod MTU when no tunnel interface is known.
const FALLBACK_MTU: u32 = 1400;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let (flags, ignored) = match DaemonFlags::parse_with_ignored(std::env::args_os()) {
        Ok(parsed) => parsed,
        Err(err) => err.exit(),
    };
    for flag in &ignored {
        tracing::info!(flag = flag.name, value = %flag.value, "Kube-OVN flag not implemented here: ignored");
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("kube-ovn-daemon: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&flags)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("kube-ovn-daemon: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(flags: &DaemonFlags) -> anyhow::Result<()> {
    let encap_type = encap_type(&flags.network_type)?;
    let services = service_cidrs(&flags.service_cluster_ip_range)?;
    let client = kube_client(flags.kubeconfig.as_deref()).await?;
    let remote = flags.ovs_remote();
    let vs = VsClient::connect(&remote)
        .await
        .with_context(|| format!("connecting to Open_vSwitch at {remote}"))?;
    // the userspace datapath needs the pods' TX checksum offload off; before the
    // bootstrap made br-int, the datapath it will get
    let userspace = match vs
        .store()
        .by_name::<Bridge>(INTEGRATION_BRIDGE)
        .context("reading br-int")?
        .first()
    {
        Some(br) => br.datapath_type == "netdev",
        None => DatapathType::detect() == DatapathType::Netdev,
    };
    let host_ns = match &flags.host_netns {
        Some(path) => HostNamespace::Path(path.clone()),
        None => HostNamespace::Current,
    };
    let net = match &flags.host_netns {
        Some(path) => HostNetwork::open(path).await,
        None => HostNetwork::current(),
    }
    .context("opening netlink in the host namespace")?;
    let tunnel = tunnel_interface(flags, &net).await?;
    let mtu = match (flags.mtu, &tunnel) {
        (Some(mtu), _) => mtu,
        (None, Some((iface, ip))) => iface.mtu.saturating_sub(tunnel_overhead(encap_type, *ip)),
        (None, None) => FALLBACK_MTU,
    };
    let mut settings = CniSettings::new(&flags.node_name);
    settings.mtu = mtu;
    settings.userspace_datapath = userspace;
    settings.host_netns = host_ns.clone();
    if flags.enable_mirror {
        tracing::warn!("--enable-mirror: traffic mirroring is not implemented here; ignored");
    }
    // the QoS loop's own connection: it reads the replica while ADDs write through theirs
    let qos_vs = VsClient::connect(&remote)
        .await
        .with_context(|| format!("connecting to Open_vSwitch at {remote}"))?;
    // the bootstrap's own: its transaction waits for ovs-vswitchd to apply it
    let node_vs = VsClient::connect(&remote)
        .await
        .with_context(|| format!("connecting to Open_vSwitch at {remote}"))?;
    let daemon = CniDaemon::new(client.clone(), vs, settings);
    let api = server::serve(&flags.bind_socket, daemon.clone()).await?;
    tracing::info!(socket = %api.path().display(), node = %flags.node_name, "serving CNI requests");
    if flags.install_cni_config {
        let path = cniconf::install(
            &flags.cni_conf_dir,
            &flags.cni_conf_name,
            &flags.bind_socket,
        )?;
        tracing::info!(path = %path.display(), "CNI configuration installed");
    }
    // one signal stops both loops
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until_stopped = || {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        }
    };
    let signal = async {
        kube_ovn_cmd::shutdown_signal().await;
        let _ = stop.send(true);
    };
    let node = async {
        let Some((iface, encap_ip)) = &tunnel else {
            tracing::warn!(
                "no tunnel endpoint (give --iface or POD_IP): the node bootstrap is off"
            );
            return;
        };
        tracing::info!(iface = %iface.name, %encap_ip, mtu, "tunnel endpoint");
        let node_settings = NodeSettings {
            node_name: flags.node_name.clone(),
            ovn_remotes: flags.ovn_remotes(),
            encap_type,
            encap_ip: *encap_ip,
            encap_csum: flags.encap_checksum,
            datapath_type: DatapathType::detect(),
            mtu,
            service_cidrs: services.clone(),
            host_netns: flags
                .host_netns
                .clone()
                .unwrap_or_else(|| "/proc/self/ns/net".into()),
        };
        keep_node_converged(
            client.clone(),
            &node_vs,
            &net,
            &node_settings,
            NODE_PERIOD,
            until_stopped(),
        )
        .await
    };
    tokio::join!(
        signal,
        node,
        nat::run_loop(client.clone(), &host_ns, NAT_PERIOD, until_stopped()),
        keep_collecting(daemon, GC_PERIOD, until_stopped()),
        qos::watch::run(
            client.clone(),
            &flags.node_name,
            &qos_vs,
            QOS_RETRY,
            until_stopped()
        ),
    );
    api.stop().await;
    tracing::info!("stopped by signal");
    Ok(())
}

/// `--network-type` as the tunnel type (`vlan` nodes still tunnel their overlay
/// subnets with GENEVE, as Kube-OVN does).
fn encap_type(network_type: &str) -> anyhow::Result<EncapType> {
    match network_type {
        "geneve" | "vlan" | "" => Ok(EncapType::Geneve),
        "vxlan" => Ok(EncapType::Vxlan),
        "stt" => Ok(EncapType::Stt),
        other => anyhow::bail!("--network-type={other}: expected geneve, vxlan, stt or vlan"),
    }
}

/// The tunnel interface and endpoint: `--iface` when given, else the interface carrying
/// `POD_IP`; `None` when neither is given.
async fn tunnel_interface(
    flags: &DaemonFlags,
    net: &HostNetwork,
) -> anyhow::Result<Option<(TunnelInterface, std::net::IpAddr)>> {
    let wanted = flags.iface.as_deref().unwrap_or_default().trim();
    if !wanted.is_empty() {
        let iface = net.tunnel_interface(wanted).await?;
        let ip = match flags.pod_ip {
            Some(ip) if iface.addresses.contains(&ip) => ip,
            _ => iface.addresses[0],
        };
        return Ok(Some((iface, ip)));
    }
    match flags.pod_ip {
        Some(ip) => Ok(Some((net.interface_with(ip).await?, ip))),
        None => Ok(None),
    }
}

/// `--service-cluster-ip-range`'s CIDRs.
fn service_cidrs(text: &str) -> anyhow::Result<Vec<ipnet::IpNet>> {
    text.split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| {
            c.parse()
                .with_context(|| format!("--service-cluster-ip-range: {c:?} is not a CIDR"))
        })
        .collect()
}
