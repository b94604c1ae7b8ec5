//! CNI ADD on the node (Kube-OVN's `handleAdd` and `configureNic`): wait for the
//! controller's annotations, build the veth and the pod's addresses and routes, plug the
//! host end into `br-int` bound to the logical port, wait for `ovn-installed`, check the
//! gateway, answer what the CNI result needs. Any failure after the veth exists removes
//! the port and the veth again.

use std::future::Future;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use datapath::{GatewayCheck, MacAddr, PodInterface, RouteSpec};
use futures::StreamExt;
use ipnet::IpNet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{WatchEvent, WatchParams};
use kube::Api;
use ovs_vsctl::InterfaceSpec;
use tracing::field::Empty;
use tracing::Instrument;

use super::handler::{CniDaemon, CniFailure};
use super::qos::{self, QosSpec, QosTarget};
use kube_ovn_api::annotations::{PodNetwork, Provider};
use kube_ovn_api::crd::Subnet;
use kube_ovn_api::naming::pod_port_name;
use kube_ovn_api::naming::VENDOR;
use kube_ovn_cni::api::{CniRequest, CniResponse, IpResponse, RouteEntry, DEFAULT_PROVIDER};

/// What ADD takes from the Subnet the pod is on.
#[derive(Debug, Clone, Copy, Default)]
struct SubnetSettings {
    mtu: Option<u32>,
    disable_gateway_check: bool,
}

/// The pod's interface as ADD builds it, and the answer it gives.
#[derive(Debug)]
struct Attachment {
    interface: PodInterface,
    gateways: Vec<IpAddr>,
    response: CniResponse,
}

impl CniDaemon {
    /// CNI ADD for one pod NIC.
    pub async fn add(&self, req: CniRequest) -> Result<CniResponse, CniFailure> {
        let span = tracing::info_span!(
            "cni_add",
            pod = %format!("{}/{}", req.pod_namespace, req.pod_name),
            container = %req.container_id.get(..12).unwrap_or(&req.container_id),
            lock_ms = Empty,
            annotation_ms = Empty,
            subnet_ms = Empty,
            cleanup_ms = Empty,
            veth_ms = Empty,
            ovs_port_ms = Empty,
            qos_ms = Empty,
            ovn_installed_ms = Empty,
            gateway_ms = Empty,
            total_ms = Empty,
        );
        let start = Instant::now();
        let result = self.add_steps(req).instrument(span.clone()).await;
        span.record("total_ms", ms(start));
        // one line per ADD with the time of each step in the span's fields (a failure
        // is logged once, by the server)
        if result.is_ok() {
            tracing::info!(parent: &span, "pod network configured");
        }
        result
    }

    /// ADD's steps, each timed into a field of the current `cni_add` span.
    async fn add_steps(&self, req: CniRequest) -> Result<CniResponse, CniFailure> {
        require("pod_name", &req.pod_name)?;
        require("pod_namespace", &req.pod_namespace)?;
        require("container_id", &req.container_id)?;
        require("net_ns", &req.net_ns)?;
        require("if_name", &req.if_name)?;
        let provider = provider_of(&req)?;
        let _guard = timed("lock_ms", self.lock(&req.container_id)).await;
        let network = timed("annotation_ms", self.wait_for_network(&req, &provider)).await?;
        let subnet = timed("subnet_ms", self.subnet_settings(&network)).await?;
        let plan = plan_attachment(
            &req,
            &network,
            subnet,
            self.settings.mtu,
            self.settings.userspace_datapath,
        )?;
        let host = plan.interface.host.name.clone();
        let iface_id = pod_port_name(&req.pod_namespace, &req.pod_name, provider.as_str());
        // a repeated ADD for the container starts from nothing
        timed(
            "cleanup_ms",
            self.remove_attachment(&req.container_id, &req.if_name, &req.net_ns),
        )
        .await?;
        let spec = plan.interface.clone();
        let setup = self
            .settings
            .host_netns
            .run(move || async move { datapath::setup(&spec).await });
        timed("veth_ms", setup)
            .await?
            .map_err(CniFailure::datapath(&req.container_id))?;
        let qos = QosSpec::from_network(&network);
        let plugged = self.plug(&req, &host, &iface_id, &plan, subnet, &qos).await;
        if let Err(error) = plugged {
            if let Err(cleanup) = self
                .remove_attachment(&req.container_id, &req.if_name, &req.net_ns)
                .await
            {
                tracing::error!(container = %req.container_id, error = %cleanup, "cleanup after failed ADD failed");
            }
            return Err(error);
        }
        tracing::debug!(port = %host, %iface_id, "pod plugged");
        Ok(plan.response)
    }

    /// The steps after the veth exists: the OVS port, its QoS, `ovn-installed`, the
    /// gateway.
    async fn plug(
        &self,
        req: &CniRequest,
        host: &str,
        iface_id: &str,
        plan: &Attachment,
        subnet: SubnetSettings,
        qos: &QosSpec,
    ) -> Result<(), CniFailure> {
        let ips = plan
            .interface
            .container
            .addresses
            .iter()
            .map(|a| a.addr().to_string());
        let external_ids = [
            ("iface-id", iface_id.to_string()),
            ("vendor", VENDOR.to_string()),
            ("pod_name", req.pod_name.clone()),
            ("pod_namespace", req.pod_namespace.clone()),
            ("pod_netns", req.net_ns.clone()),
            ("ip", ips.collect::<Vec<_>>().join(",")),
        ];
        let spec = InterfaceSpec {
            external_ids: external_ids
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            ..Default::default()
        };
        let mut txn = self.vs.txn();
        txn.may_exist()
            .add_port(&self.settings.bridge, host, spec)
            .map_err(CniFailure::ovs(host))?;
        timed("ovs_port_ms", self.vs.commit(txn))
            .await
            .map_err(CniFailure::ovs(host))?;
        if !qos.is_empty() {
            // as Kube-OVN's ADD does; the daemon's QoS loop keeps it up to date after
            let pod = format!("{}/{}", req.pod_namespace, req.pod_name);
            let netns = PathBuf::from(&req.net_ns);
            let target = QosTarget {
                port: host,
                iface_id,
                pod: &pod,
                netns: Some(&netns),
                pod_iface: &req.if_name,
            };
            timed("qos_ms", qos::apply(&self.vs, &target, qos))
                .await
                .map_err(|source| CniFailure::Qos {
                    pod,
                    source: Box::new(source),
                })?;
        }
        let waited = self.settings.ovn_installed_wait;
        timed("ovn_installed_ms", self.vs.wait_ovn_installed(host, waited))
            .await
            .map_err(|_| not_installed(host, iface_id, waited))?;
        if subnet.disable_gateway_check || plan.gateways.is_empty() {
            return Ok(());
        }
        // The gateway is probed only once the port's flows are in: a request sent
        // before them leaves the datapath a cached drop for the port until
        // ovs-vswitchd revalidates it, which on a node with ~100 pods came ~40 ms
        // after `ovn-installed` (ADD p99 117-149 ms probing from the start, 78 ms
        // probing after).
        let quick = timed(
            "gateway_ms",
            self.check_gateways(req, plan, quick_probe(self.settings.gateway_check)),
        )
        .await;
        if quick.is_ok() {
            return Ok(());
        }
        // not answered at once: the full check, at its own pace
        timed(
            "gateway_ms",
            self.check_gateways(req, plan, self.settings.gateway_check),
        )
        .await
        .map_err(CniFailure::datapath(&req.container_id))?;
        Ok(())
    }

    /// The gateway check from the pod's interface (ARP / neighbour discovery).
    async fn check_gateways(
        &self,
        req: &CniRequest,
        plan: &Attachment,
        check: GatewayCheck,
    ) -> Result<Vec<(IpAddr, datapath::MacAddr)>, datapath::Error> {
        datapath::check_gateways(
            &PathBuf::from(&req.net_ns),
            &req.if_name,
            &plan.interface.container.addresses,
            &plan.gateways,
            check,
        )
        .await
    }

    /// Reads the pod until the controller has allocated the NIC (and, on the default
    /// provider, routed it), at most `annotation_wait`: between reads, a watch on the pod
    /// from the version read returns at its next change, so the annotation is seen as
    /// soon as it is written (`annotation_poll` paces the reads only when watching fails).
    async fn wait_for_network(
        &self,
        req: &CniRequest,
        provider: &Provider,
    ) -> Result<PodNetwork, CniFailure> {
        let key = format!("{}/{}", req.pod_namespace, req.pod_name);
        let start = Instant::now();
        loop {
            let pod = self
                .get_pod(&req.pod_namespace, &req.pod_name)
                .await?
                .ok_or_else(|| CniFailure::PodNotFound { pod: key.clone() })?;
            self.check_node(&pod, &key)?;
            let missing = match network_of(&pod, provider, &key)? {
                Ok(network) => return Ok(network),
                Err(missing) => missing,
            };
            // the controller gives a terminating pod's network back rather than
            // allocating it one: waiting would only hold up the deletion, whose DEL
            // the runtime runs after this ADD
            if pod.metadata.deletion_timestamp.is_some() {
                return Err(CniFailure::PodTerminating {
                    pod: key,
                    what: missing,
                });
            }
            let waited = start.elapsed();
            let left = self.settings.annotation_wait.saturating_sub(waited);
            if left.is_zero() {
                return Err(CniFailure::NotAllocated {
                    pod: key,
                    what: missing,
                    waited,
                });
            }
            let version = pod.metadata.resource_version.clone().unwrap_or_default();
            self.pod_changed(req, &version, left).await;
        }
    }

    /// Returns when the pod changes after `version` (its first watch event), or after
    /// `left`; when the watch cannot be opened, after `annotation_poll` (within `left`).
    async fn pod_changed(&self, req: &CniRequest, version: &str, left: Duration) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &req.pod_namespace);
        let secs = left.as_secs().clamp(1, u64::from(u32::MAX)) as u32;
        let params = WatchParams::default()
            .fields(&format!("metadata.name={}", req.pod_name))
            .timeout(secs);
        let first_event = async {
            match pods.watch(&params, version).await {
                Ok(stream) => {
                    let mut stream = std::pin::pin!(stream);
                    match stream.next().await {
                        Some(Ok(WatchEvent::Added(_) | WatchEvent::Modified(_)))
                        | Some(Ok(WatchEvent::Deleted(_))) => return,
                        // an error event (version too old) or the end: pace the reads
                        other => {
                            tracing::debug!(pod = %req.pod_name, event = ?other.map(|e| e.map(|_| ())), "watch gave no change")
                        }
                    }
                }
                Err(error) => {
                    tracing::debug!(pod = %req.pod_name, %error, "cannot watch the pod; reading it again later");
                }
            }
            tokio::time::sleep(self.settings.annotation_poll).await;
        };
        let _ = tokio::time::timeout(left, first_event).await;
    }

    async fn subnet_settings(&self, network: &PodNetwork) -> Result<SubnetSettings, CniFailure> {
        let Some(name) = &network.logical_switch else {
            return Ok(SubnetSettings::default());
        };
        let subnets: Api<Subnet> = Api::all(self.client.clone());
        let subnet = subnets
            .get_opt(name)
            .await
            .map_err(|source| CniFailure::Api {
                pod: format!("subnet {name}"),
                source: Box::new(source),
            })?;
        Ok(subnet
            .map(|s| SubnetSettings {
                mtu: s.spec.mtu,
                disable_gateway_check: s.spec.disable_gateway_check == Some(true),
            })
            .unwrap_or_default())
    }
}

/// Milliseconds since `start`.
fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// Awaits `step` and records how long it took into `field` of the current span.
async fn timed<T>(field: &'static str, step: impl Future<Output = T>) -> T {
    let start = Instant::now();
    let out = step.await;
    tracing::Span::current().record(field, ms(start));
    out
}

/// How often the first gateway probe asks: the answer comes within a millisecond or
/// two once the flows are in, and a slow first answer is the usual case's whole cost.
const QUICK_PROBE_INTERVAL: Duration = Duration::from_millis(5);
/// The quick probe's longest run; after it, the full check runs.
const QUICK_PROBE_BUDGET: Duration = Duration::from_secs(2);

/// The quick probe: frequent tries, within `QUICK_PROBE_BUDGET` and the full check's
/// own length.
fn quick_probe(full: GatewayCheck) -> GatewayCheck {
    let budget = (full.interval * full.attempts).min(QUICK_PROBE_BUDGET);
    let attempts = (budget.as_millis() / QUICK_PROBE_INTERVAL.as_millis()).max(1) as u32;
    GatewayCheck {
        attempts,
        interval: QUICK_PROBE_INTERVAL,
    }
}

fn not_installed(host: &str, iface_id: &str, waited: Duration) -> CniFailure {
    CniFailure::NotInstalled {
        port: host.to_string(),
        iface_id: iface_id.to_string(),
        waited,
    }
}

fn require(field: &'static str, value: &str) -> Result<(), CniFailure> {
    if value.is_empty() {
        return Err(CniFailure::InvalidRequest {
            field,
            reason: "empty".into(),
        });
    }
    Ok(())
}

fn provider_of(req: &CniRequest) -> Result<Provider, CniFailure> {
    let name = if req.provider.is_empty() {
        DEFAULT_PROVIDER
    } else {
        &req.provider
    };
    Provider::new(name).map_err(|e| CniFailure::InvalidRequest {
        field: "provider",
        reason: e.to_string(),
    })
}

/// The NIC's annotations when complete; otherwise what is still missing.
fn network_of(
    pod: &Pod,
    provider: &Provider,
    key: &str,
) -> Result<Result<PodNetwork, &'static str>, CniFailure> {
    let empty = Default::default();
    let map = pod.metadata.annotations.as_ref().unwrap_or(&empty);
    let network = PodNetwork::parse(provider, map).map_err(|source| CniFailure::BadAnnotation {
        pod: key.to_string(),
        source,
    })?;
    let complete = network.is_allocated()
        && network.ip_address.is_some()
        && network.mac_address.is_some()
        && network.cidr.is_some();
    if !complete {
        return Ok(Err("no address allocated to pod"));
    }
    if provider.is_default() && !network.is_routed() {
        return Ok(Err("route is not ready for pod"));
    }
    Ok(Ok(network))
}

/// The interface, its gateways and the answer, from the annotations and the request.
fn plan_attachment(
    req: &CniRequest,
    network: &PodNetwork,
    subnet: SubnetSettings,
    default_mtu: u32,
    userspace: bool,
) -> Result<Attachment, CniFailure> {
    let invalid = |field: &'static str| {
        move |e: &dyn std::fmt::Display| CniFailure::InvalidRequest {
            field,
            reason: e.to_string(),
        }
    };
    let mut pod = PodInterface::new(&req.container_id, &req.net_ns, &req.if_name)
        .map_err(|e| invalid("container_id/if_name")(&e))?;
    let cidrs = network.cidr.map(|c| c.nets()).unwrap_or_default();
    let ips = network.ip_address.map(|i| i.addrs()).unwrap_or_default();
    let mut addresses = Vec::new();
    for ip in &ips {
        let Some(cidr) = cidrs.iter().find(|c| c.addr().is_ipv4() == ip.is_ipv4()) else {
            return Err(invalid("annotation cidr")(&format!(
                "no CIDR of the family of {ip}"
            )));
        };
        let net = IpNet::new(*ip, cidr.prefix_len()).map_err(|e| invalid("annotation cidr")(&e))?;
        addresses.push((net, *cidr));
    }
    let default_route = req.if_name == "eth0" || network.default_route == Some(true);
    let mut gateways: Vec<IpAddr> = if default_route {
        let gws = network.gateway.map(|g| g.addrs()).unwrap_or_default();
        gws.into_iter()
            .filter(|g| ips.iter().any(|ip| ip.is_ipv4() == g.is_ipv4()))
            .collect()
    } else {
        Vec::new()
    };
    let routes = pod_routes(req, network, &mut gateways)?;
    let mtu = subnet.mtu.unwrap_or(default_mtu);
    pod.mtu = Some(mtu);
    pod.txqueuelen = Some(1000);
    pod.container.mac = network.mac_address.map(|m| MacAddr(m.0));
    pod.container.addresses = addresses.iter().map(|(a, _)| *a).collect();
    pod.container.gateways = gateways.clone();
    pod.container.routes = routes.clone();
    pod.container.disable_tx_checksum = userspace;
    // A pod without IPv6 addresses gets no IPv6 link-local address either (IPv6
    // stays on, as Kube-OVN leaves it): its kernel's DAD, router solicitations
    // and MLD reports would be flooded to every port of the switch, and on a node
    // with 100 pods the datapath flows of that flood made each new port's flows
    // slow to come (ADD p99 82 ms to 34 ms)
    pod.container.ipv6_link_local = addresses.iter().any(|(a, _)| a.addr().is_ipv6());
    pod.validate().map_err(|e| invalid("pod interface")(&e))?;
    let response = CniResponse {
        ips: ip_responses(&addresses, &gateways),
        mac_address: network
            .mac_address
            .map(|m| m.to_string())
            .unwrap_or_default(),
        routes: response_routes(&gateways, &routes),
        mtu,
        nicname: req.if_name.clone(),
        dns: req.dns.clone(),
        error: String::new(),
    };
    Ok(Attachment {
        interface: pod,
        gateways,
        response,
    })
}

/// The annotated and configured routes; a route without `dst` replaces the default
/// route of its family (its gateway leaves `gateways`).
fn pod_routes(
    req: &CniRequest,
    network: &PodNetwork,
    gateways: &mut Vec<IpAddr>,
) -> Result<Vec<RouteSpec>, CniFailure> {
    let annotated = network.routes.clone().unwrap_or_default().0;
    let mut asked = annotated
        .into_iter()
        .map(|r| (r.destination, r.gateway))
        .collect::<Vec<_>>();
    for r in &req.routes {
        asked.push(parse_route(r).map_err(|reason| CniFailure::InvalidRequest {
            field: "routes",
            reason,
        })?);
    }
    let mut routes = Vec::new();
    for (destination, gateway) in asked {
        let destination = match destination {
            Some(d) => d,
            None => {
                let Some(gw) = gateway else { continue };
                gateways.retain(|g| g.is_ipv4() != gw.is_ipv4());
                datapath::default_route(gw).destination
            }
        };
        routes.push(RouteSpec {
            destination,
            gateway,
            metric: None,
            table: None,
        });
    }
    Ok(routes)
}

/// One answer entry per address, with its family's gateway.
fn ip_responses(addresses: &[(IpNet, IpNet)], gateways: &[IpAddr]) -> Vec<IpResponse> {
    addresses
        .iter()
        .map(|(addr, cidr)| {
            let v4 = addr.addr().is_ipv4();
            IpResponse {
                protocol: if v4 { "IPv4" } else { "IPv6" }.into(),
                ip: addr.addr().to_string(),
                cidr: cidr.trunc().to_string(),
                gateway: gateways
                    .iter()
                    .find(|g| g.is_ipv4() == v4)
                    .map(ToString::to_string)
                    .unwrap_or_default(),
            }
        })
        .collect()
}

fn parse_route(r: &RouteEntry) -> Result<(Option<IpNet>, Option<IpAddr>), String> {
    let destination = match r.destination.as_str() {
        "" => None,
        d => Some(d.parse::<IpNet>().map_err(|e| format!("dst {d:?}: {e}"))?),
    };
    let gateway = match r.gateway.as_str() {
        "" => None,
        g => Some(g.parse::<IpAddr>().map_err(|e| format!("gw {g:?}: {e}"))?),
    };
    Ok((destination, gateway))
}

/// Every route in the pod, the default ones first, as the CNI result lists them.
fn response_routes(gateways: &[IpAddr], routes: &[RouteSpec]) -> Vec<RouteEntry> {
    let defaults = gateways.iter().map(|gw| RouteEntry {
        destination: datapath::default_route(*gw).destination.to_string(),
        gateway: gw.to_string(),
    });
    let extra = routes.iter().map(|r| RouteEntry {
        destination: r.destination.to_string(),
        gateway: r.gateway.map(|g| g.to_string()).unwrap_or_default(),
    });
    defaults.chain(extra).collect()
}

impl CniDaemon {
    /// CNI CHECK: the container's port is on the bridge, bound to the pod's logical port
    /// and installed by ovn-controller.
    pub async fn check(&self, req: CniRequest) -> Result<(), CniFailure> {
        require("pod_name", &req.pod_name)?;
        require("pod_namespace", &req.pod_namespace)?;
        require("container_id", &req.container_id)?;
        require("if_name", &req.if_name)?;
        let provider = provider_of(&req)?;
        let (host, _) = datapath::veth_names(&req.container_id, &req.if_name).map_err(|e| {
            CniFailure::InvalidRequest {
                field: "container_id/if_name",
                reason: e.to_string(),
            }
        })?;
        let iface_id = pod_port_name(&req.pod_namespace, &req.pod_name, provider.as_str());
        let decode = |e: ovs_vsctl::DecodeError| CniFailure::ovs(&host)(e.into());
        let ifaces = self
            .vs
            .store()
            .by_name::<ovs_vsctl::Interface>(&host)
            .map_err(decode)?;
        let installed = ifaces.iter().any(|i| {
            i.external_ids.get("iface-id") == Some(&iface_id)
                && i.external_ids.get("ovn-installed").map(String::as_str) == Some("true")
        });
        if installed {
            return Ok(());
        }
        Err(CniFailure::NotInstalled {
            port: host.clone(),
            iface_id,
            waited: Duration::ZERO,
        })
    }
}
