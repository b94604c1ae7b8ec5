//! The 0.1.0 / 0.2.0 result layout: one `ip4` and one `ip6` object, routes per family.
//!
//! ```json
//! {"cniVersion":"0.2.0","ip4":{"ip":"10.1.0.5/16","gateway":"10.1.0.1",
//!   "routes":[{"dst":"0.0.0.0/0"}]},"dns":{"nameservers":["10.1.0.1"]}}
//! ```

use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::common::{dns_is_empty, non_empty_dns, Dns, Route};
use crate::version::CniVersion;

/// A 0.1.0 or 0.2.0 result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyResult {
    /// `0.1.0` or `0.2.0`.
    #[serde(rename = "cniVersion")]
    pub cni_version: CniVersion,
    /// The IPv4 configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip4: Option<LegacyIpConfig>,
    /// The IPv6 configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip6: Option<LegacyIpConfig>,
    /// DNS settings.
    #[serde(
        default,
        skip_serializing_if = "dns_is_empty",
        deserialize_with = "non_empty_dns"
    )]
    pub dns: Option<Dns>,
}

/// One family's address, gateway and routes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyIpConfig {
    /// The address with its prefix length, e.g. `10.1.0.5/16`.
    pub ip: IpNet,
    /// The gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    /// Routes of this family (only `dst` and `gw` are meaningful here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
}
