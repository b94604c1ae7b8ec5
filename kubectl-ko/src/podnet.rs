//! `kubectl ko get-pod-network NAMESPACE/POD`: the pod's annotations, its logical switch
//! port (NB addresses, SB binding), its OVS interface on the node (`ovn-installed`), and
//! the addresses and routes inside its network namespace (`external_ids:pod_netns`).

use ovn_nb::LogicalSwitchPort;

use kube_ovn_api::annotations::{PodNetwork, Provider};
use kube_ovn_api::naming::{pod_port_name, OVN_PROVIDER};

use super::run::capture;
use super::target::Invocation;
use super::{dbs, get_pod, split_pod, Ko, KoError};

/// The report.
pub async fn get_pod_network(ko: &Ko, pod_arg: &str) -> Result<String, KoError> {
    let (namespace, name) = split_pod(pod_arg)?;
    let state = ko.require_sandbox("get-pod-network")?;
    let client = ko.client().await?;
    let pod = get_pod(&client, &namespace, &name).await?;
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let net = PodNetwork::parse(&Provider::ovn(), &annotations).map_err(|e| {
        KoError::PodNotAllocated {
            pod: pod_arg.to_string(),
            reason: e.to_string(),
        }
    })?;
    let mut out = format!("pod {namespace}/{name}\nannotations:\n");
    for (k, v) in annotations
        .iter()
        .filter(|(k, _)| k.starts_with("ovn.kubernetes.io/"))
    {
        out.push_str(&format!("  {k}={v}\n"));
    }
    let port = pod_port_name(&namespace, &name, OVN_PROVIDER);
    let nb = dbs::nb(&state.nb_remote).await?;
    match nb.by_name::<LogicalSwitchPort>(&port).ok().flatten() {
        Some(lsp) => out.push_str(&format!(
            "logical port: {port} switch {} addresses {:?} up {}\n",
            net.logical_switch.as_deref().unwrap_or("-"),
            lsp.addresses,
            lsp.up.unwrap_or(false)
        )),
        None => out.push_str(&format!("logical port: {port} NOT IN NB\n")),
    }
    let sb = dbs::sb(&state.sb_remote).await?;
    let bound = sb.bound_chassis(&port).ok().flatten();
    out.push_str(&format!(
        "bound to chassis: {}\n",
        bound.as_deref().unwrap_or("none")
    ));
    let node_name = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    let Some(node) = node_name.as_deref().and_then(|n| state.node(n).ok()) else {
        out.push_str(&format!("node: {node_name:?} is not a sandbox node\n"));
        return Ok(out);
    };
    let vs = dbs::ovs(node).await?;
    let Some(iface) = dbs::interface_of_port(&vs, &port) else {
        out.push_str(&format!(
            "ovs interface: none with iface-id {port} on {}\n",
            node.name
        ));
        return Ok(out);
    };
    out.push_str(&format!(
        "ovs interface: {} on {} ofport {} ovn-installed={}\n",
        iface.name,
        node.name,
        iface.ofport.map_or("-".to_string(), |p| p.to_string()),
        dbs::ovn_installed(&iface)
    ));
    match iface.external_ids.get("pod_netns") {
        Some(netns) => out.push_str(&netns_view(netns).await?),
        None => out.push_str("netns: the interface has no external_ids:pod_netns\n"),
    }
    Ok(out)
}

/// `ip addr` and `ip route` inside the pod's namespace (a name, or a path as the CNI
/// records it).
async fn netns_view(netns: &str) -> Result<String, KoError> {
    let path = if netns.starts_with('/') {
        netns.to_string()
    } else {
        format!("/var/run/netns/{netns}")
    };
    let mut out = format!("netns {netns}:\n");
    for (what, args) in [
        ("addresses", ["-brief", "addr", "show"]),
        ("routes", ["route", "show", ""]),
    ] {
        let mut full = vec![format!("--net={path}"), "ip".to_string()];
        full.extend(args.iter().filter(|a| !a.is_empty()).map(|a| a.to_string()));
        let inv = Invocation::Local {
            program: "nsenter".to_string(),
            args: full,
            env: Default::default(),
        };
        let text = capture(&inv, None).await?.success("nsenter ip")?.stdout;
        out.push_str(&format!("  {what}:\n"));
        for line in text.lines() {
            out.push_str(&format!("    {line}\n"));
        }
    }
    Ok(out)
}
