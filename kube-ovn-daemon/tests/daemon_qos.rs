//! Pod QoS on a simulated node (userspace datapath): the rows Kube-OVN writes, and the
//! limits measured with a bounded TCP transfer between pod namespaces, in both
//! directions, changed and removed live.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use kube_ovn_daemon::qos::{self, EgressEnforcement, QosError, QosSpec, QosTarget};
use ovn_harness::{require_stack, transfer, unique_tag, Cluster, Node, PodSpec};
use ovs_vsctl::{Interface, Port, QoS, Queue, VsClient};

const EXTRA_TOOLS: &[&str] = &["ethtool", "sysctl"];

/// Enough bytes for the shaper, not its initial bucket, to set the pace.
fn bytes_for(mbps: u64) -> u64 {
    mbps * 125_000 * 2
}

fn pod(tag: &str, n: u8) -> PodSpec {
    PodSpec {
        netns: format!("{tag}q{n}"),
        host_iface: format!("vq{n}"),
        iface_id: format!("q{n}.default"),
        mac: format!("50:54:00:00:01:0{n}"),
        cidr: format!("10.1.0.1{n}/24"),
        gateway: None,
    }
}

/// Mbit/s from pod `from` to pod `to` (`to` listening on `10.1.0.1<to>`).
fn rate(tag: &str, from: u8, to: u8, bytes: u64, port: u16) -> f64 {
    let addr: SocketAddr = format!("10.1.0.1{to}:{port}").parse().unwrap();
    let got = transfer::measure(
        &format!("{tag}q{from}"),
        &format!("{tag}q{to}"),
        addr,
        bytes,
        Duration::from_secs(30),
    )
    .expect("bounded transfer");
    got.mbit_per_s()
}

fn assert_limited(what: &str, measured: f64, limit: u64) {
    eprintln!("{what}: {measured:.2} Mbit/s");
    let limit = limit as f64;
    assert!(
        measured <= limit * 1.1 && measured >= limit / 2.0,
        "{what}: {measured:.2} Mbit/s against a limit of {limit} (allowed {:.1}..={:.1})",
        limit / 2.0,
        limit * 1.1
    );
}

struct Rows {
    policing: (i64, i64),
    qos: Option<QoS>,
    queue: Option<Queue>,
    qos_rows: usize,
    queue_rows: usize,
}

fn rows(vs: &VsClient, port: &str) -> Rows {
    let store = vs.store();
    let iface = store.by_name::<Interface>(port).unwrap().remove(0).row;
    let port = store.by_name::<Port>(port).unwrap().remove(0).row;
    let qos = port.qos.map(|id| store.get(id).unwrap().unwrap());
    let queue = qos
        .as_ref()
        .and_then(|q| q.queues.get(&0))
        .map(|id| store.get(*id).unwrap().unwrap());
    Rows {
        policing: (iface.ingress_policing_rate, iface.ingress_policing_burst),
        qos,
        queue,
        qos_rows: store.rows::<QoS>().unwrap().len(),
        queue_rows: store.rows::<Queue>().unwrap().len(),
    }
}

fn start(tag: &str) -> Cluster {
    let cluster = Cluster::start(tag, 1).expect("cluster");
    cluster.nbctl(&["ls-add", "qsw"]).unwrap();
    for n in [1u8, 2] {
        let spec = pod(tag, n);
        let addresses = format!("{} {}", spec.mac, spec.cidr.trim_end_matches("/24"));
        cluster
            .nbctl(&[
                "lsp-add",
                "qsw",
                &spec.iface_id,
                "--",
                "lsp-set-addresses",
                &spec.iface_id,
                &addresses,
            ])
            .unwrap();
    }
    cluster.nbctl(&["--wait=hv", "sync"]).unwrap();
    cluster
}

fn target<'a>(tag: &str, netns: &'a std::path::Path) -> QosTarget<'a> {
    let _ = tag;
    QosTarget {
        port: "vq1",
        iface_id: "q1.default",
        pod: "default/q1",
        netns: Some(netns),
        pod_iface: "eth0",
    }
}

async fn connect(node: &Node) -> VsClient {
    VsClient::connect(&node.chassis().ovs_remote())
        .await
        .expect("connect to the node's Open_vSwitch")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rates_are_enforced_both_ways_and_follow_changes() {
    if !require_stack(EXTRA_TOOLS) {
        return;
    }
    let tag = unique_tag("qr");
    let cluster = start(&tag);
    let node = &cluster.nodes()[0];
    let _q1 = node.plug_pod(&pod(&tag, 1)).expect("plug q1");
    let _q2 = node.plug_pod(&pod(&tag, 2)).expect("plug q2");
    let vs = connect(node).await;
    assert_eq!(
        qos::egress_enforcement(&vs).unwrap(),
        EgressEnforcement::PodTbf
    );
    let netns = PathBuf::from(format!("/var/run/netns/{tag}q1"));
    let target = target(&tag, &netns);

    let ten = QosSpec {
        ingress_rate: Some(10),
        egress_rate: Some(10),
        ..Default::default()
    };
    let report = qos::apply(&vs, &target, &ten).await.expect("apply 10");
    assert!(
        report.policing && report.port_qos && report.tbf,
        "{report:?}"
    );
    let r = rows(&vs, "vq1");
    assert_eq!(r.policing, (10_000, 8_000), "Kube-OVN's policing row");
    let q = r.qos.expect("a QoS on the port");
    assert_eq!(q.r#type, "linux-htb");
    assert_eq!(q.external_ids["iface-id"], "q1.default");
    assert_eq!(q.external_ids["pod"], "default/q1");
    let queue = r.queue.expect("queue 0");
    assert_eq!(queue.other_config["max-rate"], "10000000");
    assert_eq!(queue.other_config["burst"], "1000000");
    assert!(qos::apply(&vs, &target, &ten).await.unwrap().is_noop());

    let out = rate(&tag, 1, 2, bytes_for(10), 5001);
    assert_limited("egress at 10", out, 10);
    let into = rate(&tag, 2, 1, bytes_for(10), 5002);
    assert_limited("ingress at 10", into, 10);

    // changed live: both limits follow, the old rows are gone
    let twenty = QosSpec {
        ingress_rate: Some(20),
        egress_rate: Some(20),
        ..Default::default()
    };
    qos::apply(&vs, &target, &twenty).await.expect("apply 20");
    let r = rows(&vs, "vq1");
    assert_eq!(r.policing, (20_000, 16_000));
    assert_eq!(r.queue.unwrap().other_config["max-rate"], "20000000");
    assert_eq!((r.qos_rows, r.queue_rows), (1, 1), "old rows destroyed");
    assert_limited("egress at 20", rate(&tag, 1, 2, bytes_for(20), 5003), 20);
    assert_limited("ingress at 20", rate(&tag, 2, 1, bytes_for(20), 5004), 20);

    // annotations removed: no rows, no tbf, and no limit
    let report = qos::apply(&vs, &target, &QosSpec::default()).await.unwrap();
    assert!(
        report.policing && report.port_qos && report.tbf,
        "{report:?}"
    );
    let r = rows(&vs, "vq1");
    assert_eq!(r.policing, (0, 0));
    assert!(r.qos.is_none());
    assert_eq!((r.qos_rows, r.queue_rows), (0, 0));
    let out = rate(&tag, 1, 2, bytes_for(40), 5005);
    let into = rate(&tag, 2, 1, bytes_for(40), 5006);
    assert!(
        out > 40.0 && into > 40.0,
        "unlimited: out {out:.1}, in {into:.1} Mbit/s"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn netem_rows_bad_input_and_removal() {
    if !require_stack(EXTRA_TOOLS) {
        return;
    }
    let tag = unique_tag("qn");
    let cluster = start(&tag);
    let node = &cluster.nodes()[0];
    let _q1 = node.plug_pod(&pod(&tag, 1)).expect("plug q1");
    let vs = connect(node).await;
    let netns = PathBuf::from(format!("/var/run/netns/{tag}q1"));
    let target = target(&tag, &netns);

    let netem = QosSpec {
        latency: Some(50),
        jitter: Some(5),
        limit: Some(1000),
        loss: Some(12.5),
        ..Default::default()
    };
    qos::apply(&vs, &target, &netem).await.expect("netem");
    let q = rows(&vs, "vq1").qos.expect("netem QoS");
    assert_eq!(q.r#type, "linux-netem");
    let config: Vec<(&str, &str)> = q
        .other_config
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        config,
        [
            ("jitter", "5000"),
            ("latency", "50000"),
            ("limit", "1000"),
            ("loss", "12.5")
        ]
    );
    assert!(q.queues.is_empty());

    // an ingress rate takes precedence over netem, as in Kube-OVN
    let both = QosSpec {
        ingress_rate: Some(5),
        ..netem.clone()
    };
    qos::apply(&vs, &target, &both).await.unwrap();
    let r = rows(&vs, "vq1");
    assert_eq!(r.qos.unwrap().r#type, "linux-htb");
    assert_eq!((r.qos_rows, r.queue_rows), (1, 1));

    // bad input: a typed error naming the field, and the stored rows kept
    let bad = QosSpec {
        egress_rate: Some(qos::MAX_RATE_MBPS + 1),
        ..Default::default()
    };
    match qos::apply(&vs, &target, &bad).await {
        Err(QosError::RateOutOfRange { field, value }) => {
            assert_eq!((field, value), ("egress_rate", qos::MAX_RATE_MBPS + 1))
        }
        other => panic!("expected RateOutOfRange, got {other:?}"),
    }
    let r = rows(&vs, "vq1");
    assert_eq!(r.queue.unwrap().other_config["max-rate"], "5000000");

    // a port that is not there is named
    let missing = QosTarget {
        port: "nope",
        ..target
    };
    assert!(matches!(
        qos::apply(&vs, &missing, &netem).await,
        Err(QosError::PortMissing { port }) if port == "nope"
    ));

    // CNI DEL: everything goes, and a second remove writes nothing
    qos::apply(
        &vs,
        &target,
        &QosSpec {
            egress_rate: Some(3),
            ..both
        },
    )
    .await
    .unwrap();
    let report = qos::remove(&vs, &target).await.expect("remove");
    assert!(
        report.policing && report.port_qos && report.tbf,
        "{report:?}"
    );
    let r = rows(&vs, "vq1");
    assert_eq!(r.policing, (0, 0));
    assert_eq!((r.qos_rows, r.queue_rows), (0, 0));
    assert!(qos::remove(&vs, &target).await.unwrap().is_noop());
}

/// Polls the replica every 50 ms for up to 15 s.
async fn wait_rows(vs: &VsClient, what: &str, mut ok: impl FnMut(&Rows) -> bool) {
    for _ in 0..300 {
        if ok(&rows(vs, "vq1")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

fn pod_object(name: &str, node: &str, qos: &QosSpec) -> k8s_openapi::api::core::v1::Pod {
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec as K8sPodSpec};
    use kube_ovn_api::annotations::{AnnotationMap, PodNetwork, Provider};
    let mut map = AnnotationMap::new();
    let net = PodNetwork {
        ingress_rate: qos.ingress_rate,
        egress_rate: qos.egress_rate,
        ..Default::default()
    };
    net.write_into(&Provider::ovn(), &mut map);
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    pod.metadata.namespace = Some("default".into());
    pod.metadata.annotations = Some(map);
    pod.spec = Some(K8sPodSpec {
        node_name: Some(node.into()),
        containers: vec![Container {
            name: "c".into(),
            image: Some("pause".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    pod
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_loop_reapplies_when_annotations_change() {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, PostParams};
    if !require_stack(EXTRA_TOOLS) {
        return;
    }
    let tag = unique_tag("qw");
    let cluster = start(&tag);
    let node = &cluster.nodes()[0];
    let _q1 = node.plug_pod(&pod(&tag, 1)).expect("plug q1");
    // what CNI ADD stores: where the pod's namespace is
    let netns = format!("external_ids:pod_netns=/var/run/netns/{tag}q1");
    node.chassis()
        .vsctl(&["set", "Interface", "vq1", &netns])
        .unwrap();
    let vs = connect(node).await;
    let server = embedded_apiserver::EmbeddedApiServer::start(Default::default())
        .await
        .expect("API server");
    let client = server.kube_client().expect("client");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let ten = QosSpec {
        ingress_rate: Some(10),
        egress_rate: Some(10),
        ..Default::default()
    };
    pods.create(&PostParams::default(), &pod_object("q1", node.name(), &ten))
        .await
        .unwrap();

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let watch = qos::watch::run(
        client,
        node.name(),
        &vs,
        Duration::from_millis(200),
        async {
            let _ = stopped.await;
        },
    );
    let drive = async {
        wait_rows(&vs, "the 10 Mbit/s rows", |r| {
            r.policing == (10_000, 8_000)
                && r.queue
                    .as_ref()
                    .map(|q| q.other_config["max-rate"].as_str())
                    == Some("10000000")
        })
        .await;
        let twenty = QosSpec {
            ingress_rate: Some(20),
            egress_rate: Some(20),
            ..Default::default()
        };
        pods.replace("q1", &PostParams::default(), &{
            let mut p = pods.get("q1").await.unwrap();
            p.metadata.annotations = pod_object("q1", "", &twenty).metadata.annotations;
            p
        })
        .await
        .unwrap();
        wait_rows(&vs, "the 20 Mbit/s rows", |r| {
            r.policing == (20_000, 16_000)
                && r.queue
                    .as_ref()
                    .map(|q| q.other_config["max-rate"].as_str())
                    == Some("20000000")
        })
        .await;
        pods.replace("q1", &PostParams::default(), &{
            let mut p = pods.get("q1").await.unwrap();
            p.metadata.annotations = None;
            p
        })
        .await
        .unwrap();
        wait_rows(&vs, "no rows", |r| {
            r.policing == (0, 0) && r.qos.is_none() && r.qos_rows == 0 && r.queue_rows == 0
        })
        .await;
        let _ = stop.send(());
    };
    tokio::join!(watch, drive);
    server.shutdown().await;
}
