//! The 0.3.0 / 0.3.1 / 0.4.0 result layout: interfaces, IPs tagged with their family,
//! routes and DNS.
//!
//! ```json
//! {"cniVersion":"0.4.0",
//!  "interfaces":[{"name":"eth0","mac":"aa:bb:cc:dd:ee:ff","sandbox":"/run/netns/x"}],
//!  "ips":[{"version":"4","interface":0,"address":"10.1.0.5/16","gateway":"10.1.0.1"}],
//!  "routes":[{"dst":"0.0.0.0/0"}]}
//! ```

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::common::{dns_is_empty, non_empty_dns, Dns, IpFamily, Route};
use crate::version::CniVersion;

/// A 0.3.0, 0.3.1 or 0.4.0 result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RichResult {
    /// `0.3.0`, `0.3.1` or `0.4.0`.
    #[serde(rename = "cniVersion")]
    pub cni_version: CniVersion,
    /// Interfaces created or configured; IPAM results have none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<RichInterface>,
    /// Assigned addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ips: Vec<RichIpConfig>,
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

/// An interface in a 0.3.x/0.4.0 result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RichInterface {
    /// Interface name.
    pub name: String,
    /// Hardware address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// The network namespace path for container interfaces; absent for host interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
}

/// An address in a 0.3.x/0.4.0 result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RichIpConfig {
    /// `"4"` or `"6"`. Required by the spec; some plugins leave it out, then the address
    /// family decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<IpFamily>,
    /// Index into `interfaces` (some plugins use -1 for "none").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<i32>,
    /// The address with its prefix length.
    pub address: IpNet,
    /// The gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
}

impl RichIpConfig {
    /// The family from `version`, or from the address when `version` is absent.
    pub fn family(&self) -> IpFamily {
        self.version
            .unwrap_or_else(|| IpFamily::of(self.address.addr()))
    }
}
