//! Drop-in `ovn-nbctl` for the common commands; see `kube_ovn_examples::nbctl`.

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("OVN_NBCTL_LOG"))
        .init();
    kube_ovn_examples::dbctl::main(&kube_ovn_examples::nbctl::TOOL)
}
