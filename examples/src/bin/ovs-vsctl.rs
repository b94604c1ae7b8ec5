//! Drop-in `ovs-vsctl` (always `--no-wait`) for the common commands; see
//! `kube_ovn_examples::vsctl`.

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("OVS_VSCTL_LOG"))
        .init();
    kube_ovn_examples::dbctl::main(&kube_ovn_examples::vsctl::TOOL)
}
