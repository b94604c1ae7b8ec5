//! `kubectl ko trace NAMESPACE/POD TARGET_IP [icmp|tcp|udp] [PORT]`: as Kube-OVN's plugin,
//! the packet a pod would send (its port, MAC and address from its annotations; the
//! destination MAC of the target's port when the target is on the pod's switch, else
//! of the subnet's router port `<router>-<switch>`) traced by `ovn-trace --ct=new
//! --ct=new` on the SB database. The verdict comes first (delivered to `output("PORT")`,
//! or dropped at a stage, naming the ACL that dropped it), then the trace condensed.

use std::net::IpAddr;

use kube_ovn_api::annotations::{PodNetwork, Provider};
use kube_ovn_api::naming::{pod_port_name, OVN_PROVIDER};

use super::run::capture;
use super::target::Place;
use super::{get_pod, split_pod, Ko, KoError};

/// Kube-OVN's default VPC router.
const DEFAULT_ROUTER: &str = "ovn-cluster";
/// The source port of a traced TCP/UDP packet (Kube-OVN's plugin uses 10000).
const SOURCE_PORT: u16 = 10000;

/// What `trace` was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRequest {
    /// `namespace/pod`.
    pub pod: String,
    /// The destination address.
    pub target: IpAddr,
    /// `icmp`, `tcp` or `udp`.
    pub protocol: String,
    /// The destination port (TCP/UDP).
    pub port: Option<u16>,
}

impl TraceRequest {
    /// From the command's arguments after `trace`.
    pub fn parse(args: &[String]) -> Result<TraceRequest, KoError> {
        let bad = |value: &str, reason: &str| KoError::BadArgument {
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let usage = "usage: trace NAMESPACE/POD TARGET_IP [icmp|tcp|udp] [PORT]";
        let (pod, target) = match args {
            [pod, target, ..] if args.len() <= 4 => (pod, target),
            _ => return Err(bad(&args.join(" "), usage)),
        };
        split_pod(pod)?;
        let target = target
            .parse()
            .map_err(|_| bad(target, "TARGET_IP is not an IP address"))?;
        let protocol = args.get(2).map_or("icmp", String::as_str).to_string();
        if !matches!(protocol.as_str(), "icmp" | "tcp" | "udp") {
            return Err(bad(&protocol, "protocol is icmp, tcp or udp"));
        }
        let port = match args.get(3) {
            Some(p) => Some(p.parse().map_err(|_| bad(p, "PORT is 1-65535"))?),
            None if protocol == "icmp" => None,
            None => return Err(bad(&protocol, "tcp and udp need a PORT")),
        };
        Ok(TraceRequest {
            pod: pod.clone(),
            target,
            protocol,
            port,
        })
    }
}

/// The pod's side of the packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Its logical switch port.
    pub port: String,
    /// Its logical switch.
    pub switch: String,
    /// Its MAC.
    pub mac: String,
    /// Its address of the target's family.
    pub ip: IpAddr,
}

/// The `ovn-trace` microflow.
pub fn microflow(src: &Source, dst_mac: &str, req: &TraceRequest) -> String {
    let (ip, icmp) = if req.target.is_ipv4() {
        ("ip4", "icmp4.type == 8")
    } else {
        ("ip6", "icmp6.type == 128")
    };
    let mut flow = format!(
        "inport == \"{}\" && eth.src == {} && eth.dst == {dst_mac} && {ip}.src == {} && \
         {ip}.dst == {} && ip.ttl == 64",
        src.port, src.mac, src.ip, req.target
    );
    match (req.protocol.as_str(), req.port) {
        ("icmp", _) => flow.push_str(&format!(" && {icmp}")),
        (proto, Some(port)) => flow.push_str(&format!(
            " && {proto}.src == {SOURCE_PORT} && {proto}.dst == {port}"
        )),
        _ => {}
    }
    flow
}

/// Runs the trace and returns the report (verdict first).
pub async fn trace(ko: &Ko, req: &TraceRequest) -> Result<String, KoError> {
    let (namespace, name) = split_pod(&req.pod)?;
    let client = ko.client().await?;
    let pod = get_pod(&client, &namespace, &name).await?;
    let annotations = pod.metadata.annotations.clone().unwrap_or_default();
    let not_ready = |reason: &str| KoError::PodNotAllocated {
        pod: req.pod.clone(),
        reason: reason.to_string(),
    };
    let net =
        PodNetwork::parse(&Provider::ovn(), &annotations).map_err(|e| not_ready(&e.to_string()))?;
    let (Some(mac), Some(ips), Some(switch)) =
        (net.mac_address, net.ip_address, net.logical_switch.clone())
    else {
        return Err(not_ready(
            "no ovn.kubernetes.io/mac_address, ip_address or logical_switch",
        ));
    };
    let ip = ips
        .addrs()
        .into_iter()
        .find(|a| a.is_ipv4() == req.target.is_ipv4())
        .ok_or_else(|| not_ready("no address of the target's family"))?;
    let on_switch = net
        .cidr
        .map(|c| c.nets().iter().any(|n| n.contains(&req.target)))
        .unwrap_or(false);
    let dst_mac = if on_switch {
        port_mac_of(ko, &req.target).await?
    } else {
        let router = net.logical_router.as_deref().unwrap_or(DEFAULT_ROUTER);
        router_port_mac(ko, &format!("{router}-{switch}")).await?
    };
    let src = Source {
        port: pod_port_name(&namespace, &name, OVN_PROVIDER),
        switch: switch.clone(),
        mac: mac.to_string(),
        ip,
    };
    let flow = microflow(&src, &dst_mac, req);
    let args = vec![
        "--ct=new".to_string(),
        "--ct=new".to_string(),
        switch,
        flow.clone(),
    ];
    let (inv, client) = ko.invocation(&Place::Sb, "ovn-trace", &args).await?;
    let out = capture(&inv, client.as_ref()).await?.success("ovn-trace")?;
    let verdict = verdict(&out.stdout);
    let verdict_text = match &verdict {
        Verdict::Dropped { stage, uuid, .. } => {
            let acl = match logged_acl(&out.stdout) {
                Some(acl) => Some(acl),
                None => acl_of_flow(ko, uuid).await.unwrap_or(None),
            };
            verdict.describe(acl.as_deref(), stage)
        }
        _ => verdict.describe(None, ""),
    };
    Ok(format!(
        "{verdict_text}\nmicroflow: {flow}\n\n{}",
        condense(&out.stdout)
    ))
}

/// Runs a tool against NB and returns its output.
async fn nbctl(ko: &Ko, args: &[&str]) -> Result<String, KoError> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let (inv, client) = ko.invocation(&Place::Nb, "ovn-nbctl", &args).await?;
    Ok(capture(&inv, client.as_ref())
        .await?
        .success("ovn-nbctl")?
        .stdout)
}

/// The MAC of the logical switch port whose addresses carry `target`.
async fn port_mac_of(ko: &Ko, target: &IpAddr) -> Result<String, KoError> {
    let out = nbctl(
        ko,
        &[
            "--format=csv",
            "--data=bare",
            "--no-heading",
            "--columns=addresses",
            "list",
            "Logical_Switch_Port",
        ],
    )
    .await?;
    let target = target.to_string();
    out.lines()
        .map(|l| l.trim_matches('"').split_whitespace().collect::<Vec<_>>())
        .find(|words| words.iter().skip(1).any(|w| *w == target))
        .and_then(|words| words.first().map(|m| m.to_string()))
        .ok_or_else(|| KoError::BadArgument {
            value: target.clone(),
            reason: "no logical switch port has this address".to_string(),
        })
}

/// The MAC of logical router port `name`.
async fn router_port_mac(ko: &Ko, name: &str) -> Result<String, KoError> {
    let filter = format!("name={name}");
    let out = nbctl(
        ko,
        &[
            "--data=bare",
            "--no-heading",
            "--columns=mac",
            "find",
            "Logical_Router_Port",
            &filter,
        ],
    )
    .await?;
    let mac = out.trim().to_string();
    if mac.is_empty() {
        return Err(KoError::BadArgument {
            value: name.to_string(),
            reason: "no such logical router port (the gateway of an off-switch target)".to_string(),
        });
    }
    Ok(mac)
}

/// The name (or match) of the ACL a logical flow (by uuid prefix, as ovn-trace
/// prints it) was made from: the flow's `external_ids:stage-hint` is the ACL's uuid.
async fn acl_of_flow(ko: &Ko, flow_uuid: &str) -> Result<Option<String>, KoError> {
    let args: Vec<String> = [
        "--data=bare",
        "--no-heading",
        "--columns=external_ids",
        "list",
        "Logical_Flow",
        flow_uuid,
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let (inv, client) = ko.invocation(&Place::Sb, "ovn-sbctl", &args).await?;
    let out = capture(&inv, client.as_ref()).await?.success("ovn-sbctl")?;
    let Some(hint) = out
        .stdout
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("stage-hint="))
        .map(|h| h.trim_matches('"').to_string())
    else {
        return Ok(None);
    };
    let acl = nbctl(
        ko,
        &[
            "--data=bare",
            "--no-heading",
            "--columns=name,match",
            "list",
            "ACL",
            &hint,
        ],
    )
    .await?;
    let lines: Vec<&str> = acl
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    Ok(match lines.as_slice() {
        [name, ..] if lines.len() >= 2 => Some(format!("ACL {name} ({})", lines[1])),
        [only] => Some(format!("ACL ({only})")),
        _ => None,
    })
}

/// How a trace ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Output to a logical port.
    Delivered(String),
    /// Dropped by the flow at `stage` (with its uuid prefix and match).
    Dropped {
        /// The pipeline stage, `ls_in_acl`.
        stage: String,
        /// The flow's uuid prefix.
        uuid: String,
        /// The flow's match.
        matched: String,
    },
    /// Neither output nor drop was seen.
    Unknown,
}

impl Verdict {
    fn describe(&self, acl: Option<&str>, stage: &str) -> String {
        match self {
            Verdict::Delivered(port) => format!("verdict: delivered to output(\"{port}\")"),
            Verdict::Dropped { matched, .. } => match acl {
                Some(acl) => format!("verdict: dropped by {acl} at stage {stage}"),
                None => format!("verdict: dropped at stage {stage} (match: {matched})"),
            },
            Verdict::Unknown => "verdict: unknown (neither output nor drop)".to_string(),
        }
    }
}

/// A flow line of ovn-trace's detailed output:
/// ` 4. ls_in_acl (northd.c:1234): MATCH, priority 2001, uuid 0123abcd`.
fn parse_flow_line(line: &str) -> Option<(String, String, String)> {
    let (_, rest) = line.trim().split_once(". ")?;
    let (stage, rest) = rest.split_once(' ')?;
    let rest = rest.split_once("): ").map_or(rest, |(_, r)| r);
    let (matched, uuid) = rest.rsplit_once(", uuid ")?;
    let matched = matched
        .rsplit_once(", priority ")
        .map_or(matched, |(m, _)| m);
    Some((
        stage.to_string(),
        uuid.trim().to_string(),
        matched.to_string(),
    ))
}

/// The verdict of ovn-trace's detailed output: the last `output to "PORT"` wins; else
/// the flow whose actions hold the first `drop;`, else the last flow (the pipeline
/// ended there: an implicit drop).
pub fn verdict(trace: &str) -> Verdict {
    let delivered = trace
        .lines()
        .rev()
        .filter_map(|l| l.split_once("output to \"").map(|(_, r)| r))
        .find_map(|r| r.split_once('"').map(|(port, _)| port.to_string()));
    if let Some(port) = delivered {
        return Verdict::Delivered(port);
    }
    let mut last_flow = None;
    for line in trace.lines() {
        if let Some(flow) = parse_flow_line(line) {
            last_flow = Some(flow);
        } else if line.trim() == "drop;" && last_flow.is_some() {
            break;
        }
    }
    match last_flow {
        Some((stage, uuid, matched)) => Verdict::Dropped {
            stage,
            uuid,
            matched,
        },
        None => Verdict::Unknown,
    }
}

/// The ACL a logging ACL names in ovn-trace's `LOG: ACL name=NAME, ..., verdict=drop`.
pub fn logged_acl(trace: &str) -> Option<String> {
    trace
        .lines()
        .rev()
        .filter_map(|l| l.trim().strip_prefix("LOG: ACL name="))
        .filter(|rest| rest.contains("verdict=drop") || rest.contains("verdict=reject"))
        .filter_map(|rest| rest.split(',').next())
        .map(|name| format!("ACL {name}"))
        .next()
}

/// The trace without the source locations, uuids and underlines.
pub fn condense(trace: &str) -> String {
    let mut out = String::new();
    for line in trace.lines() {
        let t = line.trim_end();
        if t.is_empty() || t.trim_start().chars().all(|c| c == '-') {
            continue;
        }
        let t = match parse_flow_line(t) {
            Some((stage, _, matched)) => {
                let indent = &t[..t.len() - t.trim_start().len()];
                format!("{indent}{stage}: {matched}")
            }
            None => t.to_string(),
        };
        out.push_str(&t);
        out.push('\n');
    }
    out
}
