//! The sig-network e2e layout: namespaces x, y, z (labelled `ns=<name>`), pods a, b,
//! c in each (labelled `pod=<name>`), each serving 80 and 81 over TCP, UDP and SCTP
//! under the names `serve-<port>-<proto>`. Each namespace has its own switch on the
//! cluster router; the pods' ports and annotations are made as the Pod reconciler
//! would make them.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

use k8s_openapi::api::core::v1::{Container, ContainerPort, Namespace, Pod, PodSpec};
use kube::api::ObjectMeta;
use kube_ovn_api::annotations::{IpPair, PodNetwork, Provider};
use kube_ovn_api::naming::{pod_port_name, OVN_PROVIDER};

use super::eval::{Labels, NamedPort, PodInfo, Protocol};
use crate::{one_transaction, router_patch, RouterPort};

pub const NAMESPACES: [&str; 3] = ["x", "y", "z"];
pub const PODS: [&str; 3] = ["a", "b", "c"];
pub const ROUTER: &str = "ovn-cluster";
/// The protocols every pod serves its ports on (as the upstream e2e model's pods do).
pub const PROTOCOLS: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];

fn ns_index(ns: &str) -> u8 {
    NAMESPACES
        .iter()
        .position(|n| *n == ns)
        .expect("a layout namespace") as u8
        + 1
}

fn pod_index(pod: &str) -> u8 {
    PODS.iter().position(|p| *p == pod).expect("a layout pod") as u8
}

pub fn switch(ns: &str) -> String {
    format!("sw-{ns}")
}

pub fn pod_ip(ns: &str, pod: &str) -> Ipv4Addr {
    Ipv4Addr::new(10, 16, ns_index(ns), 10 + pod_index(pod))
}

pub fn pod_mac(ns: &str, pod: &str) -> String {
    format!(
        "0a:00:00:00:{:02x}:{:02x}",
        ns_index(ns),
        10 + pod_index(pod)
    )
}

pub fn router_mac(ns: &str) -> String {
    format!("00:00:00:00:{:02x}:01", ns_index(ns))
}

/// `ovn-nbctl` arguments creating the router, the switches and the pods' ports.
pub fn nbctl_topology() -> Vec<String> {
    let mut cmds: Vec<Vec<String>> = vec![vec!["lr-add".into(), ROUTER.into()]];
    for ns in NAMESPACES {
        let sw = switch(ns);
        cmds.push(vec!["ls-add".into(), sw.clone()]);
        let (mac, network) = (router_mac(ns), format!("10.16.{}.1/24", ns_index(ns)));
        let port = RouterPort {
            router: ROUTER,
            mac: &mac,
            network: &network,
        };
        cmds.extend(router_patch(port, &sw, ns));
        for pod in PODS {
            let port = pod_port_name(ns, pod, OVN_PROVIDER);
            cmds.push(vec!["lsp-add".into(), sw.clone(), port.clone()]);
            cmds.push(vec![
                "lsp-set-addresses".into(),
                port,
                format!("{} {}", pod_mac(ns, pod), pod_ip(ns, pod)),
            ]);
        }
    }
    one_transaction(cmds)
}

pub fn container_ports() -> Vec<NamedPort> {
    let mut ports = Vec::new();
    for port in [80, 81] {
        for protocol in PROTOCOLS {
            ports.push(NamedPort {
                name: format!("serve-{port}-{}", protocol.to_string().to_lowercase()),
                port,
                protocol,
            });
        }
    }
    ports
}

/// The IPv4 address of a layout pod.
pub fn ip4(p: &PodInfo) -> Ipv4Addr {
    match p.ips.as_slice() {
        [IpAddr::V4(ip)] => *ip,
        other => panic!(
            "{}/{} has {other:?}, not one IPv4 address",
            p.namespace, p.name
        ),
    }
}

/// The layout's pods, with `labels` overriding a pod's labels when given.
pub fn eval_pods(relabel: &BTreeMap<(String, String), Labels>) -> Vec<PodInfo> {
    let mut pods = Vec::new();
    for ns in NAMESPACES {
        for pod in PODS {
            let key = (ns.to_string(), pod.to_string());
            let labels = relabel
                .get(&key)
                .cloned()
                .unwrap_or_else(|| BTreeMap::from([("pod".to_string(), pod.to_string())]));
            pods.push(PodInfo {
                namespace: ns.into(),
                name: pod.into(),
                labels,
                ips: vec![IpAddr::V4(pod_ip(ns, pod))],
                ports: container_ports(),
            });
        }
    }
    pods
}

/// The Pod object of an evaluator pod, annotated as the Pod reconciler annotates it.
pub fn pod_object(p: &PodInfo) -> Pod {
    let network = PodNetwork {
        allocated: Some(true),
        ip_address: Some(IpPair::v4(ip4(p))),
        logical_switch: Some(switch(&p.namespace)),
        ..Default::default()
    };
    let mut annotations = BTreeMap::new();
    network.write_into(&Provider::ovn(), &mut annotations);
    let ports = p
        .ports
        .iter()
        .map(|port| ContainerPort {
            name: Some(port.name.clone()),
            protocol: Some(port.protocol.to_string()),
            container_port: i32::from(port.port),
            ..Default::default()
        })
        .collect();
    Pod {
        metadata: ObjectMeta {
            namespace: Some(p.namespace.clone()),
            name: Some(p.name.clone()),
            labels: Some(p.labels.clone()),
            annotations: Some(annotations),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "cont".into(),
                image: Some("agnhost".into()),
                ports: Some(ports),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

pub fn namespace_labels() -> BTreeMap<String, Labels> {
    NAMESPACES
        .iter()
        .map(|ns| {
            (
                ns.to_string(),
                BTreeMap::from([("ns".to_string(), ns.to_string())]),
            )
        })
        .collect()
}

pub fn namespace_objects(labels: &BTreeMap<String, Labels>) -> Vec<Namespace> {
    labels
        .iter()
        .map(|(name, labels)| Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(labels.clone()),
                ..Default::default()
            },
            ..Default::default()
        })
        .collect()
}
