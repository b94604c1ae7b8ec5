//! The Pod reconciler against the embedded API server (our CRDs) and a real NB, SB and
//! ovn-northd: ports read back with the real `ovn-nbctl`, Port_Bindings made by northd
//! read with `ovn-sbctl`; static, conflicting, out-of-subnet and malformed requests;
//! two pods claiming one address; host-network pods; subnet usage figures; and under
//! `controller::run`, delete releasing everything while a StatefulSet pod recreated
//! under its name keeps its address; pods deleted before the result write (which
//! carries the finalizer) leave nothing behind.

use kube_ovn_test_support as common;
use kube_ovn_test_support::ControllerEnv;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec};
use k8s_openapi::api::core::v1::{Event, Namespace, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::Client;
use kube_ovn_api::crd::{IPPool, IPPoolSpec, Subnet, SubnetSpec, IP};
use kube_ovn_controller::cache::Caches;
use kube_ovn_controller::pod::{apply, clean_deleted, PodOutcome, ReadyReport, FINALIZER};
use kube_ovn_controller::{ensure_default_subnets, run, subnet, Context};

/// How long a watch-driven change may take before the test gives up.
const WAIT: Duration = Duration::from_secs(30);
const DEFAULT: &str = "ovn-default";

async fn create_namespace(client: &Client, name: &str) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// Creates a Subnet and reconciles it once (switch in NB, registered in the IPAM).
async fn create_subnet(env: &ControllerEnv, name: &str, cidr: &str, namespaces: &[&str]) {
    let spec = SubnetSpec {
        cidr_block: Some(cidr.into()),
        namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    };
    let s = Subnet::new(name, spec);
    let created = Api::<Subnet>::all(env.client.clone())
        .create(&PostParams::default(), &s)
        .await
        .unwrap();
    subnet::apply(&env.ctx, &created).await.unwrap();
}

async fn default_subnet(env: &ControllerEnv) {
    ensure_default_subnets(&env.client, &env.ctx.config)
        .await
        .unwrap();
    let s = Api::<Subnet>::all(env.client.clone())
        .get(DEFAULT)
        .await
        .unwrap();
    subnet::apply(&env.ctx, &s).await.unwrap();
}

fn pod_object(ns: &str, name: &str, annotations: &[(&str, &str)]) -> Pod {
    let annotations: BTreeMap<String, String> = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    common::plain_pod(ns, name, annotations)
}

async fn create_pod(client: &Client, pod: &Pod) -> Pod {
    let ns = pod.metadata.namespace.as_deref().unwrap();
    Api::<Pod>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), pod)
        .await
        .unwrap()
}

async fn get_pod(client: &Client, ns: &str, name: &str) -> Option<Pod> {
    Api::<Pod>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await
        .unwrap()
}

fn annotation(pod: &Pod, key: &str) -> Option<String> {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(&format!("ovn.kubernetes.io/{key}")).cloned())
}

/// Creates a pod and applies it once; the stored pod and the outcome.
async fn create_and_apply(env: &ControllerEnv, pod: Pod) -> (Pod, PodOutcome) {
    let created = create_pod(&env.client, &pod).await;
    let outcome = apply(&env.ctx, &created).await.unwrap();
    let ns = created.metadata.namespace.as_deref().unwrap();
    let name = created.metadata.name.as_deref().unwrap();
    (get_pod(&env.client, ns, name).await.unwrap(), outcome)
}

fn ready(outcome: PodOutcome) -> ReadyReport {
    match outcome {
        PodOutcome::Ready(r) => r,
        other => panic!("not ready: {other:?}"),
    }
}

fn refused(outcome: PodOutcome) -> (&'static str, String) {
    match outcome {
        PodOutcome::Refused {
            reason, message, ..
        } => (reason, message),
        other => panic!("not refused: {other:?}"),
    }
}

/// The Warning reasons and messages of the Events about a pod.
async fn events_of(client: &Client, ns: &str, pod: &str) -> Vec<(String, String)> {
    Api::<Event>::namespaced(client.clone(), ns)
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(pod))
        .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
        .collect()
}

/// The ports' columns the controller writes (northd writes `up` on its own time).
fn port_rows(remote: &str) -> String {
    let columns = "--columns=name,addresses,port_security,external_ids";
    common::nbctl(remote, &[columns, "list", "Logical_Switch_Port"])
}

fn lsp_list(remote: &str, ls: &str) -> String {
    common::nbctl(remote, &["lsp-list", ls])
}

fn lsp_get(remote: &str, port: &str, column: &str) -> String {
    common::nb_get(remote, "Logical_Switch_Port", port, column)
}

/// Polls `check` until it holds; panics naming `what` after [`WAIT`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn port_bound_in_sb(sb: &str, port: &str) {
    let find = format!("logical_port={port}");
    eventually(&format!("northd's Port_Binding of {port}"), || async {
        let out = common::sbctl(
            sb,
            &[
                "--bare",
                "--columns=logical_port",
                "find",
                "Port_Binding",
                &find,
            ],
        );
        out.trim() == port
    })
    .await;
}

async fn using_ips(client: &Client, subnet: &str) -> (u128, u128) {
    let s = Api::<Subnet>::all(client.clone())
        .get(subnet)
        .await
        .unwrap();
    let status = s.status.expect("a status");
    let n = |c: Option<kube_ovn_api::crd::IpCount>| c.map_or(0, |c| c.0);
    (n(status.v4_using_ips), n(status.v4_available_ips))
}

#[tokio::test]
async fn pods_get_subnet_address_port_ip_object_and_annotations_once() {
    let Some(env) = ControllerEnv::builder().start().await else {
        return;
    };
    let (client, nb) = (&env.client, env.nb_remote.as_str());
    default_subnet(&env).await;
    let (web, outcome) = create_and_apply(&env, pod_object("default", "web", &[])).await;
    let report = ready(outcome);
    assert_eq!(report.subnet, DEFAULT);
    let ip = annotation(&web, "ip_address").expect("an address");
    let mac = annotation(&web, "mac_address").expect("a MAC");
    assert_eq!(ip, report.allocation.ip_address_annotation());
    assert_eq!(annotation(&web, "allocated").as_deref(), Some("true"));
    assert_eq!(annotation(&web, "routed").as_deref(), Some("true"));
    assert_eq!(annotation(&web, "cidr").as_deref(), Some("10.16.0.0/16"));
    assert_eq!(annotation(&web, "gateway").as_deref(), Some("10.16.0.1"));
    assert_eq!(annotation(&web, "logical_switch").as_deref(), Some(DEFAULT));
    assert_eq!(
        annotation(&web, "pod_nic_type").as_deref(),
        Some("veth-pair")
    );

    assert!(lsp_list(nb, DEFAULT).contains("(web.default)"));
    assert_eq!(
        lsp_get(nb, "web.default", "addresses"),
        format!("[\"{mac} {ip}\"]")
    );
    assert_eq!(lsp_get(nb, "web.default", "port_security"), "[]");
    assert_eq!(
        lsp_get(nb, "web.default", "external_ids:vendor"),
        "kube-ovn"
    );
    assert_eq!(lsp_get(nb, "web.default", "external_ids:ls"), DEFAULT);
    assert_eq!(
        lsp_get(nb, "web.default", "external_ids:pod"),
        "default/web"
    );
    assert_eq!(
        lsp_get(nb, "web.default", "external_ids:namespace"),
        "default"
    );
    assert_eq!(lsp_get(nb, "web.default", "external_ids:ip"), ip);
    port_bound_in_sb(&env.sb_remote, "web.default").await;

    let ip_obj = Api::<IP>::all(client.clone())
        .get("web.default")
        .await
        .unwrap();
    assert_eq!(ip_obj.spec.pod_name.as_deref(), Some("web"));
    assert_eq!(ip_obj.spec.namespace.as_deref(), Some("default"));
    assert_eq!(ip_obj.spec.subnet.as_deref(), Some(DEFAULT));
    assert_eq!(ip_obj.spec.v4_ip_address.as_deref(), Some(ip.as_str()));
    assert_eq!(ip_obj.spec.mac_address.as_deref(), Some(mac.as_str()));
    let labels = ip_obj.metadata.labels.unwrap_or_default();
    assert_eq!(labels["ovn.kubernetes.io/subnet"], DEFAULT);

    // a second reconcile on the stored pod writes nothing anywhere
    let ports_before = port_rows(nb);
    let again = ready(apply(&env.ctx, &web).await.unwrap());
    assert!(!again.wrote_anything(), "{again:?}");
    assert_eq!(again.allocation, report.allocation);
    assert_eq!(port_rows(nb), ports_before);
    assert_eq!(get_pod(client, "default", "web").await.unwrap(), web);

    // a namespace bound to a subnet
    create_namespace(client, "ns-a").await;
    create_subnet(&env, "sub-a", "10.61.0.0/24", &["ns-a"]).await;
    // the subnet reconciler writes the figures of a subnet without pods
    assert_eq!(using_ips(client, "sub-a").await, (0, 254 - 1));
    let (a1, outcome) = create_and_apply(&env, pod_object("ns-a", "a1", &[])).await;
    assert_eq!(ready(outcome).subnet, "sub-a");
    assert_eq!(annotation(&a1, "ip_address").as_deref(), Some("10.61.0.2"));
    assert!(lsp_list(nb, "sub-a").contains("(a1.ns-a)"));

    // host-network pods are left alone
    let mut host = pod_object("default", "host", &[]);
    host.spec.as_mut().unwrap().host_network = Some(true);
    let (host, outcome) = create_and_apply(&env, host).await;
    assert_eq!(outcome, PodOutcome::HostNetwork);
    assert_eq!(host.metadata.annotations, None);
    assert!(!lsp_list(nb, DEFAULT).contains("(host.default)"));

    // an IPPool bound to a namespace: its pods take the pool's addresses first, then
    // the subnet's free range; a pod naming the pool gets nothing once it is full.
    // (The IPPool reconciler registers pools in the IPAM; done by hand here.)
    create_namespace(client, "ns-b").await;
    let pool_spec = IPPoolSpec {
        subnet: "sub-a".into(),
        namespaces: vec!["ns-b".into()],
        ips: vec!["10.61.0.200..10.61.0.201".into()],
        ..Default::default()
    };
    Api::<IPPool>::all(client.clone())
        .create(
            &PostParams::default(),
            &IPPool::new("pool-b", pool_spec.clone()),
        )
        .await
        .unwrap();
    let ipam_pool = ipam::PoolSpec {
        ips: pool_spec.ips.clone(),
    };
    env.ctx
        .ipam
        .add_or_update_pool("sub-a", "pool-b", &ipam_pool)
        .unwrap();
    let mut got = Vec::new();
    for name in ["b1", "b2", "b3"] {
        let (pod, outcome) = create_and_apply(&env, pod_object("ns-b", name, &[])).await;
        assert_eq!(ready(outcome).subnet, "sub-a");
        got.push(annotation(&pod, "ip_address").unwrap());
    }
    assert_eq!(got, ["10.61.0.200", "10.61.0.201", "10.61.0.3"]);
    let named = [("ovn.kubernetes.io/ip_pool", "pool-b")];
    let (_, outcome) = create_and_apply(&env, pod_object("ns-b", "b4", &named)).await;
    let (reason, message) = refused(outcome);
    assert_eq!(reason, "AcquireAddressFailed");
    assert!(message.contains("pool-b"), "{message}");

    // a pod that ran to completion gives its address, port and IP object back
    let (_, outcome) = create_and_apply(&env, pod_object("ns-a", "done", &[])).await;
    ready(outcome);
    assert!(lsp_list(nb, "sub-a").contains("(done.ns-a)"));
    let status = serde_json::json!({ "status": { "phase": "Succeeded" } });
    let done = Api::<Pod>::namespaced(client.clone(), "ns-a")
        .patch_status(
            "done",
            &Default::default(),
            &kube::api::Patch::Merge(&status),
        )
        .await
        .unwrap();
    match apply(&env.ctx, &done).await.unwrap() {
        PodOutcome::Finished(report) => assert_eq!(report.released, ["sub-a"]),
        other => panic!("not finished: {other:?}"),
    }
    assert!(!lsp_list(nb, "sub-a").contains("(done.ns-a)"));
    let gone = Api::<IP>::all(client.clone()).get_opt("done.ns-a").await;
    assert!(gone.unwrap().is_none());

    // a namespace listed by two subnets: the second once the first is full
    create_namespace(client, "ns-c").await;
    create_subnet(&env, "c1", "10.62.0.0/30", &["ns-c"]).await;
    create_subnet(&env, "c2", "10.63.0.0/24", &["ns-c"]).await;
    let (_, first) = create_and_apply(&env, pod_object("ns-c", "c-p1", &[])).await;
    let (c2, second) = create_and_apply(&env, pod_object("ns-c", "c-p2", &[])).await;
    assert_eq!(ready(first).subnet, "c1");
    assert_eq!(ready(second).subnet, "c2");
    assert_eq!(annotation(&c2, "logical_switch").as_deref(), Some("c2"));
    assert!(lsp_list(nb, "c2").contains("(c-p2.ns-c)"));

    // usage figures follow: web in ovn-default, a1, b1, b2 and b3 in sub-a
    assert_eq!(using_ips(client, DEFAULT).await.0, 1);
    let (using, available) = using_ips(client, "sub-a").await;
    // a /24: .1 to .254 usable, less the gateway
    assert_eq!((using, using + available), (4, 254 - 1));
    env.server.shutdown().await;
}

#[tokio::test]
async fn static_conflicting_outside_and_malformed_requests() {
    let Some(env) = ControllerEnv::builder().start().await else {
        return;
    };
    let (client, nb) = (&env.client, env.nb_remote.as_str());
    default_subnet(&env).await;
    let wanted = [
        ("ovn.kubernetes.io/ip_address", "10.16.0.50"),
        ("ovn.kubernetes.io/mac_address", "00:00:00:AA:BB:CC"),
        ("ovn.kubernetes.io/port_security", "true"),
    ];
    let (fixed, outcome) = create_and_apply(&env, pod_object("default", "fixed", &wanted)).await;
    ready(outcome);
    let entry = "[\"00:00:00:aa:bb:cc 10.16.0.50\"]";
    assert_eq!(lsp_get(nb, "fixed.default", "addresses"), entry);
    assert_eq!(lsp_get(nb, "fixed.default", "port_security"), entry);
    assert_eq!(
        annotation(&fixed, "ip_address").as_deref(),
        Some("10.16.0.50")
    );
    let usage = using_ips(client, DEFAULT).await;
    let ports = port_rows(nb);

    let cases = [
        (
            "taken",
            ("ovn.kubernetes.io/ip_address", "10.16.0.50"),
            "AcquireAddressFailed",
            "10.16.0.50",
        ),
        (
            "outside",
            ("ovn.kubernetes.io/ip_address", "10.99.0.5"),
            "AcquireAddressFailed",
            "10.99.0.5",
        ),
        (
            "mac-taken",
            ("ovn.kubernetes.io/mac_address", "00:00:00:aa:bb:cc"),
            "AcquireAddressFailed",
            "00:00:00:aa:bb:cc",
        ),
        (
            "garbled",
            ("ovn.kubernetes.io/ip_address", "10.16.0.x"),
            "ValidatePodNetworkFailed",
            "ovn.kubernetes.io/ip_address",
        ),
        (
            "no-pool",
            ("ovn.kubernetes.io/ip_pool", "nope"),
            "ValidatePodNetworkFailed",
            "nope",
        ),
        (
            "no-subnet",
            ("ovn.kubernetes.io/logical_switch", "nope"),
            "ValidatePodNetworkFailed",
            "nope",
        ),
    ];
    for (name, kv, reason, offender) in cases {
        let (stored, outcome) = create_and_apply(&env, pod_object("default", name, &[kv])).await;
        let (got, message) = refused(outcome);
        assert_eq!(got, reason, "{name}: {message}");
        assert!(message.contains(offender), "{name}: {message}");
        let events = events_of(client, "default", name).await;
        assert!(
            events
                .iter()
                .any(|(r, m)| r == reason && m.contains(offender)),
            "{name}: {events:?}"
        );
        // nothing allocated or written: annotations as created, no port, same figures
        let expected: BTreeMap<String, String> = [(kv.0.to_string(), kv.1.to_string())].into();
        assert_eq!(stored.metadata.annotations, Some(expected), "{name}");
        assert!(!lsp_list(nb, DEFAULT).contains(&format!("({name}.default)")));
        let ip_name = format!("{name}.default");
        let ip_obj = Api::<IP>::all(client.clone()).get_opt(&ip_name).await;
        assert!(ip_obj.unwrap().is_none(), "{name}");
    }
    assert_eq!(using_ips(client, DEFAULT).await, usage);
    assert_eq!(port_rows(nb), ports);
    assert_eq!(get_pod(client, "default", "fixed").await.unwrap(), fixed);

    // two live pods claiming one address: the older keeps it, the younger gets another
    let claim = [
        ("ovn.kubernetes.io/allocated", "true"),
        ("ovn.kubernetes.io/ip_address", "10.16.0.50"),
        ("ovn.kubernetes.io/mac_address", "00:00:00:00:00:77"),
    ];
    let (twin, outcome) = create_and_apply(&env, pod_object("default", "twin", &claim)).await;
    let report = ready(outcome);
    let new_ip = annotation(&twin, "ip_address").unwrap();
    assert_ne!(new_ip, "10.16.0.50");
    assert_eq!(new_ip, report.allocation.ip_address_annotation());
    assert!(lsp_get(nb, "twin.default", "addresses").contains(&new_ip));
    let events = events_of(client, "default", "twin").await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "AddressConflict" && m.contains("default/fixed")),
        "{events:?}"
    );
    assert_eq!(lsp_get(nb, "fixed.default", "addresses"), entry);
    assert_eq!(get_pod(client, "default", "fixed").await.unwrap(), fixed);

    // the other way round: an older pod claims back what a younger one holds; the
    // younger gives it up (released, annotations cleared, an Event) and gets another
    let elder_claim = [
        ("ovn.kubernetes.io/allocated", "true"),
        ("ovn.kubernetes.io/ip_address", "10.16.0.60"),
        ("ovn.kubernetes.io/mac_address", "00:00:00:00:00:60"),
    ];
    // older by creation time, or by name within the same second
    let elder = create_pod(client, &pod_object("default", "a-elder", &elder_claim)).await;
    let static_60 = [("ovn.kubernetes.io/ip_address", "10.16.0.60")];
    let (young, outcome) =
        create_and_apply(&env, pod_object("default", "b-young", &static_60)).await;
    ready(outcome);
    assert_eq!(
        annotation(&young, "ip_address").as_deref(),
        Some("10.16.0.60")
    );
    let report = ready(apply(&env.ctx, &elder).await.unwrap());
    assert_eq!(report.allocation.ip_address_annotation(), "10.16.0.60");
    let young = get_pod(client, "default", "b-young").await.unwrap();
    assert_eq!(annotation(&young, "ip_address"), None);
    assert_eq!(annotation(&young, "allocated"), None);
    let events = events_of(client, "default", "b-young").await;
    assert!(
        events
            .iter()
            .any(|(r, m)| r == "AddressConflict" && m.contains("default/a-elder")),
        "{events:?}"
    );
    let moved = ready(apply(&env.ctx, &young).await.unwrap());
    let young_ip = moved.allocation.ip_address_annotation();
    assert_ne!(young_ip, "10.16.0.60");
    assert!(lsp_get(nb, "b-young.default", "addresses").contains(&young_ip));
    assert!(lsp_get(nb, "a-elder.default", "addresses").contains("10.16.0.60"));
    env.server.shutdown().await;
}

fn statefulset(name: &str, replicas: i32) -> StatefulSet {
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    StatefulSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: StatefulSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: pod_object("default", "t", &[]).spec,
            },
            ..Default::default()
        },
        status: None,
    }
}

fn sts_pod(sts: &StatefulSet, name: &str) -> Pod {
    let mut pod = pod_object("default", name, &[]);
    pod.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "StatefulSet".into(),
        name: sts.metadata.name.clone().unwrap(),
        uid: sts.metadata.uid.clone().unwrap(),
        controller: Some(true),
        ..Default::default()
    }]);
    pod
}

async fn wait_allocated(client: &Client, name: &str) -> Pod {
    eventually(&format!("{name} allocated and routed"), || async {
        get_pod(client, "default", name)
            .await
            .is_some_and(|p| annotation(&p, "routed").is_some())
    })
    .await;
    get_pod(client, "default", name).await.unwrap()
}

async fn delete_and_wait(client: &Client, name: &str) {
    Api::<Pod>::namespaced(client.clone(), "default")
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    eventually(&format!("{name} gone from the API"), || async {
        get_pod(client, "default", name).await.is_none()
    })
    .await;
}

#[tokio::test]
async fn delete_releases_everything_but_a_statefulset_pod_keeps_its_address() {
    let Some(env) = ControllerEnv::builder().start().await else {
        return;
    };
    let (client, nb) = (env.client.clone(), env.nb_remote.clone());
    let controller = tokio::spawn(run(env.ctx.clone()));
    eventually("ovn-default in NB", || async {
        common::nbctl(&nb, &["ls-list"]).contains("(ovn-default)")
    })
    .await;
    create_pod(&client, &pod_object("default", "p1", &[])).await;
    let p1 = wait_allocated(&client, "p1").await;
    assert_eq!(p1.metadata.finalizers, Some(vec![FINALIZER.to_string()]));
    assert!(lsp_list(&nb, DEFAULT).contains("(p1.default)"));
    port_bound_in_sb(&env.sb_remote, "p1.default").await;
    let ips = Api::<IP>::all(client.clone());
    assert!(ips.get_opt("p1.default").await.unwrap().is_some());
    eventually("usage shows p1", || async {
        using_ips(&client, DEFAULT).await.0 == 1
    })
    .await;

    delete_and_wait(&client, "p1").await;
    assert!(!lsp_list(&nb, DEFAULT).contains("(p1.default)"));
    assert!(ips.get_opt("p1.default").await.unwrap().is_none());
    let owner = kube_ovn_api::naming::pod_owner("default", "p1", "ovn");
    assert_eq!(env.ctx.ipam.get(DEFAULT, &owner).unwrap(), None);
    eventually("usage back to 0", || async {
        using_ips(&client, DEFAULT).await.0 == 0
    })
    .await;

    // a StatefulSet pod below replicas keeps its address when recreated under its name
    let sts = Api::<StatefulSet>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &statefulset("db", 2))
        .await
        .unwrap();
    create_pod(&client, &sts_pod(&sts, "db-1")).await;
    let first = wait_allocated(&client, "db-1").await;
    let ip = annotation(&first, "ip_address").unwrap();
    let ip_obj = ips.get("db-1.default").await.unwrap();
    assert_eq!(ip_obj.spec.pod_type.as_deref(), Some("StatefulSet"));
    delete_and_wait(&client, "db-1").await;
    assert!(lsp_list(&nb, DEFAULT).contains("(db-1.default)"));
    create_pod(&client, &sts_pod(&sts, "db-1")).await;
    let second = wait_allocated(&client, "db-1").await;
    assert_ne!(second.metadata.uid, first.metadata.uid);
    assert_eq!(annotation(&second, "ip_address"), Some(ip.clone()));
    assert_eq!(
        annotation(&second, "mac_address"),
        annotation(&first, "mac_address")
    );

    // one above replicas gives its address back
    create_pod(&client, &sts_pod(&sts, "db-2")).await;
    wait_allocated(&client, "db-2").await;
    delete_and_wait(&client, "db-2").await;
    assert!(!lsp_list(&nb, DEFAULT).contains("(db-2.default)"));
    assert!(ips.get_opt("db-2.default").await.unwrap().is_none());
    controller.abort();
    env.server.shutdown().await;
}

/// Deletes a pod without waiting for any finalizer (they are taken off first): what a
/// deletion that comes before the controller's result write looks like.
async fn delete_skipping_finalizers(client: &Client, name: &str) {
    let pods = Api::<Pod>::namespaced(client.clone(), "default");
    let none = serde_json::json!({ "metadata": { "finalizers": null } });
    pods.patch(name, &Default::default(), &kube::api::Patch::Merge(&none))
        .await
        .unwrap();
    delete_and_wait(client, name).await;
}

#[tokio::test]
async fn a_pod_deleted_before_its_result_write_leaves_nothing_behind() {
    let Some(env) = ControllerEnv::builder().start().await else {
        return;
    };
    let (client, nb) = (env.client.clone(), env.nb_remote.clone());
    default_subnet(&env).await;
    let ips = Api::<IP>::all(client.clone());
    let owner = |name: &str| kube_ovn_api::naming::pod_owner("default", name, "ovn");

    // the result write itself adds the finalizer: one write, not two
    let (kept, outcome) = create_and_apply(&env, pod_object("default", "kept", &[])).await;
    assert!(ready(outcome).annotations_patched);
    assert_eq!(kept.metadata.finalizers, Some(vec![FINALIZER.to_string()]));

    // deleted (no finalizer yet) while its address and port were being written: the
    // result write finds no pod, and what was written goes at once
    let stale = create_pod(&client, &pod_object("default", "gone", &[])).await;
    delete_and_wait(&client, "gone").await;
    match apply(&env.ctx, &stale).await.unwrap() {
        PodOutcome::Gone(report) => {
            assert_eq!(report.released, [DEFAULT]);
            assert!(report.port_removed && report.ip_removed, "{report:?}");
        }
        other => panic!("not gone: {other:?}"),
    }
    assert!(!lsp_list(&nb, DEFAULT).contains("(gone.default)"));
    assert!(ips.get_opt("gone.default").await.unwrap().is_none());
    assert_eq!(env.ctx.ipam.get(DEFAULT, &owner("gone")).unwrap(), None);

    // terminating (another controller's finalizer holds it) before the result write:
    // a terminating pod takes no new finalizer, and the network goes the same way
    let mut held = pod_object("default", "held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    let before_delete = create_pod(&client, &held).await;
    Api::<Pod>::namespaced(client.clone(), "default")
        .delete("held", &DeleteParams::default())
        .await
        .unwrap();
    match apply(&env.ctx, &before_delete).await.unwrap() {
        PodOutcome::Gone(report) => assert_eq!(report.released, [DEFAULT]),
        other => panic!("not gone: {other:?}"),
    }
    let stored = get_pod(&client, "default", "held").await.unwrap();
    assert_eq!(
        stored.metadata.finalizers,
        Some(vec!["example.com/hold".to_string()])
    );
    assert_eq!(annotation(&stored, "ip_address"), None);
    assert!(!lsp_list(&nb, DEFAULT).contains("(held.default)"));

    // the deleted-pod worker's step: leftovers of a pod deleted without the
    // finalizer are given back once; a second look finds nothing
    let (left, _) = create_and_apply(&env, pod_object("default", "left", &[])).await;
    delete_skipping_finalizers(&client, "left").await;
    assert!(lsp_list(&nb, DEFAULT).contains("(left.default)"));
    let report = clean_deleted(&env.ctx, &left)
        .await
        .unwrap()
        .expect("leftovers");
    assert_eq!(report.released, [DEFAULT]);
    assert!(!lsp_list(&nb, DEFAULT).contains("(left.default)"));
    assert!(ips.get_opt("left.default").await.unwrap().is_none());
    assert_eq!(clean_deleted(&env.ctx, &left).await.unwrap(), None);

    // a successor under the same name (a StatefulSet's, say) owns the name: the
    // predecessor's deletion leaves its address and port alone
    let (caches, feeds) = Caches::start(&client);
    let watches = tokio::spawn(feeds.watches.drive());
    caches.wait_until_ready().await;
    let cached = Context::clone(&env.ctx).with_caches(caches.clone());
    let (first, _) = create_and_apply(&env, pod_object("default", "twin", &[])).await;
    delete_skipping_finalizers(&client, "twin").await;
    let second = create_pod(&client, &pod_object("default", "twin", &[])).await;
    ready(apply(&cached, &second).await.unwrap());
    eventually("the cache holds the successor", || async {
        kube_ovn_controller::cache::cached::<Pod>(&caches, Some("default"), "twin")
            .is_some_and(|p| p.metadata.uid == second.metadata.uid)
    })
    .await;
    assert_eq!(clean_deleted(&cached, &first).await.unwrap(), None);
    assert!(lsp_list(&nb, DEFAULT).contains("(twin.default)"));
    assert!(env.ctx.ipam.get(DEFAULT, &owner("twin")).unwrap().is_some());
    watches.abort();
    env.server.shutdown().await;
}
