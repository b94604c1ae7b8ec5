//! `cni-spec-veth`: a small CNI plugin built on the `cni-spec` skeleton.
//!
//! ADD creates a veth pair, one end named `CNI_IFNAME` in the container's network
//! namespace, the other on the host (`vcs` + a hash of container ID and interface); it
//! delegates address management to the `ipam` plugin (e.g. `host-local`) and configures the
//! addresses and routes it returns inside the container. DEL, CHECK, STATUS and GC do what
//! the spec asks of them. Links are configured with iproute2 (`ip`, `nsenter`), which keeps
//! this example free of netlink code.
//!
//! Plugin-specific configuration: `"mtu"` (optional, container side).

mod link;

use cni_spec::plugin::{self, CmdArgs, Plugin};
use cni_spec::{CniError, CniResult, ErrorCode, Interface, IpamConfig, PluginConfig, V1Result};

use link::{ip, ip_in, Veth};

/// Plugin-specific error code: an `ip` command failed.
const LINK_FAILED: ErrorCode = ErrorCode::Plugin(100);

#[derive(Debug)]
struct VethPlugin;

fn ipam(config: &PluginConfig) -> Result<&IpamConfig, CniError> {
    config
        .ipam
        .as_ref()
        .filter(|i| !i.plugin_type.is_empty())
        .ok_or_else(|| CniError::new(ErrorCode::InvalidNetworkConfig, "missing ipam type"))
}

fn netns(args: &CmdArgs) -> Result<String, CniError> {
    args.netns
        .as_ref()
        .map(|p| p.display().to_string())
        .ok_or_else(|| CniError::new(ErrorCode::InvalidEnvironmentVariables, "missing CNI_NETNS"))
}

impl VethPlugin {
    /// Creates and configures the pair; on failure the caller releases the IPAM lease.
    fn attach(
        &self,
        args: &CmdArgs,
        config: &PluginConfig,
        ipam_result: &V1Result,
    ) -> Result<V1Result, CniError> {
        let ns = netns(args)?;
        let veth = Veth::for_attachment(&config.name, &args.container_id, &args.ifname);
        let mtu = config.extra.get("mtu").and_then(|v| v.as_u64());
        veth.create(&ns, mtu)?;
        let configured = veth.configure(&ns, ipam_result);
        if let Err(e) = configured {
            let _ = veth.delete(&ns);
            return Err(e);
        }
        let container_mac = link::mac_in(&ns, &args.ifname)?;
        let host_mac = link::mac_in("", &veth.host)?;
        let mut result = ipam_result.clone();
        result.interfaces = vec![
            Interface {
                name: veth.host.clone(),
                mac: Some(host_mac),
                ..Interface::default()
            },
            Interface {
                name: args.ifname.clone(),
                mac: Some(container_mac),
                mtu: mtu.map(|m| m as u32),
                sandbox: Some(ns),
                ..Interface::default()
            },
        ];
        for ip in &mut result.ips {
            ip.interface = Some(1);
        }
        if let Some(dns) = &config.dns {
            result.dns = Some(dns.clone());
        }
        Ok(result)
    }
}

impl Plugin for VethPlugin {
    fn add(&self, args: &CmdArgs, config: &PluginConfig) -> Result<CniResult, CniError> {
        let ipam = ipam(config)?;
        let leased = plugin::delegate_add(&ipam.plugin_type, &args.stdin, args)?;
        let ipam_result = leased
            .to_current()
            .map_err(|e| CniError::new(ErrorCode::INTERNAL, e.to_string()))?;
        match self.attach(args, config, &ipam_result) {
            Ok(result) => Ok(result.into()),
            Err(e) => {
                // Spec section 4: release what the delegate allocated before failing.
                let _ = plugin::delegate_del(&ipam.plugin_type, &args.stdin, args);
                Err(e)
            }
        }
    }

    fn del(&self, args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError> {
        let ipam = ipam(config)?;
        plugin::delegate_del(&ipam.plugin_type, &args.stdin, args)?;
        let veth = Veth::for_attachment(&config.name, &args.container_id, &args.ifname);
        let ns = args
            .netns
            .as_ref()
            .filter(|p| p.exists())
            .map(|p| p.display().to_string());
        veth.delete(ns.as_deref().unwrap_or(""))
    }

    fn check(&self, args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError> {
        let ipam = ipam(config)?;
        let prev = config
            .prev_result()
            .map_err(|e| CniError::new(ErrorCode::DecodingFailure, e.to_string()))?
            .ok_or_else(|| CniError::new(ErrorCode::InvalidNetworkConfig, "missing prevResult"))?
            .to_current()
            .map_err(|e| CniError::new(ErrorCode::INTERNAL, e.to_string()))?;
        let ns = netns(args)?;
        let index = prev
            .interfaces
            .iter()
            .position(|i| i.name == args.ifname && i.sandbox.is_some())
            .ok_or_else(|| {
                CniError::new(
                    ErrorCode::InvalidNetworkConfig,
                    "prevResult lacks the interface",
                )
                .with_details(args.ifname.clone())
            })?;
        let present = link::addresses_in(&ns, &args.ifname)?;
        for ip in prev
            .ips
            .iter()
            .filter(|ip| ip.interface == Some(index as i32))
        {
            if !present.contains(&ip.address) {
                return Err(CniError::new(LINK_FAILED, "address missing on interface")
                    .with_details(format!("{} on {}", ip.address, args.ifname)));
            }
        }
        plugin::delegate_check(&ipam.plugin_type, &args.stdin, args)
    }

    fn status(&self, args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError> {
        let ipam = ipam(config)?;
        if cni_spec::exec::find_plugin(&ipam.plugin_type, &args.path).is_err() {
            return Err(CniError::new(
                ErrorCode::PluginNotAvailable,
                format!("IPAM plugin {:?} not found in CNI_PATH", ipam.plugin_type),
            ));
        }
        ip(&["-V"]).map_err(|e| CniError::new(ErrorCode::PluginNotAvailable, e.msg))?;
        plugin::delegate_status(&ipam.plugin_type, &args.stdin, args).map(drop)
    }

    fn gc(&self, args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError> {
        let valid = config
            .valid_attachments()
            .map_err(|e| CniError::new(ErrorCode::DecodingFailure, e.to_string()))?
            .unwrap_or_default();
        for (host, container_id, ifname) in link::owned_links(&config.name)? {
            let still_used = valid
                .iter()
                .any(|a| a.container_id == container_id && a.ifname == ifname);
            if !still_used {
                tracing::info!(host, container_id, ifname, "GC: deleting stale veth");
                ip_in("", &["link", "del", "dev", &host])?;
            }
        }
        if let Ok(ipam) = ipam(config) {
            plugin::delegate_gc(&ipam.plugin_type, &args.stdin, args)?;
        }
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    plugin::run(&VethPlugin)
}
