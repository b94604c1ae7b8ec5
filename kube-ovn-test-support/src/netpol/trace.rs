//! `ovn-trace` on the real Southbound: one process per packet (the 23.03 daemon mode
//! takes no `--ct`), a few at a time. A new connection is modelled with `--ct=new`
//! for every conntrack stage a packet may cross (source switch in and out,
//! destination switch in and out); a delivered packet ends in `output("<port>")`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use kube_ovn_api::naming::{pod_port_name, OVN_PROVIDER};

use super::eval::{PodInfo, Protocol};
use super::layout::{ip4, pod_mac, router_mac, switch};

/// One packet to trace.
#[derive(Debug, Clone)]
pub struct Probe {
    pub src: usize,
    pub dst: usize,
    pub port: u16,
    pub proto: Protocol,
}

/// The microflow of `src` opening a connection to `dst`.
pub fn microflow(src: &PodInfo, dst: &PodInfo, port: u16, proto: Protocol) -> String {
    let inport = pod_port_name(&src.namespace, &src.name, OVN_PROVIDER);
    let eth_dst = if src.namespace == dst.namespace {
        pod_mac(&dst.namespace, &dst.name)
    } else {
        router_mac(&src.namespace)
    };
    format!(
        "inport == \"{inport}\" && eth.src == {} && eth.dst == {eth_dst} && ip4.src == {} && ip4.dst == {} && ip.ttl == 64 && {}.dst == {port}",
        pod_mac(&src.namespace, &src.name),
        ip4(src),
        ip4(dst),
        proto.to_string().to_lowercase()
    )
}

/// Whether each probe was delivered, in probe order.
pub fn run(sb: &str, pods: &[PodInfo], probes: &[Probe], workers: usize) -> Vec<bool> {
    let db = format!("--db={sb}");
    let next = AtomicUsize::new(0);
    let results = Mutex::new(vec![false; probes.len()]);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = probes.get(i) else { break };
                let (src, dst) = (&pods[p.src], &pods[p.dst]);
                let flow = microflow(src, dst, p.port, p.proto);
                let datapath = switch(&src.namespace);
                let args = [
                    db.as_str(),
                    "--ct=new",
                    "--ct=new",
                    "--ct=new",
                    "--ct=new",
                    "--minimal",
                    datapath.as_str(),
                    flow.as_str(),
                ];
                let out = ovn_harness::run("ovn-trace", &args).expect("ovn-trace");
                let port = pod_port_name(&dst.namespace, &dst.name, OVN_PROVIDER);
                let delivered = out.contains(&format!("output(\"{port}\")"));
                results.lock().expect("results")[i] = delivered;
            });
        }
    });
    results.into_inner().expect("results")
}
