//! `kube-ovn-daemon` (the `cni-server` container of Kube-OVN's `kube-ovn-cni`
//! DaemonSet): serves CNI ADD/DEL/CHECK/GC to the `kube-ovn` CNI binary on
//! `--bind-socket`, removes stale pod ports every minute, keeps the pods' QoS as their
//! annotations say (the QoS loop), and installs the conflist with
//! `--install-cni-config`; runs until SIGINT/SIGTERM. The node bootstrap (`br-int`,
//! `ovn0`) is in `kube_ovn::daemon::ensure`, not started by this binary yet.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use kube_ovn::daemon::flags::DaemonFlags;
use kube_ovn::daemon::{
    cniconf, keep_collecting, qos, server, CniDaemon, CniSettings, HostNamespace, GC_PERIOD,
    INTEGRATION_BRIDGE,
};
use kube_ovn::kube_client::kube_client;
use ovs_vsctl::{Bridge, VsClient};

/// How often the QoS loop retries pods not plugged yet or whose QoS failed.
const QOS_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let flags = DaemonFlags::parse();
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
    let client = kube_client(flags.kubeconfig.as_deref()).await?;
    let remote = flags.ovs_remote();
    let vs = VsClient::connect(&remote)
        .await
        .with_context(|| format!("connecting to Open_vSwitch at {remote}"))?;
    // the userspace datapath needs the pods' TX checksum offload off
    let userspace = vs
        .store()
        .by_name::<Bridge>(INTEGRATION_BRIDGE)
        .context("reading br-int")?
        .first()
        .is_some_and(|br| br.datapath_type == "netdev");
    let mut settings = CniSettings::new(&flags.node_name);
    settings.mtu = flags.mtu;
    settings.userspace_datapath = userspace;
    if let Some(path) = &flags.host_netns {
        settings.host_netns = HostNamespace::Path(path.clone());
    }
    // the QoS loop's own connection: it reads the replica while ADDs write through theirs
    let qos_vs = VsClient::connect(&remote)
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
        shutdown_signal().await;
        let _ = stop.send(true);
    };
    tokio::join!(
        signal,
        keep_collecting(daemon, GC_PERIOD, until_stopped()),
        qos::watch::run(
            client,
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

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
