//! The 1.0.0 / 1.1.0 result layout. Like 0.4.0 without `ips[].version`; 1.1.0 adds
//! interface `mtu`, `socketPath`, `pciID` and route attributes (see [`Route`]).
//!
//! ```json
//! {"cniVersion":"1.1.0",
//!  "interfaces":[{"name":"eth0","mac":"aa:bb:cc:dd:ee:ff","mtu":1500,"sandbox":"/run/netns/x"}],
//!  "ips":[{"interface":0,"address":"10.1.0.5/16","gateway":"10.1.0.1"}],
//!  "routes":[{"dst":"0.0.0.0/0","priority":100}]}
//! ```

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::common::{dns_is_empty, non_empty_dns, Dns, Route};
use crate::version::CniVersion;

/// A 1.0.0 or 1.1.0 result; plugins usually build this one and let the skeleton convert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct V1Result {
    /// `1.0.0` or `1.1.0`.
    #[serde(rename = "cniVersion")]
    pub cni_version: CniVersion,
    /// Interfaces created or configured; IPAM results have none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
    /// Assigned addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<IpConfig>,
    /// Routes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// DNS settings.
    #[serde(
        default,
        skip_serializing_if = "dns_is_empty",
        deserialize_with = "non_empty_dns"
    )]
    pub dns: Option<Dns>,
}

impl V1Result {
    /// An empty result of the current version.
    pub fn empty() -> Self {
        V1Result {
            cni_version: crate::version::CURRENT_VERSION,
            interfaces: Vec::new(),
            ips: Vec::new(),
            routes: Vec::new(),
            dns: None,
        }
    }
}

/// An interface in a 1.x result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    /// Interface name.
    pub name: String,
    /// Hardware address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// 1.1.0: MTU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// The network namespace path for container interfaces; absent for host interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// 1.1.0: path of a socket (e.g. vhost-user) standing for the interface.
    #[serde(
        rename = "socketPath",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub socket_path: Option<String>,
    /// 1.1.0: PCI address of a device standing for the interface.
    #[serde(rename = "pciID", default, skip_serializing_if = "Option::is_none")]
    pub pci_id: Option<String>,
}

/// An address in a 1.x result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpConfig {
    /// Index into `interfaces`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<i32>,
    /// The address with its prefix length.
    pub address: IpNet,
    /// The gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
}
