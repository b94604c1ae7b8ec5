//! A pod's QoS on its node: `ingress_rate` / `egress_rate` (Mbit/s) and the netem
//! annotations (`latency`, `jitter`, `limit`, `loss`), as Kube-OVN's
//! `SetInterfaceBandwidth` and `SetNetemQos` map them (`pkg/ovs/ovs-vsctl_linux.go`,
//! `pkg/ovs/ovs-vsctl-qos.go`); note the swap, pod egress is OVS ingress:
//!
//! | annotation | rows (always written) | enforced by |
//! |---|---|---|
//! | `egress_rate` | Interface `ingress_policing_rate` = rate × 1000 kbit, `ingress_policing_burst` = 80 % of it | kernel datapath: the policer; userspace (`netdev`) datapath: **tbf on the pod's NIC in its namespace** (the policer needs `act_police`, and OVS reads the veth through AF_PACKET before tc ingress anyway) |
//! | `ingress_rate` | `Queue{other_config:max-rate=rate×10⁶, burst=max-rate/10}` in `QoS{type=linux-htb, queues:0}` on the host-end Port | the htb qdisc OVS puts on the host end (both datapaths) |
//! | `latency` (ms), `jitter` (ms), `limit` (packets), `loss` (%) | `QoS{type=linux-netem, other_config:latency=µs, jitter=µs, limit, loss}` on the Port, only while there is no `ingress_rate` (Kube-OVN gives htb the priority) | `sch_netem` where the kernel has it |
//!
//! Both QoS and Queue rows carry `external_ids:iface-id` and `pod=<ns>/<name>`, and
//! are destroyed when replaced or removed, so none is orphaned.
//!
//! [`apply`] is idempotent (a pod already as wanted gets no write) and [`remove`] is
//! CNI DEL's part. [`watch::run`] re-applies when a pod's annotations change.

mod rows;
mod tbf;
pub mod watch;

use std::path::Path;

use ovs_vsctl::{VsClient, VsError};

use super::{HostNetwork, NodeError};
use kube_ovn_api::annotations::PodNetwork;

pub use tbf::Tbf;

/// The largest rate accepted, Mbit/s (Kube-OVN's `MaxBandwidthMbps` is of this order;
/// larger values overflow the bit/s columns).
pub const MAX_RATE_MBPS: u64 = 1_000_000;

/// The QoS fields of one pod NIC ([`PodNetwork`]'s `ingress_rate`, `egress_rate`,
/// `latency`, `jitter`, `limit`, `loss`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QosSpec {
    /// Into the pod, Mbit/s.
    pub ingress_rate: Option<u64>,
    /// Out of the pod, Mbit/s.
    pub egress_rate: Option<u64>,
    /// Netem latency, ms.
    pub latency: Option<u64>,
    /// Netem jitter, ms.
    pub jitter: Option<u64>,
    /// Netem queue limit, packets.
    pub limit: Option<u64>,
    /// Netem loss, percent.
    pub loss: Option<f64>,
}

impl QosSpec {
    /// The QoS fields of a provider's annotations. A rate of 0 means no limit, as in
    /// Kube-OVN.
    pub fn from_network(net: &PodNetwork) -> QosSpec {
        QosSpec {
            ingress_rate: net.ingress_rate.filter(|r| *r > 0),
            egress_rate: net.egress_rate.filter(|r| *r > 0),
            latency: net.latency.filter(|v| *v > 0),
            jitter: net.jitter.filter(|v| *v > 0),
            limit: net.limit.filter(|v| *v > 0),
            loss: net.loss.map(|l| l.0).filter(|l| *l > 0.0),
        }
    }

    /// Checks the values before anything is written.
    pub fn validate(&self) -> Result<(), QosError> {
        for (field, value) in [
            ("ingress_rate", self.ingress_rate),
            ("egress_rate", self.egress_rate),
        ] {
            if let Some(value) = value.filter(|v| *v > MAX_RATE_MBPS) {
                return Err(QosError::RateOutOfRange { field, value });
            }
        }
        if let Some(loss) = self.loss.filter(|l| !(0.0..=100.0).contains(l)) {
            return Err(QosError::LossOutOfRange { loss });
        }
        Ok(())
    }

    /// True when nothing is limited.
    pub fn is_empty(&self) -> bool {
        *self == QosSpec::default()
    }
}

/// Which pod NIC [`apply`] and [`remove`] act on.
#[derive(Debug, Clone, Copy)]
pub struct QosTarget<'a> {
    /// The host end's OVS port (and interface) name on `br-int`.
    pub port: &'a str,
    /// The logical port the NIC is bound to (`external_ids:iface-id`).
    pub iface_id: &'a str,
    /// `<namespace>/<name>` of the pod, as Kube-OVN tags the rows.
    pub pod: &'a str,
    /// The pod's network namespace (`/var/run/netns/...`, `/proc/PID/ns/net`); needed
    /// for the tbf on the userspace datapath.
    pub netns: Option<&'a Path>,
    /// The NIC's name inside the pod (`eth0`).
    pub pod_iface: &'a str,
}

/// How pod egress is enforced on this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EgressEnforcement {
    /// The Interface policer (kernel datapath).
    Policing,
    /// tbf on the pod's NIC (userspace datapath, where the policer is not enforced).
    PodTbf,
}

/// What one [`apply`] or [`remove`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosReport {
    /// The Interface's policing columns were written.
    pub policing: bool,
    /// The Port's QoS (and its Queue) were replaced, created or removed.
    pub port_qos: bool,
    /// The tbf on the pod's NIC was set, changed or deleted.
    pub tbf: bool,
}

impl QosReport {
    /// True when nothing was written.
    pub fn is_noop(&self) -> bool {
        !(self.policing || self.port_qos || self.tbf)
    }
}

/// Why a QoS change stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QosError {
    /// A rate above [`MAX_RATE_MBPS`]; nothing was written.
    #[error("{field} {value} Mbit/s is above the maximum {MAX_RATE_MBPS}")]
    RateOutOfRange {
        /// `ingress_rate` or `egress_rate`.
        field: &'static str,
        /// The value.
        value: u64,
    },
    /// A loss outside 0..=100 %; nothing was written.
    #[error("loss {loss}% is outside 0..=100")]
    LossOutOfRange {
        /// The value.
        loss: f64,
    },
    /// The port is not on this node's switch.
    #[error("OVS port {port} not found")]
    PortMissing {
        /// The port.
        port: String,
    },
    /// The userspace datapath needs the pod's namespace to enforce egress.
    #[error("pod {pod}: egress_rate on the userspace datapath needs the pod's network namespace")]
    NetnsRequired {
        /// `<namespace>/<name>`.
        pod: String,
    },
    /// The `Open_vSwitch` transaction failed; nothing of it was committed.
    #[error("Open_vSwitch QoS of port {port} failed")]
    Ovs {
        /// The port.
        port: String,
        /// Why.
        #[source]
        source: Box<VsError>,
    },
    /// The pod's namespace could not be entered.
    #[error("cannot reach the namespace of pod {pod}")]
    Namespace {
        /// `<namespace>/<name>`.
        pod: String,
        /// Why.
        #[source]
        source: Box<NodeError>,
    },
    /// The NIC is not in the pod's namespace.
    #[error("link {link} not found in {namespace}")]
    LinkMissing {
        /// The NIC.
        link: String,
        /// The namespace.
        namespace: String,
    },
    /// A tc request failed.
    #[error("tc {op} on {link} in {namespace} failed")]
    Tc {
        /// `replace`, `delete`, `dump`.
        op: &'static str,
        /// The NIC.
        link: String,
        /// The namespace.
        namespace: String,
        /// The kernel's answer.
        #[source]
        source: Box<rtnetlink::Error>,
    },
}

/// The egress enforcement this node's `br-int` needs: [`EgressEnforcement::PodTbf`] on the
/// userspace datapath (`datapath_type=netdev`), the policer otherwise.
pub fn egress_enforcement(vs: &VsClient) -> Result<EgressEnforcement, QosError> {
    let netdev = rows::integration_datapath(vs)
        .map_err(|e| rows::ovs_failed("br-int", e))?
        .is_some_and(|dp| dp == "netdev");
    Ok(if netdev {
        EgressEnforcement::PodTbf
    } else {
        EgressEnforcement::Policing
    })
}

/// Makes the NIC's QoS match `spec`: the rows Kube-OVN writes, plus a tbf on the pod's
/// NIC where the datapath ignores the policer. Writes nothing when already as wanted.
pub async fn apply(
    vs: &VsClient,
    target: &QosTarget<'_>,
    spec: &QosSpec,
) -> Result<QosReport, QosError> {
    spec.validate()?;
    let enforcement = egress_enforcement(vs)?;
    let tbf_wanted = match (enforcement, spec.egress_rate) {
        (EgressEnforcement::PodTbf, Some(rate)) => Some(Tbf::for_rate_mbps(rate)),
        _ => None,
    };
    let net = match target.netns {
        Some(path) => Some(open_netns(target, path).await?),
        None if tbf_wanted.is_some() => {
            return Err(QosError::NetnsRequired {
                pod: target.pod.to_string(),
            })
        }
        None => None,
    };
    let (policing, port_qos) = rows::apply(vs, target, spec).await?;
    let tbf = match &net {
        Some(net) => tbf::ensure(net, target.pod_iface, tbf_wanted).await?,
        None => false,
    };
    let report = QosReport {
        policing,
        port_qos,
        tbf,
    };
    if !report.is_noop() {
        tracing::info!(
            pod = target.pod,
            port = target.port,
            ?spec,
            ?report,
            "pod QoS applied"
        );
    }
    Ok(report)
}

/// CNI DEL's part: the Port's QoS and Queue rows destroyed, policing off, the tbf
/// deleted (a namespace or port already gone is fine).
pub async fn remove(vs: &VsClient, target: &QosTarget<'_>) -> Result<QosReport, QosError> {
    let (policing, port_qos) = rows::remove(vs, target).await?;
    let mut tbf = false;
    if let Some(path) = target.netns.filter(|p| p.exists()) {
        let net = open_netns(target, path).await?;
        tbf = tbf::ensure_if_link(&net, target.pod_iface).await?;
    }
    Ok(QosReport {
        policing,
        port_qos,
        tbf,
    })
}

async fn open_netns(target: &QosTarget<'_>, path: &Path) -> Result<HostNetwork, QosError> {
    HostNetwork::open(path)
        .await
        .map_err(|source| QosError::Namespace {
            pod: target.pod.to_string(),
            source: Box::new(source),
        })
}
