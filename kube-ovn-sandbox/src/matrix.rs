//! The matrix prober: every pod reaches every pod over real traffic, from
//! inside the source pod's network namespace, on each port and protocol;
//! what it observes is compared with what the independent NetworkPolicy
//! evaluator expects.
//!
//! A probe is allowed when the destination's responder answers with the
//! destination pod's name: a TCP connect and read, or a UDP datagram and
//! its reply, each within a short timeout. Probes run concurrently, at
//! most `concurrency` at a time (each on its own thread inside the source
//! namespace), a new one starting as soon as any finishes.

use super::netns::run_in;
use super::policy_eval::{Evaluator, PodInfo, Protocol};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::time::Duration;

/// A pod to probe from and to.
#[derive(Debug, Clone)]
pub struct ProbePod {
    /// Labels, IPs, named ports: what the evaluator needs.
    pub info: PodInfo,
    /// The pod's network namespace (probes from it start there).
    pub netns: PathBuf,
}

/// What to probe.
#[derive(Debug, Clone)]
pub struct MatrixSpec {
    /// Destination ports.
    pub ports: Vec<u16>,
    /// Protocols (SCTP is not probed: there is no SCTP responder).
    pub protocols: Vec<Protocol>,
    /// How long one probe waits for its answer.
    pub timeout: Duration,
    /// How many probes run at once.
    pub concurrency: usize,
    /// How many more times a probe whose outcome disagrees with the evaluator is
    /// repeated, after [`Self::retry_delay`] and then twice as long each time (so that
    /// a node's datapath being restarted is waited out too), before it counts as a
    /// mismatch. Policy
    /// enforcement is eventually consistent (a pod is Running before the controller has
    /// put its port in every policy's port group), and Kubernetes' own NetworkPolicy
    /// e2e tests probe a wrong matrix a second time for the same reason.
    pub retries: u32,
    /// The wait before the first repeat.
    pub retry_delay: Duration,
}

/// One probe's outcome.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Probe {
    /// `namespace/name` of the source pod.
    pub source: String,
    /// `namespace/name` of the destination pod.
    pub destination: String,
    /// The destination IP probed.
    pub destination_ip: IpAddr,
    /// Destination port.
    pub port: u16,
    /// `TCP` or `UDP`.
    pub protocol: String,
    /// What the evaluator says.
    pub expected: bool,
    /// Whether the destination answered with its name.
    pub observed: bool,
    /// What answered, if anything did (a wrong name is a datapath bug).
    pub answer: Option<String>,
    /// How many times it was probed: 1, or more where the first outcomes disagreed
    /// with the evaluator ([`MatrixSpec::retries`]).
    pub attempts: u32,
}

/// Every probe of one run (what `matrix --json` prints, and reads back).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatrixReport {
    /// Pods in row/column order.
    pub pods: Vec<String>,
    /// Every probe.
    pub probes: Vec<Probe>,
}

fn pod_id(p: &PodInfo) -> String {
    format!("{}/{}", p.namespace, p.name)
}

/// Probes every pair; pods without an IP are left out.
pub async fn run_matrix(pods: &[ProbePod], eval: &Evaluator, spec: &MatrixSpec) -> MatrixReport {
    let pods: Vec<&ProbePod> = pods.iter().filter(|p| !p.info.ips.is_empty()).collect();
    let mut jobs = Vec::new();
    for &port in &spec.ports {
        for &protocol in spec.protocols.iter().filter(|p| **p != Protocol::Sctp) {
            for src in &pods {
                for dst in &pods {
                    jobs.push((*src, *dst, port, protocol));
                }
            }
        }
    }
    let timeout = spec.timeout;
    // unordered, so that a probe waiting out its timeout (a denied one) does not hold
    // back the start of the next ones; put back in job order after
    let mut done: Vec<(usize, Probe)> = futures::stream::iter(jobs.iter().copied().enumerate())
        .map(|(i, (src, dst, port, protocol))| async move {
            let ip = dst.info.ips[0];
            let answer = probe(src.netns.clone(), ip, port, protocol, timeout).await;
            let probe = Probe {
                source: pod_id(&src.info),
                destination: pod_id(&dst.info),
                destination_ip: ip,
                port,
                protocol: protocol.to_string(),
                expected: eval.allowed(&src.info, &dst.info, port, protocol),
                observed: answer.as_deref() == Some(dst.info.name.as_str()),
                answer,
                attempts: 1,
            };
            (i, probe)
        })
        .buffer_unordered(spec.concurrency.max(1))
        .collect()
        .await;
    done.sort_by_key(|(i, _)| *i);
    let mut probes: Vec<Probe> = done.into_iter().map(|(_, p)| p).collect();
    let mut delay = spec.retry_delay;
    for _ in 0..spec.retries {
        let wrong: Vec<usize> = (0..probes.len())
            .filter(|&i| probes[i].expected != probes[i].observed)
            .collect();
        if wrong.is_empty() {
            break;
        }
        tokio::time::sleep(delay).await;
        delay *= 2;
        // probes[i] is jobs[i]; each answer comes back with its index
        let again: Vec<(usize, Option<String>)> = futures::stream::iter(wrong)
            .map(|i| {
                let (src, dst, port, protocol) = jobs[i];
                async move {
                    let answer = probe(src.netns.clone(), dst.info.ips[0], port, protocol, timeout);
                    (i, answer.await)
                }
            })
            .buffer_unordered(spec.concurrency.max(1))
            .collect()
            .await;
        for (i, answer) in again {
            let p = &mut probes[i];
            p.observed = answer.as_deref() == Some(jobs[i].1.info.name.as_str());
            p.answer = answer;
            p.attempts += 1;
        }
    }
    MatrixReport {
        pods: pods.iter().map(|p| pod_id(&p.info)).collect(),
        probes,
    }
}

/// What answered at `ip:port`, probed from inside `netns`.
async fn probe(
    netns: PathBuf,
    ip: IpAddr,
    port: u16,
    protocol: Protocol,
    timeout: Duration,
) -> Option<String> {
    let addr = SocketAddr::new(ip, port);
    let ran = run_in(Some(&netns), move || match protocol {
        Protocol::Udp => probe_udp(addr, timeout),
        _ => probe_tcp(addr, timeout),
    })
    .await;
    ran.ok().flatten()
}

fn probe_tcp(addr: SocketAddr, timeout: Duration) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer).filter(|a| !a.is_empty())
}

fn probe_udp(addr: SocketAddr, timeout: Duration) -> Option<String> {
    let local: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .ok()?;
    let socket = UdpSocket::bind(local).ok()?;
    socket.connect(addr).ok()?;
    // Two tries share the timeout: a first datagram may be the one that
    // waits for neighbour resolution.
    socket.set_read_timeout(Some(timeout / 2)).ok()?;
    let mut buf = [0u8; 512];
    for _ in 0..2 {
        socket.send(b"probe").ok()?;
        if let Ok(n) = socket.recv(&mut buf) {
            return Some(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
    None
}

impl MatrixReport {
    /// The probes whose observation differs from the expectation.
    pub fn mismatches(&self) -> Vec<&Probe> {
        self.probes
            .iter()
            .filter(|p| p.expected != p.observed)
            .collect()
    }

    /// `{"pods": [...], "probes": [...], "mismatches": N}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "pods": self.pods,
            "probes": self.probes,
            "mismatches": self.mismatches().len(),
        })
    }

    /// Expected and observed grids per port and protocol (rows are sources,
    /// columns destinations; `.` allowed, `X` denied; a mismatching
    /// observed cell is followed by `!`), then every mismatch spelled out.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "rows: from pod; columns: to pod (numbered as the rows); \
             `.` allowed, `X` denied, `!` observed differs from expected\n",
        );
        let mut groups: Vec<(u16, String)> = Vec::new();
        for p in &self.probes {
            if !groups.contains(&(p.port, p.protocol.clone())) {
                groups.push((p.port, p.protocol.clone()));
            }
        }
        for (port, protocol) in groups {
            let cell = |src: &str, dst: &str| {
                self.probes.iter().find(|p| {
                    p.port == port
                        && p.protocol == protocol
                        && p.source == src
                        && p.destination == dst
                })
            };
            for (title, observed) in [("expected", false), ("observed", true)] {
                out.push_str(&format!("{title} {port}/{protocol}:\n"));
                out.push_str(&self.grid(|s, d| match cell(s, d) {
                    None => "  ".to_string(),
                    Some(p) => {
                        let v = if observed { p.observed } else { p.expected };
                        let mark = if observed && p.observed != p.expected {
                            "!"
                        } else {
                            " "
                        };
                        format!("{}{mark}", if v { '.' } else { 'X' })
                    }
                }));
            }
        }
        let wrong = self.mismatches();
        let repeated = self.probes.iter().filter(|p| p.attempts > 1).count();
        out.push_str(&format!(
            "{} probes, {} mismatches",
            self.probes.len(),
            wrong.len()
        ));
        if repeated > 0 {
            // said, so a slow policy is seen even when it converges
            out.push_str(&format!(
                " ({repeated} probed again after a first disagreement)"
            ));
        }
        out.push('\n');
        for p in wrong {
            out.push_str(&format!(
                "MISMATCH {} -> {} ({}) {}/{}: expected {}, observed {} (answer {:?})\n",
                p.source,
                p.destination,
                p.destination_ip,
                p.port,
                p.protocol,
                word(p.expected),
                word(p.observed),
                p.answer
            ));
        }
        out
    }

    fn grid(&self, cell: impl Fn(&str, &str) -> String) -> String {
        let width = self.pods.iter().map(String::len).max().unwrap_or(0);
        let mut out = format!("{:width$} ", "");
        for (i, _) in self.pods.iter().enumerate() {
            out.push_str(&format!("{:<2}", i % 10));
        }
        out.push('\n');
        for src in &self.pods {
            out.push_str(&format!("{src:width$} "));
            for dst in &self.pods {
                out.push_str(&cell(src, dst));
            }
            out.push('\n');
        }
        let legend: Vec<String> = self
            .pods
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{i}={p}"))
            .collect();
        out.push_str(&format!("columns: {}\n", legend.join(" ")));
        out
    }
}

fn word(allowed: bool) -> &'static str {
    if allowed {
        "allowed"
    } else {
        "denied"
    }
}

/// Why the cluster's state cannot be probed.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// Listing pods, namespaces or policies failed.
    #[error("cannot list {what}: {source}")]
    List {
        /// What was listed.
        what: &'static str,
        /// Why.
        source: kube::Error,
    },
    /// A NetworkPolicy the evaluator refuses.
    #[error(transparent)]
    Policy(#[from] super::policy_eval::PolicyError),
}

/// The running pods (of `namespaces`, all when empty) this process runs,
/// and an evaluator of the cluster's NetworkPolicies.
pub async fn load_cluster(
    client: &kube::Client,
    directory: &super::runtime::PodDirectory,
    namespaces: &[String],
) -> Result<(Vec<ProbePod>, Evaluator), MatrixError> {
    load_cluster_with(client, namespaces, |pod| {
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        directory.get(ns, name).map(|entry| entry.netns)
    })
    .await
}

/// The pods (of `namespaces`, all when empty) for which `netns_of` names a network
/// namespace to probe from, and an evaluator of the cluster's NetworkPolicies. A
/// process that does not run the pods itself (the sandbox's `matrix` command) finds
/// their namespaces by the node agent's naming.
pub async fn load_cluster_with(
    client: &kube::Client,
    namespaces: &[String],
    mut netns_of: impl FnMut(&k8s_openapi::api::core::v1::Pod) -> Option<PathBuf>,
) -> Result<(Vec<ProbePod>, Evaluator), MatrixError> {
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use kube::api::{Api, ListParams};
    let list = ListParams::default();
    let fail = |what| move |source| MatrixError::List { what, source };
    let ns_labels = Api::<Namespace>::all(client.clone())
        .list(&list)
        .await
        .map_err(fail("namespaces"))?
        .items
        .into_iter()
        .map(|n| {
            (
                n.metadata.name.unwrap_or_default(),
                n.metadata.labels.unwrap_or_default(),
            )
        })
        .collect();
    let policies = Api::<NetworkPolicy>::all(client.clone())
        .list(&list)
        .await
        .map_err(fail("networkpolicies"))?
        .items;
    let eval = Evaluator::new(ns_labels, &policies)?;
    let pods = Api::<Pod>::all(client.clone())
        .list(&list)
        .await
        .map_err(fail("pods"))?
        .items;
    let mut out = Vec::new();
    for pod in pods {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        if !(namespaces.is_empty() || namespaces.contains(&ns)) {
            continue;
        }
        let Some(netns) = netns_of(&pod) else {
            continue;
        };
        out.push(ProbePod {
            info: pod_info(&pod),
            netns,
        });
    }
    out.sort_by_key(|p| pod_id(&p.info));
    Ok((out, eval))
}

/// What the evaluator needs of a Pod object.
pub fn pod_info(pod: &k8s_openapi::api::core::v1::Pod) -> PodInfo {
    use super::policy_eval::NamedPort;
    let ports = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .filter_map(|p| {
            Some(NamedPort {
                name: p.name.clone()?,
                port: u16::try_from(p.container_port).ok()?,
                protocol: p
                    .protocol
                    .as_deref()
                    .and_then(Protocol::parse)
                    .unwrap_or(Protocol::Tcp),
            })
        })
        .collect();
    PodInfo {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        labels: pod.metadata.labels.clone().unwrap_or_default(),
        ips: pod
            .status
            .iter()
            .flat_map(|s| s.pod_ips.iter().flatten())
            .filter_map(|ip| ip.ip.parse().ok())
            .collect(),
        ports,
    }
}
