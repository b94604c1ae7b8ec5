//! The `kube-ovn` CNI binary (Kube-OVN's `cmd/cni`), on the `cni-spec` skeleton: it reads
//! the configuration (`server_socket`, `provider`, `routes`) and the pod from `CNI_ARGS`,
//! asks the daemon over its socket ([`client`]) and turns the answer into the CNI
//! result. ADD, DEL, CHECK, STATUS and GC are served (Kube-OVN's shim: ADD and DEL).
//!
//! Errors: a daemon that is down or does not answer in time, or that reports a transient
//! failure, gives code 11 (try again later) with the cause; a malformed configuration
//! code 7 naming the field, missing pod arguments code 4 naming the variable.

pub mod api;
pub mod client;

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use cni_spec::args::{K8S_POD_NAME, K8S_POD_NAMESPACE};
use cni_spec::plugin::{CmdArgs, Plugin};
use cni_spec::{
    CniError, CniResult, Dns, ErrorCode, Interface, IpConfig, PluginConfig, Route, V1Result,
};
use ipnet::IpNet;
use serde_json::Value;

use crate::api::{
    codes, CniRequest, CniResponse, DnsConfig, GcReport, RouteEntry, DEFAULT_PROVIDER, METHOD_ADD,
    METHOD_CHECK, METHOD_DEL, METHOD_GC, METHOD_STATUS,
};
use client::{call, CallError};

/// How long the binary waits for the daemon's answer to ADD: more than the daemon's own
/// bounded waits (annotations 20 s, ovn-installed 30 s, gateway 40 s) together.
pub const ADD_TIMEOUT: Duration = Duration::from_secs(120);
/// How long DEL, CHECK and GC wait.
pub const SHORT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long STATUS waits.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

/// The plugin.
#[derive(Debug, Clone)]
pub struct KubeOvnPlugin {
    /// Bound on ADD's answer.
    pub add_timeout: Duration,
    /// Bound on the other answers.
    pub short_timeout: Duration,
}

impl Default for KubeOvnPlugin {
    fn default() -> Self {
        KubeOvnPlugin {
            add_timeout: ADD_TIMEOUT,
            short_timeout: SHORT_TIMEOUT,
        }
    }
}

/// Kube-OVN's `NetConf` fields beyond the standard ones.
#[derive(Debug, Clone, PartialEq)]
pub struct NetConf {
    /// The daemon's socket (required).
    pub server_socket: PathBuf,
    /// The provider (default `ovn`).
    pub provider: String,
    /// Routes to add in the pod.
    pub routes: Vec<RouteEntry>,
}

impl NetConf {
    /// Reads the fields from the plugin's configuration; a missing or malformed one is
    /// error 7 naming it.
    pub fn from_config(config: &PluginConfig) -> Result<NetConf, CniError> {
        let invalid = |field: &str, why: &str| {
            CniError::new(ErrorCode::InvalidNetworkConfig, format!("{field}: {why}"))
        };
        let server_socket = match config.extra.get("server_socket") {
            Some(Value::String(s)) if !s.is_empty() => PathBuf::from(s),
            Some(_) => return Err(invalid("server_socket", "must be a non-empty string")),
            None => return Err(invalid("server_socket", "missing")),
        };
        let provider = match config.extra.get("provider") {
            None => DEFAULT_PROVIDER.to_string(),
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => return Err(invalid("provider", "must be a non-empty string")),
        };
        let routes = match config.extra.get("routes") {
            None => Vec::new(),
            Some(value) => serde_json::from_value::<Vec<RouteEntry>>(value.clone())
                .map_err(|e| invalid("routes", &format!("expected [{{\"dst\",\"gw\"}}]: {e}")))?,
        };
        Ok(NetConf {
            server_socket,
            provider,
            routes,
        })
    }
}

impl KubeOvnPlugin {
    fn request(
        &self,
        command: &str,
        args: &CmdArgs,
        config: &PluginConfig,
        conf: &NetConf,
    ) -> Result<CniRequest, CniError> {
        let pod_arg = |key: &str| {
            args.args
                .get(key)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .ok_or_else(|| {
                    CniError::new(
                        ErrorCode::InvalidEnvironmentVariables,
                        format!("CNI_ARGS: {key} missing"),
                    )
                })
        };
        let (pod_name, pod_namespace) = match command {
            // a DEL after the pod is gone may come without them: the daemon needs none
            "DEL" => (
                pod_arg(K8S_POD_NAME).unwrap_or_default(),
                pod_arg(K8S_POD_NAMESPACE).unwrap_or_default(),
            ),
            _ => (pod_arg(K8S_POD_NAME)?, pod_arg(K8S_POD_NAMESPACE)?),
        };
        let dns = config.dns.clone().unwrap_or_default();
        Ok(CniRequest {
            cni_type: config.plugin_type.clone(),
            command: command.to_string(),
            pod_name,
            pod_namespace,
            container_id: args.container_id.clone(),
            net_ns: args
                .netns
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            if_name: args.ifname.clone(),
            provider: conf.provider.clone(),
            routes: conf.routes.clone(),
            dns: DnsConfig {
                nameservers: dns.nameservers,
                domain: dns.domain.unwrap_or_default(),
                search: dns.search,
                options: dns.options,
            },
        })
    }
}

/// The daemon's failure as a CNI error: transient ones (daemon down or slow, something
/// not ready) are 11, a refused request 7, with the daemon's message.
fn cni_error(method: &str, error: CallError) -> CniError {
    let code = match &error {
        CallError::Rpc { code, .. } if *code == codes::INVALID_REQUEST => {
            ErrorCode::InvalidNetworkConfig
        }
        _ => ErrorCode::TryAgainLater,
    };
    CniError::new(code, format!("kube-ovn daemon {method} failed"))
        .with_details(crate::error_chain(&error))
}

impl Plugin for KubeOvnPlugin {
    fn add(&self, args: &CmdArgs, config: &PluginConfig) -> Result<CniResult, CniError> {
        let conf = NetConf::from_config(config)?;
        let req = self.request("ADD", args, config, &conf)?;
        let answer: CniResponse = call(
            &conf.server_socket,
            METHOD_ADD,
            Some(&req),
            self.add_timeout,
        )
        .map_err(|e| cni_error(METHOD_ADD, e))?;
        to_result(&answer, &req.net_ns, config.dns.clone())
    }

    fn del(&self, args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError> {
        let conf = NetConf::from_config(config)?;
        let req = self.request("DEL", args, config, &conf)?;
        call::<_, Value>(
            &conf.server_socket,
            METHOD_DEL,
            Some(&req),
            self.short_timeout,
        )
        .map(drop)
        .map_err(|e| cni_error(METHOD_DEL, e))
    }

    fn check(&self, args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError> {
        let conf = NetConf::from_config(config)?;
        let req = self.request("CHECK", args, config, &conf)?;
        call::<_, Value>(
            &conf.server_socket,
            METHOD_CHECK,
            Some(&req),
            self.short_timeout,
        )
        .map(drop)
        .map_err(|e| cni_error(METHOD_CHECK, e))
    }

    fn status(&self, _args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError> {
        let conf = NetConf::from_config(config)?;
        call::<(), Value>(&conf.server_socket, METHOD_STATUS, None, STATUS_TIMEOUT)
            .map(drop)
            .map_err(|e| {
                CniError::new(
                    ErrorCode::PluginNotAvailable,
                    "kube-ovn daemon not available",
                )
                .with_details(crate::error_chain(&e))
            })
    }

    fn gc(&self, _args: &CmdArgs, config: &PluginConfig) -> Result<(), CniError> {
        let conf = NetConf::from_config(config)?;
        call::<(), GcReport>(&conf.server_socket, METHOD_GC, None, self.short_timeout)
            .map(drop)
            .map_err(|e| cni_error(METHOD_GC, e))
    }
}

/// The CNI result (Kube-OVN's `generateCNIResult`): one interface in the sandbox, an IP
/// per family on it, the routes (a default route per gateway when the daemon named
/// none), the DNS.
pub fn to_result(
    answer: &CniResponse,
    netns: &str,
    conf_dns: Option<Dns>,
) -> Result<CniResult, CniError> {
    let bad = |what: String| CniError::new(ErrorCode::INTERNAL, format!("daemon answer: {what}"));
    let mut result = V1Result::empty();
    result.interfaces.push(Interface {
        name: answer.nicname.clone(),
        mac: Some(answer.mac_address.clone()),
        mtu: Some(answer.mtu),
        sandbox: Some(netns.to_string()),
        ..Default::default()
    });
    let mut gateways = Vec::new();
    for ip in &answer.ips {
        let addr: IpAddr = ip
            .ip
            .parse()
            .map_err(|e| bad(format!("ip {:?}: {e}", ip.ip)))?;
        let cidr: IpNet = ip
            .cidr
            .parse()
            .map_err(|e| bad(format!("cidr {:?}: {e}", ip.cidr)))?;
        let address = IpNet::new(addr, cidr.prefix_len()).map_err(|e| bad(e.to_string()))?;
        let gateway = match ip.gateway.as_str() {
            "" => None,
            g => Some(
                g.parse::<IpAddr>()
                    .map_err(|e| bad(format!("gateway {g:?}: {e}")))?,
            ),
        };
        gateways.extend(gateway);
        result.ips.push(IpConfig {
            interface: Some(0),
            address,
            gateway,
        });
    }
    for r in &answer.routes {
        let dst: IpNet = match r.destination.as_str() {
            "" => "0.0.0.0/0".parse().expect("literal"),
            d => d
                .parse()
                .map_err(|e| bad(format!("route dst {d:?}: {e}")))?,
        };
        let gw = match r.gateway.as_str() {
            "" => None,
            g => Some(g.parse().map_err(|e| bad(format!("route gw {g:?}: {e}")))?),
        };
        result.routes.push(Route::new(dst, gw));
    }
    if answer.routes.is_empty() {
        for gw in gateways {
            result
                .routes
                .push(Route::new(default_destination(gw), Some(gw)));
        }
    }
    let dns = Dns {
        nameservers: answer.dns.nameservers.clone(),
        domain: (!answer.dns.domain.is_empty()).then(|| answer.dns.domain.clone()),
        search: answer.dns.search.clone(),
        options: answer.dns.options.clone(),
    };
    result.dns = if dns.is_empty() { conf_dns } else { Some(dns) };
    Ok(result.into())
}

/// The destination of a default route via `gateway`: `0.0.0.0/0` or `::/0`.
fn default_destination(gateway: IpAddr) -> IpNet {
    match gateway {
        IpAddr::V4(_) => IpNet::V4(Default::default()),
        IpAddr::V6(_) => IpNet::V6(Default::default()),
    }
}

/// The error and its causes on one line, for a log record.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::IpResponse;

    fn config(extra: serde_json::Value) -> PluginConfig {
        let mut base =
            serde_json::json!({"cniVersion": "0.3.1", "name": "kube-ovn", "type": "kube-ovn"});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn netconf_reads_kube_ovns_fields_and_names_the_bad_one() {
        let conf = NetConf::from_config(&config(serde_json::json!({
            "server_socket": "/run/openvswitch/kube-ovn-daemon.sock",
            "routes": [{"dst": "10.0.0.0/8", "gw": "10.16.0.254"}],
        })))
        .unwrap();
        assert_eq!(conf.provider, "ovn");
        assert_eq!(conf.routes[0].destination, "10.0.0.0/8");
        for (extra, field) in [
            (serde_json::json!({}), "server_socket"),
            (serde_json::json!({"server_socket": 3}), "server_socket"),
            (
                serde_json::json!({"server_socket": "/s", "provider": ""}),
                "provider",
            ),
            (
                serde_json::json!({"server_socket": "/s", "routes": {"dst": 1}}),
                "routes",
            ),
        ] {
            let err = NetConf::from_config(&config(extra)).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidNetworkConfig);
            assert!(err.msg.starts_with(field), "{}", err.msg);
        }
    }

    #[test]
    fn result_has_the_interface_addresses_and_default_routes() {
        let answer = CniResponse {
            ips: vec![
                IpResponse {
                    protocol: "IPv4".into(),
                    ip: "10.16.0.5".into(),
                    cidr: "10.16.0.0/16".into(),
                    gateway: "10.16.0.1".into(),
                },
                IpResponse {
                    protocol: "IPv6".into(),
                    ip: "fd00::5".into(),
                    cidr: "fd00::/112".into(),
                    gateway: "fd00::1".into(),
                },
            ],
            mac_address: "00:00:00:12:34:56".into(),
            mtu: 1400,
            nicname: "eth0".into(),
            ..Default::default()
        };
        let value = to_result(&answer, "/var/run/netns/p", None)
            .unwrap()
            .to_value();
        assert_eq!(value["interfaces"][0]["sandbox"], "/var/run/netns/p");
        assert_eq!(value["ips"][0]["address"], "10.16.0.5/16");
        assert_eq!(value["ips"][1]["address"], "fd00::5/112");
        assert_eq!(value["routes"][0]["dst"], "0.0.0.0/0");
        assert_eq!(value["routes"][1]["dst"], "::/0");
        assert_eq!(value["routes"][1]["gw"], "fd00::1");
    }

    #[test]
    fn a_malformed_daemon_answer_is_an_error_naming_the_field() {
        let answer = CniResponse {
            ips: vec![IpResponse {
                protocol: "IPv4".into(),
                ip: "10.16.0.500".into(),
                cidr: "10.16.0.0/16".into(),
                gateway: String::new(),
            }],
            ..Default::default()
        };
        let err = to_result(&answer, "/p", None).unwrap_err();
        assert!(err.msg.contains("10.16.0.500"), "{}", err.msg);
    }

    #[test]
    fn the_request_carries_kube_ovns_field_names() {
        let req = CniRequest {
            pod_name: "web-0".into(),
            net_ns: "/var/run/netns/x".into(),
            ..Default::default()
        };
        let v = serde_json::to_value(&req).unwrap();
        for key in [
            "cni_type",
            "pod_name",
            "pod_namespace",
            "container_id",
            "net_ns",
            "if_name",
            "provider",
        ] {
            assert!(v.get(key).is_some(), "{key} missing in {v}");
        }
    }
}
