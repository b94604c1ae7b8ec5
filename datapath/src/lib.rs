//! Pod network interfaces over netlink, the way a CNI plugin builds them.
//!
//! A pod gets one end of a veth pair. The other end stays on the host,
//! where the node's switch (OVS `br-int` for Kube-OVN, or a Linux bridge)
//! picks it up. This crate does the Linux side of CNI ADD, CHECK and DEL:
//!
//! * [`setup`]: create the pair (`<id>_h` / `<id>_c`), move `<id>_c` into
//!   the pod's namespace and rename it (`eth0`), set MTU, MACs, txqueuelen,
//!   sysctls, addresses, routes, TX checksum offload, IPv4 ARP
//!   announce/probe, IPv6 DAD, and check that the gateway answers.
//! * [`check`]: read links, addresses and routes back and list what differs.
//! * [`teardown`]: delete the host end (the pair goes with it); the pod's
//!   namespace may be empty or gone, and every failure is reported.
//!
//! Each has a blocking twin in [`blocking`] for synchronous CNI binaries.
//!
//! # Namespaces and threads
//!
//! `setns(2)` moves one thread, and a netlink socket stays in the namespace
//! it was opened in. Every call therefore runs on its own short-lived OS
//! thread that opens a host socket, enters the pod's namespace, opens a pod
//! socket and exits when done (see `worker.rs`). A tokio worker thread never
//! changes namespace, not even when the job panics.
//!
//! # Errors
//!
//! [`Error::Step`] names the [`Step`], the interface, the namespace and the
//! kernel's errno. After the pair exists, a failing [`setup`] deletes it
//! again before returning the error.
//!
//! ```no_run
//! # async fn demo() -> Result<(), datapath::Error> {
//! use datapath::PodInterface;
//! let mut pod = PodInterface::new("8c1d0f6e2b7a4c3d", "/var/run/netns/pod1", "eth0")?;
//! pod.mtu = Some(1400);
//! pod.container.addresses = vec!["10.16.0.5/16".parse().unwrap()];
//! pod.container.gateways = vec!["10.16.0.1".parse().unwrap()];
//! let report = datapath::setup(&pod).await?;
//! assert!(datapath::check(&pod).await?.is_ok());
//! datapath::teardown(&pod).await?;
//! # let _ = report; Ok(()) }
//! ```

mod arp;
mod check;
mod error;
mod gateway;
mod nl;
mod probe;
mod route;
mod setup;
mod spec;
mod sys;
mod sysctl;
mod teardown;
mod worker;

pub use arp::{ArpOp, ArpPacket, ARP_LEN};
pub use check::{CheckReport, Difference, InterfaceState, LinkState};
pub use error::{Cause, Error, SpecError, Step};
pub use route::{default_route, MAIN_TABLE};
pub use setup::SetupReport;
pub use spec::{
    veth_names, ContainerEnd, GatewayCheck, HostEnd, Ipv4Dad, Ipv6Dad, MacAddr, PodInterface,
    RouteSpec, MAX_IFNAME_LEN,
};
pub use sysctl::POD_SYSCTLS;
pub use teardown::TeardownReport;
pub use worker::HOST_NAMESPACE;

fn label(pod: &PodInterface) -> String {
    pod.container.netns.display().to_string()
}

/// CNI ADD: build the pod interface described by `pod`.
pub async fn setup(pod: &PodInterface) -> Result<SetupReport, Error> {
    pod.validate()?;
    let pod = pod.clone();
    worker::run(label(&pod), move || setup::run(pod)).await
}

/// CNI CHECK: compare the system with `pod`.
pub async fn check(pod: &PodInterface) -> Result<CheckReport, Error> {
    pod.validate()?;
    let pod = pod.clone();
    worker::run(label(&pod), move || check::run(pod)).await
}

/// CNI DEL: remove the pair; succeeds when there is nothing to remove.
///
/// Only the host side is touched, so `pod.container.netns` may be empty or
/// name a namespace that is gone. A failing step does not stop the next
/// one; [`Error::Teardown`] then lists every failure.
pub async fn teardown(pod: &PodInterface) -> Result<TeardownReport, Error> {
    pod.validate_for_teardown()?;
    let pod = pod.clone();
    worker::run(HOST_NAMESPACE.into(), move || teardown::run(pod)).await
}

/// The gateway check alone: resolve each of `gateways` from `ifname` inside `netns`
/// (the interface already configured, e.g. by [`setup`] without a gateway check), up to
/// `check.attempts` times; [`Error::GatewayUnreachable`] names the one that never answered.
pub async fn check_gateways(
    netns: &std::path::Path,
    ifname: &str,
    addresses: &[ipnet::IpNet],
    gateways: &[std::net::IpAddr],
    check: GatewayCheck,
) -> Result<Vec<(std::net::IpAddr, MacAddr)>, Error> {
    spec::validate_ifname(ifname)?;
    let (netns, ifname) = (netns.to_path_buf(), ifname.to_string());
    let (addresses, gateways) = (addresses.to_vec(), gateways.to_vec());
    let label = netns.display().to_string();
    worker::run(label, move || {
        gateway::run(netns, ifname, addresses, gateways, check)
    })
    .await
}

/// Delete one host link by name (`ip link del NAME`); `Ok(false)` when it
/// does not exist. Used for garbage-collecting stale host ends.
pub async fn delete_host_link(name: &str) -> Result<bool, Error> {
    spec::validate_ifname(name)?;
    let name = name.to_string();
    worker::run(HOST_NAMESPACE.into(), move || teardown::delete_link(name)).await
}

/// Blocking versions for synchronous callers. Do not call them from inside
/// an async task; use the async functions there.
pub mod blocking {
    use super::*;

    /// Blocking [`crate::setup`].
    pub fn setup(pod: &PodInterface) -> Result<SetupReport, Error> {
        pod.validate()?;
        let pod = pod.clone();
        worker::run_blocking(label(&pod), move || setup::run(pod))
    }

    /// Blocking [`crate::check`].
    pub fn check(pod: &PodInterface) -> Result<CheckReport, Error> {
        pod.validate()?;
        let pod = pod.clone();
        worker::run_blocking(label(&pod), move || check::run(pod))
    }

    /// Blocking [`crate::teardown`].
    pub fn teardown(pod: &PodInterface) -> Result<TeardownReport, Error> {
        pod.validate_for_teardown()?;
        let pod = pod.clone();
        worker::run_blocking(HOST_NAMESPACE.into(), move || teardown::run(pod))
    }
}
