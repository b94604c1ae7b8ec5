//! Link configuration through iproute2. Commands for the container run under
//! `nsenter --net=<CNI_NETNS>`, which works for any namespace path.

use std::net::IpAddr;
use std::process::Command;

use cni_spec::{CniError, IpFamily, V1Result};
use ipnet::IpNet;
use serde_json::Value;

use super::LINK_FAILED;

/// The alias prefix marking host-side links this plugin owns (for GC); the alias is
/// `cni-spec:<network>:<containerID>:<ifname>` (none of these can contain `:`).
const ALIAS_PREFIX: &str = "cni-spec";

/// Runs `ip` in the host namespace.
pub fn ip(args: &[&str]) -> Result<String, CniError> {
    ip_in("", args)
}

/// Runs `ip` in the namespace at path `ns` (the host's when empty).
pub fn ip_in(ns: &str, args: &[&str]) -> Result<String, CniError> {
    let mut cmd = if ns.is_empty() {
        Command::new("ip")
    } else {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net={ns}")).arg("ip");
        c
    };
    let out = cmd
        .args(args)
        .output()
        .map_err(|e| CniError::new(LINK_FAILED, "cannot run ip").with_details(e.to_string()))?;
    if !out.status.success() {
        return Err(
            CniError::new(LINK_FAILED, format!("ip {} failed", args.join(" ")))
                .with_details(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn json(text: &str) -> Result<Value, CniError> {
    serde_json::from_str(text).map_err(|e| {
        CniError::new(LINK_FAILED, "unreadable ip -j output").with_details(e.to_string())
    })
}

/// A missing link is success for deletion (DEL must be idempotent).
fn ignore_missing(result: Result<String, CniError>) -> Result<(), CniError> {
    // "No such device" (ENODEV) comes when the link vanishes between `ip`'s lookup and
    // its delete: the kernel tears a veth down asynchronously once its netns is gone.
    const GONE: [&str; 3] = ["Cannot find device", "does not exist", "No such device"];
    match result {
        Err(e) if GONE.iter().any(|m| e.details.contains(m)) => Ok(()),
        other => other.map(drop),
    }
}

/// The MAC address of `ifname` in `ns`.
pub fn mac_in(ns: &str, ifname: &str) -> Result<String, CniError> {
    let links = json(&ip_in(ns, &["-j", "link", "show", "dev", ifname])?)?;
    links[0]["address"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| {
            CniError::new(LINK_FAILED, "link has no address").with_details(ifname.to_owned())
        })
}

/// The addresses on `ifname` in `ns`.
pub fn addresses_in(ns: &str, ifname: &str) -> Result<Vec<IpNet>, CniError> {
    let links = json(&ip_in(ns, &["-j", "addr", "show", "dev", ifname])?)?;
    let infos = links[0]["addr_info"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    Ok(infos
        .iter()
        .filter_map(|a| {
            let local: IpAddr = a["local"].as_str()?.parse().ok()?;
            IpNet::new(local, a["prefixlen"].as_u64()? as u8).ok()
        })
        .collect())
}

/// Host-side links of `network` this plugin created: (host name, container ID, ifname).
pub fn owned_links(network: &str) -> Result<Vec<(String, String, String)>, CniError> {
    let links = json(&ip(&["-j", "link", "show"])?)?;
    let prefix = format!("{ALIAS_PREFIX}:{network}:");
    Ok(links
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| {
            let rest = l["ifalias"].as_str()?.strip_prefix(&prefix)?;
            let (cid, ifname) = rest.split_once(':')?;
            Some((
                l["ifname"].as_str()?.to_owned(),
                cid.to_owned(),
                ifname.to_owned(),
            ))
        })
        .collect())
}

/// The veth pair of one attachment.
#[derive(Debug)]
pub struct Veth {
    /// Host-side name.
    pub host: String,
    /// Container-side name.
    pub container: String,
    alias: String,
}

impl Veth {
    /// Names derived from the attachment, so DEL finds the pair without a cache.
    pub fn for_attachment(network: &str, container_id: &str, ifname: &str) -> Self {
        // FNV-1a: stable across runs and Rust versions, unlike std's hasher.
        let mut hash: u32 = 0x811c_9dc5;
        for byte in format!("{network}/{container_id}/{ifname}").bytes() {
            hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
        }
        Veth {
            host: format!("vcs{hash:08x}"),
            container: ifname.to_owned(),
            alias: format!("{ALIAS_PREFIX}:{network}:{container_id}:{ifname}"),
        }
    }

    /// Creates the pair with the container end inside `ns` and brings both up.
    pub fn create(&self, ns: &str, mtu: Option<u64>) -> Result<(), CniError> {
        let mtu = mtu.map(|m| m.to_string());
        let mut args = vec!["link", "add", self.host.as_str()];
        if let Some(m) = &mtu {
            args.extend(["mtu", m.as_str()]);
        }
        args.extend(["type", "veth", "peer", "name", self.container.as_str()]);
        if let Some(m) = &mtu {
            args.extend(["mtu", m.as_str()]);
        }
        args.extend(["netns", ns]);
        ip(&args)?;
        ip(&["link", "set", "dev", &self.host, "alias", &self.alias, "up"])?;
        ip_in(ns, &["link", "set", "dev", &self.container, "up"])?;
        Ok(())
    }

    /// Adds the result's addresses and routes to the container end. A route without a
    /// gateway goes via the gateway of its family, as the reference's `ConfigureIface`.
    pub fn configure(&self, ns: &str, result: &V1Result) -> Result<(), CniError> {
        for ipc in &result.ips {
            let addr = ipc.address.to_string();
            let mut args = vec!["addr", "add", addr.as_str(), "dev", self.container.as_str()];
            if IpFamily::of(ipc.address.addr()) == IpFamily::V6 {
                args.push("nodad");
            }
            ip_in(ns, &args)?;
        }
        for route in &result.routes {
            let family = IpFamily::of(route.dst.addr());
            let gw = route.gw.or_else(|| {
                result
                    .ips
                    .iter()
                    .find(|i| IpFamily::of(i.address.addr()) == family)
                    .and_then(|i| i.gateway)
            });
            let dst = route.dst.to_string();
            let gw = gw.map(|g| g.to_string());
            let mut args = vec!["route", "add", dst.as_str()];
            if let Some(g) = &gw {
                args.extend(["via", g.as_str()]);
            }
            args.extend(["dev", self.container.as_str()]);
            ip_in(ns, &args)?;
        }
        Ok(())
    }

    /// Deletes the pair (either end removes both); missing links are fine.
    pub fn delete(&self, ns: &str) -> Result<(), CniError> {
        if !ns.is_empty() {
            ignore_missing(ip_in(ns, &["link", "del", "dev", &self.container]))?;
        }
        ignore_missing(ip(&["link", "del", "dev", &self.host]))
    }
}
