//! Route messages to and from [`RouteSpec`].
//!
//! A route we install is `RTM_NEWROUTE` with protocol `static`, scope
//! `universe` when it has a gateway and `link` when it does not, the output
//! interface (`RTA_OIF`), an optional metric (`RTA_PRIORITY`) and a table:
//! the header's 8-bit field holds tables below 256, `RTA_TABLE` any other.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use rtnetlink::packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope,
};
use rtnetlink::RouteMessageBuilder;

use crate::error::{Cause, Error, Step};
use crate::RouteSpec;

/// The main routing table.
pub const MAIN_TABLE: u32 = RouteHeader::RT_TABLE_MAIN as u32;

/// A default route (`0.0.0.0/0` or `::/0`) via `gateway`.
pub fn default_route(gateway: IpAddr) -> RouteSpec {
    let any = match gateway {
        IpAddr::V4(_) => IpNet::new(Ipv4Addr::UNSPECIFIED.into(), 0),
        IpAddr::V6(_) => IpNet::new(Ipv6Addr::UNSPECIFIED.into(), 0),
    };
    RouteSpec::via(any.expect("prefix 0 is valid"), gateway)
}

pub(crate) fn to_message(
    spec: &RouteSpec,
    oif: u32,
    interface: &str,
    namespace: &str,
) -> Result<RouteMessage, Error> {
    let invalid = |e: &dyn std::fmt::Display| {
        Error::step(
            Step::AddRoute,
            format!("{interface} ({})", spec.destination),
            namespace,
            Cause::Netlink(e.to_string()),
        )
    };
    let mut builder = RouteMessageBuilder::<IpAddr>::new()
        .destination_prefix(spec.destination.network(), spec.destination.prefix_len())
        .map_err(|e| invalid(&e))?
        .output_interface(oif);
    builder = match spec.gateway {
        Some(gw) => builder.gateway(gw).map_err(|e| invalid(&e))?,
        None => builder.scope(RouteScope::Link),
    };
    if let Some(metric) = spec.metric {
        builder = builder.priority(metric);
    }
    if let Some(table) = spec.table {
        builder = builder.table_id(table);
    }
    Ok(builder.build())
}

/// A route read back from the kernel, as far as we configure routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InstalledRoute {
    pub(crate) oif: Option<u32>,
    pub(crate) protocol: RouteProtocol,
    pub(crate) spec: RouteSpec,
}

fn ip_of(addr: &RouteAddress) -> Option<IpAddr> {
    match addr {
        RouteAddress::Inet(v4) => Some(IpAddr::V4(*v4)),
        RouteAddress::Inet6(v6) => Some(IpAddr::V6(*v6)),
        _ => None,
    }
}

pub(crate) fn from_message(msg: &RouteMessage) -> Option<InstalledRoute> {
    let prefix = msg.header.destination_prefix_length;
    let mut destination = None;
    let mut gateway = None;
    let mut oif = None;
    let mut metric = None;
    let mut table = u32::from(msg.header.table);
    for attr in &msg.attributes {
        match attr {
            RouteAttribute::Destination(a) => destination = ip_of(a),
            RouteAttribute::Gateway(a) => gateway = ip_of(a),
            RouteAttribute::Oif(i) => oif = Some(*i),
            RouteAttribute::Priority(p) => metric = Some(*p),
            RouteAttribute::Table(t) => table = *t,
            _ => {}
        }
    }
    let destination = match destination {
        Some(ip) => IpNet::new(ip, prefix).ok()?,
        None => match msg.header.address_family {
            rtnetlink::packet_route::AddressFamily::Inet => {
                IpNet::new(Ipv4Addr::UNSPECIFIED.into(), 0).ok()?
            }
            rtnetlink::packet_route::AddressFamily::Inet6 => {
                IpNet::new(Ipv6Addr::UNSPECIFIED.into(), 0).ok()?
            }
            _ => return None,
        },
    };
    Some(InstalledRoute {
        oif,
        protocol: msg.header.protocol,
        spec: RouteSpec {
            destination,
            gateway,
            metric,
            table: (table != MAIN_TABLE).then_some(table),
        },
    })
}

/// Does the installed route satisfy what was asked? A metric left open in
/// the request matches any metric (the kernel gives IPv6 routes 1024).
pub(crate) fn satisfies(installed: &RouteSpec, wanted: &RouteSpec) -> bool {
    installed.destination == wanted.destination.trunc()
        && installed.gateway == wanted.gateway
        && installed.table == wanted.table.filter(|t| *t != MAIN_TABLE)
        && (wanted.metric.is_none() || installed.metric == wanted.metric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_round_trip() {
        let spec = RouteSpec {
            destination: "192.168.7.0/24".parse().unwrap(),
            gateway: Some("10.0.0.1".parse().unwrap()),
            metric: Some(50),
            table: Some(1000),
        };
        let msg = to_message(&spec, 7, "eth0", "ns").unwrap();
        assert_eq!(msg.header.scope, RouteScope::Universe);
        let back = from_message(&msg).unwrap();
        assert_eq!(back.oif, Some(7));
        assert_eq!(back.spec, spec);
        assert!(satisfies(&back.spec, &spec));
    }

    #[test]
    fn link_scope_and_default() {
        let spec = RouteSpec {
            destination: "fd00:1::/64".parse().unwrap(),
            gateway: None,
            metric: None,
            table: Some(MAIN_TABLE),
        };
        let msg = to_message(&spec, 3, "eth0", "ns").unwrap();
        assert_eq!(msg.header.scope, RouteScope::Link);
        let back = from_message(&msg).unwrap().spec;
        assert_eq!(back.table, None);
        assert!(satisfies(&back, &spec));
        let def = default_route("fd00::1".parse().unwrap());
        assert_eq!(def.destination.to_string(), "::/0");
        let mut installed = from_message(&to_message(&def, 3, "eth0", "ns").unwrap())
            .unwrap()
            .spec;
        installed.metric = Some(1024);
        assert!(satisfies(&installed, &def));
    }
}
