//! A token bucket (`tbf`) as the root qdisc of the pod's NIC, inside its namespace, over
//! rtnetlink: what holds pod egress to its rate on the userspace datapath.
//!
//! netlink-packet-route has no typed tbf options, so the request carries them as raw
//! attributes, laid out as `linux/pkt_sched.h` has them: `TCA_TBF_PARMS` (`struct
//! tc_tbf_qopt`: rate and peak rate `tc_ratespec`s, limit, buffer, mtu), `TCA_TBF_RATE64`
//! for rates past 4 GB/s, and `TCA_TBF_BURST` (bytes), which spares us the tick
//! arithmetic of `buffer`. With the link layer set to Ethernet the kernel needs no rate
//! table.

use futures::{StreamExt, TryStreamExt};
use rtnetlink::packet_core::{
    DefaultNla, NetlinkMessage, NetlinkPayload, Nla, NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE,
    NLM_F_REQUEST,
};
use rtnetlink::packet_route::link::LinkAttribute;
use rtnetlink::packet_route::tc::{TcAttribute, TcHandle, TcMessage, TcOption};
use rtnetlink::packet_route::RouteNetlinkMessage;

use super::QosError;
use crate::HostNetwork;

const KIND: &str = "tbf";
const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_BURST: u16 = 6;
const TC_LINKLAYER_ETHERNET: u8 = 1;
/// The smallest bucket: ten full-size frames, so a 1500-byte MTU always fits.
const MIN_BURST: u64 = 15_140;

/// One tbf's parameters, bytes and bytes/s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tbf {
    /// The rate, bytes/s.
    pub rate: u64,
    /// The bucket, bytes.
    pub burst: u32,
    /// Bytes that may wait in the queue.
    pub limit: u32,
}

impl Tbf {
    /// A tbf for `mbps` Mbit/s: a 10 ms bucket (at least ten frames) and a queue of
    /// 50 ms on top of it.
    pub fn for_rate_mbps(mbps: u64) -> Tbf {
        let rate = mbps.saturating_mul(125_000);
        let burst = (rate / 100).clamp(MIN_BURST, u64::from(u32::MAX / 2));
        let limit = (rate / 20).saturating_add(burst).min(u64::from(u32::MAX));
        Tbf {
            rate,
            burst: burst as u32,
            limit: limit as u32,
        }
    }

    /// `struct tc_tbf_qopt`.
    fn parms(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(36);
        // rate: cell_log, linklayer, overhead, cell_align, mpu, rate
        out.extend_from_slice(&[0, TC_LINKLAYER_ETHERNET]);
        out.extend_from_slice(&[0; 6]);
        out.extend_from_slice(&(self.rate.min(u64::from(u32::MAX)) as u32).to_ne_bytes());
        out.extend_from_slice(&[0; 12]); // no peak rate
        out.extend_from_slice(&self.limit.to_ne_bytes());
        out.extend_from_slice(&[0; 8]); // buffer (TCA_TBF_BURST instead), mtu
        out
    }

    /// Rate and limit of a dumped tbf's options (the burst comes back as ticks).
    fn parse(options: &[u8]) -> Option<(u64, u32)> {
        let (mut rate, mut limit, mut rate64) = (None, None, None);
        let mut at = 0;
        while at + 4 <= options.len() {
            let len = usize::from(u16::from_ne_bytes([options[at], options[at + 1]]));
            let kind = u16::from_ne_bytes([options[at + 2], options[at + 3]]) & 0x3fff;
            let value = options.get(at + 4..at + len.max(4))?;
            match kind {
                TCA_TBF_PARMS if value.len() >= 28 => {
                    rate = Some(u64::from(u32::from_ne_bytes(value[8..12].try_into().ok()?)));
                    limit = Some(u32::from_ne_bytes(value[24..28].try_into().ok()?));
                }
                TCA_TBF_RATE64 if value.len() >= 8 => {
                    rate64 = Some(u64::from_ne_bytes(value[..8].try_into().ok()?));
                }
                _ => {}
            }
            at += (len + 3) & !3;
            if len < 4 {
                break;
            }
        }
        Some((rate64.unwrap_or(0).max(rate?), limit?))
    }
}

/// Makes the root qdisc of `link` a tbf as `wanted`, or removes our tbf when `None`;
/// returns whether anything was written. A missing link is an error only when a tbf
/// is wanted.
pub(super) async fn ensure(
    net: &HostNetwork,
    link: &str,
    wanted: Option<Tbf>,
) -> Result<bool, QosError> {
    let fail = |op| {
        let (link, namespace) = (link.to_string(), net.namespace().to_string());
        move |source| QosError::Tc {
            op,
            link,
            namespace,
            source: Box::new(source),
        }
    };
    let Some(index) = link_index(net, link).await.map_err(fail("link dump"))? else {
        return match wanted {
            Some(_) => Err(QosError::LinkMissing {
                link: link.to_string(),
                namespace: net.namespace().to_string(),
            }),
            None => Ok(false),
        };
    };
    let current = root_tbf(net, index).await.map_err(fail("qdisc dump"))?;
    match (wanted, current) {
        (Some(want), Some(Some(have))) if have == (want.rate, want.limit) => Ok(false),
        (Some(want), _) => {
            replace(net, index, &want)
                .await
                .map_err(fail("qdisc replace"))?;
            Ok(true)
        }
        (None, Some(_)) => {
            let mut del = net.handle().qdisc().del(index as i32);
            del.message_mut().header.parent = TcHandle::ROOT;
            del.execute().await.map_err(fail("qdisc delete"))?;
            Ok(true)
        }
        (None, None) => Ok(false),
    }
}

/// [`ensure`] with no tbf wanted.
pub(super) async fn ensure_if_link(net: &HostNetwork, link: &str) -> Result<bool, QosError> {
    ensure(net, link, None).await
}

async fn link_index(net: &HostNetwork, name: &str) -> Result<Option<u32>, rtnetlink::Error> {
    let mut links = net.handle().link().get().execute();
    while let Some(link) = links.try_next().await? {
        let named = link
            .attributes
            .iter()
            .any(|a| matches!(a, LinkAttribute::IfName(n) if n == name));
        if named {
            return Ok(Some(link.header.index));
        }
    }
    Ok(None)
}

/// `None`: the root qdisc is not a tbf; `Some(None)`: a tbf we cannot read;
/// `Some(Some((rate, limit)))`.
async fn root_tbf(
    net: &HostNetwork,
    index: u32,
) -> Result<Option<Option<(u64, u32)>>, rtnetlink::Error> {
    let mut qdiscs = net.handle().qdisc().get().index(index as i32).execute();
    while let Some(qdisc) = qdiscs.try_next().await? {
        let is_root = qdisc.header.index == index as i32 && qdisc.header.parent == TcHandle::ROOT;
        let is_tbf = qdisc
            .attributes
            .iter()
            .any(|a| matches!(a, TcAttribute::Kind(k) if k == KIND));
        if !(is_root && is_tbf) {
            continue;
        }
        let options = qdisc.attributes.iter().find_map(|a| match a {
            TcAttribute::Options(opts) => opts.iter().find_map(|o| match o {
                TcOption::Other(nla) => {
                    let mut value = vec![0; nla.value_len()];
                    nla.emit_value(&mut value);
                    Some(value)
                }
                _ => None,
            }),
            _ => None,
        });
        return Ok(Some(options.and_then(|o| Tbf::parse(&o))));
    }
    Ok(None)
}

/// `tc qdisc replace dev LINK root tbf ...`.
async fn replace(net: &HostNetwork, index: u32, tbf: &Tbf) -> Result<(), rtnetlink::Error> {
    let mut msg = TcMessage::with_index(index as i32);
    msg.header.parent = TcHandle::ROOT;
    let mut options = vec![
        TcOption::Other(DefaultNla::new(TCA_TBF_PARMS, tbf.parms())),
        TcOption::Other(DefaultNla::new(
            TCA_TBF_BURST,
            tbf.burst.to_ne_bytes().to_vec(),
        )),
    ];
    if tbf.rate > u64::from(u32::MAX) {
        options.push(TcOption::Other(DefaultNla::new(
            TCA_TBF_RATE64,
            tbf.rate.to_ne_bytes().to_vec(),
        )));
    }
    msg.attributes.push(TcAttribute::Kind(KIND.to_string()));
    msg.attributes.push(TcAttribute::Options(options));
    let mut req = NetlinkMessage::from(RouteNetlinkMessage::NewQueueDiscipline(msg));
    req.header.flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE;
    let mut handle = net.handle();
    let mut response = handle.request(req)?;
    while let Some(message) = response.next().await {
        if let NetlinkPayload::Error(err) = message.payload {
            if err.code.is_some() {
                return Err(rtnetlink::Error::NetlinkError(err));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Tbf;

    #[test]
    fn ten_mbit_is_1_25_mb_per_second_with_a_frame_sized_bucket() {
        let tbf = Tbf::for_rate_mbps(10);
        assert_eq!(tbf.rate, 1_250_000);
        assert_eq!(tbf.burst, 15_140);
        assert_eq!(tbf.limit, 62_500 + 15_140);
    }

    #[test]
    fn parms_read_back_as_written() {
        let tbf = Tbf::for_rate_mbps(25);
        let parms = tbf.parms();
        assert_eq!(parms.len(), 36);
        let mut nla = ((4 + parms.len()) as u16).to_ne_bytes().to_vec();
        nla.extend_from_slice(&1u16.to_ne_bytes());
        nla.extend_from_slice(&parms);
        assert_eq!(Tbf::parse(&nla), Some((tbf.rate, tbf.limit)));
        assert_eq!(
            Tbf::parse(&nla[..10]),
            None,
            "a truncated attribute is no tbf"
        );
    }
}
