//! `kubectl ko diagnose all|subnet NAME|node NAME`: one verdict per check (OK, or FAIL
//! with the reason): the databases reachable and their leader known, ovn-northd alive,
//! every node's chassis registered and its tunnels up, `ovn0` converged, every pod's port
//! bound and `ovn-installed`, and its annotations agreeing with IPAM (its IP object)
//! and NB (its port's addresses).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::Client;
use ovn_nb::{LogicalSwitch, NbClient, NbGlobal};
use ovn_sb::{DatapathBinding, Encap, SbClient, SbGlobal};
use ovs_vsctl::{Interface, VsClient};

use kube_ovn_api::annotations::{PodNetwork, Provider};
use kube_ovn_api::crd::{Subnet, IP};
use kube_ovn_api::naming::{node_port_name, pod_port_name, OVN_PROVIDER};

use super::dbs;
use super::target::SandboxNode;
use super::{Ko, KoError};

/// What to diagnose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Everything.
    All,
    /// The databases, and the pods of one subnet.
    Subnet(String),
    /// The databases, one node and its pods.
    Node(String),
}

/// One check's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// None for OK, else why it failed.
    pub failure: Option<String>,
    /// What was seen when OK.
    pub detail: String,
}

impl Check {
    fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            failure: None,
            detail: detail.into(),
        }
    }
    fn fail(name: impl Into<String>, reason: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            failure: Some(reason.into()),
            detail: String::new(),
        }
    }
    fn from(name: &str, result: Result<String, String>) -> Check {
        match result {
            Ok(detail) => Check::ok(name, detail),
            Err(reason) => Check::fail(name, reason),
        }
    }
}

/// The report: `OK   name: detail` / `FAIL name: reason`, one per line.
pub fn render(checks: &[Check]) -> String {
    let mut out = String::new();
    for c in checks {
        match &c.failure {
            None => out.push_str(&format!("OK   {}: {}\n", c.name, c.detail)),
            Some(reason) => out.push_str(&format!("FAIL {}: {reason}\n", c.name)),
        }
    }
    let failed = checks.iter().filter(|c| c.failure.is_some()).count();
    out.push_str(&format!("{} checks, {failed} failed\n", checks.len()));
    out
}

/// Runs the checks of `scope` (sandbox mode).
pub async fn diagnose(ko: &Ko, scope: &Scope) -> Result<Vec<Check>, KoError> {
    let state = ko.require_sandbox("diagnose")?;
    let nodes: Vec<&SandboxNode> = match scope {
        Scope::Node(name) => vec![state.node(name)?],
        _ => state.nodes.iter().collect(),
    };
    let client = ko.client().await?;
    let mut checks = Vec::new();
    checks.push(Check::from(
        "database OVN_Northbound",
        db_leader(&state.nb_remote, "OVN_Northbound").await,
    ));
    checks.push(Check::from(
        "database OVN_Southbound",
        db_leader(&state.sb_remote, "OVN_Southbound").await,
    ));
    let nb = dbs::nb(&state.nb_remote).await;
    let sb = dbs::sb(&state.sb_remote).await;
    let (nb, sb) = match (nb, sb) {
        (Ok(nb), Ok(sb)) => (nb, sb),
        (Err(e), _) | (_, Err(e)) => {
            checks.push(Check::fail("database clients", e.to_string()));
            return Ok(checks);
        }
    };
    checks.push(Check::from("ovn-northd", northd(&nb, &sb)));
    let mut ovs = BTreeMap::new();
    for node in &nodes {
        match dbs::ovs(node).await {
            Ok(vs) => {
                checks.extend(node_checks(node, &vs, &sb));
                ovs.insert(node.name.clone(), vs);
            }
            Err(e) => checks.push(Check::fail(
                format!("node {} ovsdb", node.name),
                e.to_string(),
            )),
        }
    }
    if let Scope::Subnet(name) = scope {
        checks.push(subnet_exists(&client, name).await);
    }
    let pods = list_pods(&client).await?;
    let ips = list_ips(&client).await?;
    for pod in &pods {
        if let Some(check) = pod_check(scope, pod, &ips, &nb, &sb, &ovs) {
            checks.push(check);
        }
    }
    Ok(checks)
}

/// Reachable, and which server leads: `_Server`'s Database row (standalone servers lead
/// themselves; a clustered one says whether it is the leader).
async fn db_leader(remote: &str, db: &str) -> Result<String, String> {
    let query = format!(
        r#"["_Server",{{"op":"select","table":"Database","where":[["name","==","{db}"]],"columns":["model","leader","connected"]}}]"#
    );
    let out = tokio::time::timeout(
        dbs::CONNECT_TIMEOUT,
        tokio::process::Command::new("ovsdb-client")
            .args(["--timeout=10", "query", remote, &query])
            .output(),
    )
    .await
    .map_err(|_| format!("{remote} did not answer"))?
    .map_err(|e| format!("cannot run ovsdb-client: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{remote} unreachable: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{remote}: unreadable _Server reply: {e}"))?;
    let row = &reply[0]["rows"][0];
    let model = row["model"].as_str().unwrap_or("unknown");
    match (model, row["leader"].as_bool(), row["connected"].as_bool()) {
        (_, _, Some(false)) => Err(format!("{remote}: {db} is not connected to its cluster")),
        ("standalone", _, _) => Ok(format!("{remote} reachable, standalone (its own leader)")),
        (_, Some(true), _) => Ok(format!("{remote} reachable, the Raft leader")),
        (_, Some(false), _) => Ok(format!(
            "{remote} reachable, a follower with a known leader"
        )),
        _ => Err(format!("{remote}: no {db} database")),
    }
}

/// ovn-northd has caught up: NB_Global.sb_cfg reached nb_cfg, SB_Global.nb_cfg too,
/// and every NB logical switch has its SB datapath.
fn northd(nb: &NbClient, sb: &SbClient) -> Result<String, String> {
    let nbg = nb.store().rows::<NbGlobal>().map_err(|e| e.to_string())?;
    let sbg = sb.store().rows::<SbGlobal>().map_err(|e| e.to_string())?;
    let (Some(nbg), Some(sbg)) = (nbg.first(), sbg.first()) else {
        return Err("no NB_Global or SB_Global row: ovn-northd never ran".to_string());
    };
    if nbg.sb_cfg < nbg.nb_cfg || sbg.nb_cfg < nbg.nb_cfg {
        return Err(format!(
            "NB nb_cfg {} not propagated (NB sb_cfg {}, SB nb_cfg {}): ovn-northd not running?",
            nbg.nb_cfg, nbg.sb_cfg, sbg.nb_cfg
        ));
    }
    let datapaths: Vec<String> = sb
        .store()
        .rows::<DatapathBinding>()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter_map(|d| d.row.external_ids.get("name").cloned())
        .collect();
    let switches = nb
        .store()
        .rows::<LogicalSwitch>()
        .map_err(|e| e.to_string())?;
    for ls in &switches {
        if !datapaths.contains(&ls.name) {
            return Err(format!(
                "logical switch {} has no SB datapath: ovn-northd not running?",
                ls.name
            ));
        }
    }
    Ok(format!(
        "{} logical switches translated to SB",
        switches.len()
    ))
}

fn node_checks(node: &SandboxNode, vs: &VsClient, sb: &SbClient) -> Vec<Check> {
    let system_id = dbs::system_id(vs, &node.name);
    let name = |what: &str| format!("node {} {what}", node.name);
    let registered = match sb.chassis(&system_id) {
        Ok(Some(_)) => Ok(format!("chassis {system_id} registered in SB")),
        Ok(None) => Err(format!(
            "chassis {system_id} not registered in SB: is ovn-controller running on {}?",
            node.name
        )),
        Err(e) => Err(e.to_string()),
    };
    let failed = registered.is_err();
    let mut checks = vec![Check::from(&name("chassis"), registered)];
    if failed {
        return checks;
    }
    checks.push(Check::from(
        &name("tunnels"),
        tunnels(node, &system_id, vs, sb),
    ));
    checks.push(Check::from(&name("ovn0"), ovn0(node, &system_id, vs, sb)));
    checks
}

/// A geneve interface on the node toward every other chassis' encap address.
fn tunnels(
    node: &SandboxNode,
    system_id: &str,
    vs: &VsClient,
    sb: &SbClient,
) -> Result<String, String> {
    let ifaces = vs.store().rows::<Interface>().map_err(|e| e.to_string())?;
    let encaps = sb.store().rows::<Encap>().map_err(|e| e.to_string())?;
    let mut up = 0;
    for encap in encaps.iter().filter(|e| e.chassis_name != system_id) {
        let tunnel = ifaces.iter().find(|i| {
            i.r#type == encap.r#type.as_str() && i.options.get("remote_ip") == Some(&encap.ip)
        });
        match tunnel {
            None => {
                return Err(format!(
                    "no {} tunnel to chassis {} ({}) on {}",
                    encap.r#type.as_str(),
                    encap.chassis_name,
                    encap.ip,
                    node.name
                ))
            }
            Some(i) if i.error.is_some() => {
                return Err(format!(
                    "tunnel {} is in error: {}",
                    i.name,
                    i.error.clone().unwrap_or_default()
                ))
            }
            Some(_) => up += 1,
        }
    }
    Ok(format!("{up} tunnels up"))
}

/// ovn0: the interface of port `node-NAME` installed and bound to this chassis.
fn ovn0(
    node: &SandboxNode,
    system_id: &str,
    vs: &VsClient,
    sb: &SbClient,
) -> Result<String, String> {
    let port = node_port_name(&node.name);
    let iface = dbs::interface_of_port(vs, &port)
        .ok_or_else(|| format!("no interface with iface-id {port} on {}", node.name))?;
    if !dbs::ovn_installed(&iface) {
        return Err(format!(
            "interface {} ({port}) is not ovn-installed",
            iface.name
        ));
    }
    match sb.bound_chassis(&port).map_err(|e| e.to_string())? {
        Some(c) if c == system_id => Ok(format!("{} ({port}) bound and ovn-installed", iface.name)),
        other => Err(format!(
            "port {port} is bound to {other:?}, not {system_id}"
        )),
    }
}

async fn subnet_exists(client: &Client, name: &str) -> Check {
    let api: Api<Subnet> = Api::all(client.clone());
    match api.get_opt(name).await {
        Ok(Some(_)) => Check::ok(format!("subnet {name}"), "exists"),
        Ok(None) => Check::fail(format!("subnet {name}"), format!("subnet {name} not found")),
        Err(e) => Check::fail(format!("subnet {name}"), e.to_string()),
    }
}

async fn list_pods(client: &Client) -> Result<Vec<Pod>, KoError> {
    let api: Api<Pod> = Api::all(client.clone());
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .map_err(|source| KoError::Kube {
            context: "list pods".to_string(),
            source,
        })
}

async fn list_ips(client: &Client) -> Result<BTreeMap<String, IP>, KoError> {
    let api: Api<IP> = Api::all(client.clone());
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|source| KoError::Kube {
            context: "list ips.kubeovn.io".to_string(),
            source,
        })?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|ip| Some((ip.metadata.name.clone()?, ip)))
        .collect())
}

/// The checks of one pod, if it is in scope and allocated.
fn pod_check(
    scope: &Scope,
    pod: &Pod,
    ips: &BTreeMap<String, IP>,
    nb: &NbClient,
    sb: &SbClient,
    ovs: &BTreeMap<String, VsClient>,
) -> Option<Check> {
    let ns = pod.metadata.namespace.as_deref()?;
    let name = pod.metadata.name.as_deref()?;
    let node = pod.spec.as_ref()?.node_name.as_deref()?;
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let net = PodNetwork::parse(&Provider::ovn(), &annotations);
    let check = format!("pod {ns}/{name}");
    let net = match net {
        Ok(net) if net.is_allocated() => net,
        Ok(_) => return None,
        Err(e) => return Some(Check::fail(check, e.to_string())),
    };
    let in_scope = match scope {
        Scope::All => true,
        Scope::Subnet(s) => net.logical_switch.as_deref() == Some(s),
        Scope::Node(n) => node == n,
    };
    if !in_scope {
        return None;
    }
    let port = pod_port_name(ns, name, OVN_PROVIDER);
    Some(Check::from(
        &check,
        pod_port(&port, node, &net, ips, nb, sb, ovs),
    ))
}

fn pod_port(
    port: &str,
    node: &str,
    net: &PodNetwork,
    ips: &BTreeMap<String, IP>,
    nb: &NbClient,
    sb: &SbClient,
    ovs: &BTreeMap<String, VsClient>,
) -> Result<String, String> {
    let mac = net.mac_address.map(|m| m.to_string()).unwrap_or_default();
    let addrs: Vec<String> = net
        .ip_address
        .map(|p| p.addrs())
        .unwrap_or_default()
        .iter()
        .map(|a| a.to_string())
        .collect();
    let lsp = nb
        .by_name::<ovn_nb::LogicalSwitchPort>(port)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("logical switch port {port} not in NB"))?;
    let agrees = lsp.addresses.iter().any(|a| {
        let words: Vec<&str> = a.split_whitespace().collect();
        words.first() == Some(&mac.as_str()) && addrs.iter().all(|ip| words.contains(&ip.as_str()))
    });
    if !agrees {
        return Err(format!(
            "NB port {port} addresses {:?} disagree with annotations ({mac} {})",
            lsp.addresses,
            addrs.join(" ")
        ));
    }
    let ip = ips
        .get(port)
        .ok_or_else(|| format!("no IP object {port} (IPAM) for the pod"))?;
    let ipam_ip = ip.spec.ip_address.clone().unwrap_or_default();
    if ipam_ip.split(',').map(str::trim).collect::<Vec<_>>()
        != addrs.iter().map(String::as_str).collect::<Vec<_>>()
    {
        return Err(format!(
            "IP object {port} has {ipam_ip}, annotations {}",
            addrs.join(",")
        ));
    }
    let vs = ovs
        .get(node)
        .ok_or_else(|| format!("node {node} is not a sandbox node"))?;
    let chassis = dbs::system_id(vs, node);
    match sb.bound_chassis(port).map_err(|e| e.to_string())? {
        Some(c) if c == chassis => {}
        other => {
            return Err(format!(
                "port {port} bound to {other:?}, not node {node}'s chassis {chassis}"
            ))
        }
    }
    let iface = dbs::interface_of_port(vs, port)
        .ok_or_else(|| format!("no OVS interface for {port} on {node}"))?;
    if !dbs::ovn_installed(&iface) {
        return Err(format!(
            "interface {} ({port}) on {node} is not ovn-installed",
            iface.name
        ));
    }
    Ok(format!(
        "port {port} bound on {node}, {} ovn-installed, annotations agree with IPAM and NB",
        iface.name
    ))
}
