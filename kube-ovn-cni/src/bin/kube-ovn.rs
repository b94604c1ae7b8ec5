//! `kube-ovn`: the CNI binary installed into `/opt/cni/bin`. It asks the node's
//! `kube-ovn-daemon` over its unix socket (the conflist's `server_socket`) and prints the
//! CNI result; see `kube_ovn_cni`.

use std::process::ExitCode;

use kube_ovn_cni::KubeOvnPlugin;

fn main() -> ExitCode {
    cni_spec::plugin::run(&KubeOvnPlugin::default())
}
