//! The `Open_vSwitch` rows of a pod's QoS: Interface policing, and the Port's `QoS`
//! (`linux-htb` with one `Queue`, or `linux-netem`), written only where they differ.

use std::collections::BTreeMap;

use ovs_vsctl::{Bridge, Interface, Port, QoS, Queue, RowId, Stored, VsClient, VsError, VsTxn};

use super::{QosError, QosSpec, QosTarget};
use crate::{APPLY_TIMEOUT, INTEGRATION_BRIDGE};

/// Kube-OVN's QoS types.
pub(crate) const HTB: &str = "linux-htb";
pub(crate) const NETEM: &str = "linux-netem";

pub(super) fn ovs_failed(port: &str, source: impl Into<VsError>) -> QosError {
    QosError::Ovs {
        port: port.to_string(),
        source: Box::new(source.into()),
    }
}

/// `br-int`'s `datapath_type`, if the bridge exists.
pub(super) fn integration_datapath(vs: &VsClient) -> Result<Option<String>, VsError> {
    Ok(vs
        .store()
        .by_name::<Bridge>(INTEGRATION_BRIDGE)?
        .into_iter()
        .next()
        .map(|b| b.row.datapath_type))
}

/// `ingress_policing_rate` (kbit/s) and `ingress_policing_burst` (kbit) for a pod
/// egress rate: the burst is Kube-OVN's default, 80 % of the rate.
pub fn policing(egress_rate: Option<u64>) -> (i64, i64) {
    let Some(mbps) = egress_rate else {
        return (0, 0);
    };
    let kbit = (mbps as i64).saturating_mul(1000);
    (kbit, kbit / 10 * 8 + kbit % 10 * 8 / 10)
}

/// The Port QoS a spec asks for: its type, `other_config`, and its queue's
/// `other_config` (htb only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedQos {
    /// `linux-htb` or `linux-netem`.
    pub qos_type: &'static str,
    /// The QoS row's `other_config`.
    pub other_config: BTreeMap<String, String>,
    /// Queue 0's `other_config` (htb).
    pub queue: Option<BTreeMap<String, String>>,
}

/// Kube-OVN's mapping: `ingress_rate` gives htb (`max-rate` bit/s, `burst` bytes = a
/// tenth of the bit rate, i.e. 80 % of a second's bytes), else the netem fields give
/// netem (`latency`/`jitter` in µs).
pub fn wanted_qos(spec: &QosSpec) -> Option<WantedQos> {
    if let Some(mbps) = spec.ingress_rate {
        let bps = mbps.saturating_mul(1_000_000);
        let queue = BTreeMap::from([
            ("max-rate".to_string(), bps.to_string()),
            ("burst".to_string(), (bps / 10).to_string()),
        ]);
        return Some(WantedQos {
            qos_type: HTB,
            other_config: BTreeMap::new(),
            queue: Some(queue),
        });
    }
    let mut config = BTreeMap::new();
    if let Some(ms) = spec.latency {
        config.insert("latency".into(), ms.saturating_mul(1000).to_string());
    }
    if let Some(ms) = spec.jitter {
        config.insert("jitter".into(), ms.saturating_mul(1000).to_string());
    }
    if let Some(packets) = spec.limit {
        config.insert("limit".into(), packets.to_string());
    }
    if let Some(loss) = spec.loss {
        config.insert("loss".into(), loss.to_string());
    }
    (!config.is_empty()).then_some(WantedQos {
        qos_type: NETEM,
        other_config: config,
        queue: None,
    })
}

fn tags(target: &QosTarget<'_>) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("iface-id".to_string(), target.iface_id.to_string()),
        ("pod".to_string(), target.pod.to_string()),
    ])
}

/// True when the stored QoS row `id` is ours and is what `wanted` asks for.
fn matches(
    vs: &VsClient,
    target: &QosTarget<'_>,
    id: RowId<QoS>,
    wanted: &WantedQos,
) -> Result<bool, VsError> {
    let Some(qos) = vs.store().get(id)? else {
        return Ok(false);
    };
    let queue = match qos.queues.get(&0) {
        Some(q) => vs.store().get(*q)?.map(|q| q.other_config),
        None => None,
    };
    Ok(qos.r#type == wanted.qos_type
        && qos.other_config == wanted.other_config
        && qos.queues.len() == usize::from(queue.is_some())
        && queue == wanted.queue
        && qos.external_ids.get("iface-id").map(String::as_str) == Some(target.iface_id))
}

/// Destroys our QoS and Queue rows other than `keep` that no other port uses.
fn destroy_ours(
    txn: &mut VsTxn<'_>,
    vs: &VsClient,
    target: &QosTarget<'_>,
    port: Option<RowId<Port>>,
    keep: Option<RowId<QoS>>,
) -> Result<bool, VsError> {
    let ours = |ids: &BTreeMap<String, String>| {
        ids.get("iface-id").map(String::as_str) == Some(target.iface_id)
    };
    let mut destroyed = false;
    let qos_rows: Vec<Stored<QoS>> = vs.store().rows::<QoS>()?;
    for qos in qos_rows.iter().filter(|q| ours(&q.row.external_ids)) {
        let users = vs.store().ids_referencing::<Port>("qos", qos.id.uuid());
        if Some(qos.id) == keep || users.iter().any(|p| Some(*p) != port) {
            continue;
        }
        txn.destroy_qos(qos.id)?;
        destroyed = true;
    }
    for queue in vs.store().rows::<Queue>()? {
        let held = qos_rows
            .iter()
            .any(|q| q.row.queues.values().any(|id| *id == queue.id));
        if ours(&queue.row.external_ids) && !held {
            txn.destroy_queue(queue.id);
            destroyed = true;
        }
    }
    Ok(destroyed)
}

/// Writes the policing columns and the Port QoS; returns (policing written, Port QoS
/// written).
pub(super) async fn apply(
    vs: &VsClient,
    target: &QosTarget<'_>,
    spec: &QosSpec,
) -> Result<(bool, bool), QosError> {
    let store = vs.store();
    let port = store
        .by_name::<Port>(target.port)
        .map_err(|e| ovs_failed(target.port, e))?;
    let iface = store
        .by_name::<Interface>(target.port)
        .map_err(|e| ovs_failed(target.port, e))?;
    let (Some(port), Some(iface)) = (port.into_iter().next(), iface.into_iter().next()) else {
        return Err(QosError::PortMissing {
            port: target.port.to_string(),
        });
    };
    let mut txn = vs.txn();
    let (rate, burst) = policing(spec.egress_rate);
    let policing = (iface.ingress_policing_rate, iface.ingress_policing_burst) != (rate, burst);
    if policing {
        txn.set_ingress_policing(target.port, rate, burst)
            .map_err(|e| ovs_failed(target.port, e))?;
    }
    let wanted = wanted_qos(spec);
    let current = port.row.qos;
    let keep = match (&wanted, current) {
        (Some(w), Some(id))
            if matches(vs, target, id, w).map_err(|e| ovs_failed(target.port, e))? =>
        {
            Some(id)
        }
        _ => None,
    };
    let mut port_qos = false;
    if keep.is_none() {
        let new = wanted.map(|w| insert(&mut txn, target, w));
        if new.is_some() || current.is_some() {
            txn.set_port_qos_ref(target.port, new)
                .map_err(|e| ovs_failed(target.port, e))?;
            port_qos = true;
        }
    }
    port_qos |= destroy_ours(&mut txn, vs, target, Some(port.id), keep)
        .map_err(|e| ovs_failed(target.port, e))?;
    if policing || port_qos {
        crate::ovs::commit(vs, txn, APPLY_TIMEOUT)
            .await
            .map_err(|e| ovs_failed(target.port, e))?;
    }
    Ok((policing, port_qos))
}

fn insert(txn: &mut VsTxn<'_>, target: &QosTarget<'_>, wanted: WantedQos) -> RowId<QoS> {
    let qos = QoS {
        r#type: wanted.qos_type.to_string(),
        other_config: wanted.other_config,
        external_ids: tags(target),
        ..Default::default()
    };
    let queues = wanted
        .queue
        .map(|config| Queue {
            other_config: config,
            external_ids: tags(target),
            ..Default::default()
        })
        .into_iter()
        .collect();
    txn.insert_qos(qos, queues)
}

/// Clears the Port's QoS, zeroes policing and destroys our rows; a port already gone
/// leaves only the rows to destroy.
pub(super) async fn remove(
    vs: &VsClient,
    target: &QosTarget<'_>,
) -> Result<(bool, bool), QosError> {
    let store = vs.store();
    let port = store
        .by_name::<Port>(target.port)
        .map_err(|e| ovs_failed(target.port, e))?
        .into_iter()
        .next();
    let iface = store
        .by_name::<Interface>(target.port)
        .map_err(|e| ovs_failed(target.port, e))?
        .into_iter()
        .next();
    let mut txn = vs.txn();
    let policing =
        iface.is_some_and(|i| i.ingress_policing_rate != 0 || i.ingress_policing_burst != 0);
    if policing {
        txn.set_ingress_policing(target.port, 0, 0)
            .map_err(|e| ovs_failed(target.port, e))?;
    }
    let mut port_qos = false;
    if let Some(port) = &port {
        if port.row.qos.is_some() {
            txn.set_port_qos_ref(target.port, None)
                .map_err(|e| ovs_failed(target.port, e))?;
            port_qos = true;
        }
    }
    port_qos |= destroy_ours(&mut txn, vs, target, port.map(|p| p.id), None)
        .map_err(|e| ovs_failed(target.port, e))?;
    if policing || port_qos {
        vs.commit(txn)
            .await
            .map_err(|e| ovs_failed(target.port, e))?;
    }
    Ok((policing, port_qos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policing_is_kbit_with_kube_ovns_eighty_percent_burst() {
        assert_eq!(policing(None), (0, 0));
        assert_eq!(policing(Some(10)), (10_000, 8_000));
        assert_eq!(policing(Some(3)), (3_000, 2_400));
    }

    #[test]
    fn ingress_rate_wins_over_netem_and_netem_is_in_microseconds() {
        let htb = wanted_qos(&QosSpec {
            ingress_rate: Some(10),
            latency: Some(50),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(htb.qos_type, HTB);
        let queue = htb.queue.unwrap();
        assert_eq!(queue["max-rate"], "10000000");
        assert_eq!(queue["burst"], "1000000");
        let netem = wanted_qos(&QosSpec {
            latency: Some(50),
            jitter: Some(2),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(netem.qos_type, NETEM);
        assert_eq!(netem.other_config["latency"], "50000");
        assert_eq!(netem.other_config["jitter"], "2000");
        assert!(netem.queue.is_none());
        assert_eq!(wanted_qos(&QosSpec::default()), None);
    }
}
