//! The start-up IPAM rebuild, garbage collection and the IPPool reconciler against the
//! embedded API server (our CRDs) and a real NB + ovn-northd. Pods, nodes, IP objects
//! and NB rows are written the way the pod and node reconcilers write them (annotations
//! through the typed structs, ports through ovn-nb).

use kube_ovn_test_support as common;
use kube_ovn_test_support::ControllerEnv;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use ipam::{AllocationRequest, Mac, Owner};
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod};
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use kube_ovn_api::annotations::{IpPair, NamespaceAnnotations, PodNetwork, Provider};
use kube_ovn_api::crd::conditions::{find, ConditionStatus, READY};
use kube_ovn_api::crd::{IPPool, IPPoolSpec, IPSpec, Subnet, SubnetSpec, IP};
use kube_ovn_api::naming::{
    node_owner, node_port_name, pod_key, pod_owner, pod_port_name, EXTERNAL_ID_LS,
    EXTERNAL_ID_NODE, EXTERNAL_ID_POD, EXTERNAL_ID_SUBNET, EXTERNAL_ID_VENDOR, OVN_PROVIDER,
};
use kube_ovn_controller::ipam_rebuild::{rebuild_ipam, REASON_ADDRESS_CONFLICT};
use kube_ovn_controller::{gc, ippool, VENDOR};
use ovn_nb::{LogicalRouterPolicyAction, LogicalSwitchPort, NbClient, PolicySpec, RouteSpec};

/// NB with the start-up rows, the API server with our CRDs and the default Subnets.
async fn env() -> Option<ControllerEnv> {
    ControllerEnv::builder().default_subnets().start().await
}

fn meta(name: &str, namespace: Option<&str>, annotations: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(Into::into),
        annotations: Some(annotations),
        ..Default::default()
    }
}

async fn create_namespace(client: &Client, name: &str) {
    let ns = Namespace {
        metadata: meta(name, None, BTreeMap::new()),
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

/// A pod whose primary NIC the pod reconciler allocated `ip` (and `mac`) on `subnet`.
async fn create_allocated_pod(
    client: &Client,
    ns: &str,
    name: &str,
    subnet: &str,
    ip: &str,
    mac: &str,
) {
    let net = PodNetwork {
        allocated: Some(true),
        ip_address: Some(IpPair::v4(ip.parse().unwrap())),
        mac_address: Some(mac.parse::<Mac>().unwrap()),
        logical_switch: Some(subnet.into()),
        ..PodNetwork::default()
    };
    let mut annotations = BTreeMap::new();
    net.write_into(&Provider::ovn(), &mut annotations);
    let pod = common::plain_pod(ns, name, annotations);
    Api::<Pod>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
}

/// A node whose join address the node reconciler allocated.
async fn create_allocated_node(client: &Client, name: &str, ip: &str) {
    let node = common::node_object(name, common::joined_node_annotations(name, ip), None);
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
        .unwrap();
}

/// The IP object the pod reconciler writes for a pod NIC (`namespace` None: a node's).
async fn create_ip_object(
    client: &Client,
    name: &str,
    pod: &str,
    namespace: Option<&str>,
    subnet: &str,
    ip: &str,
) {
    let object = IP::new(
        name,
        IPSpec {
            pod_name: Some(pod.into()),
            namespace: namespace.map(Into::into),
            subnet: Some(subnet.into()),
            node_name: namespace.is_none().then(|| pod.into()),
            ip_address: Some(ip.into()),
            v4_ip_address: Some(ip.into()),
            ..Default::default()
        },
    );
    Api::<IP>::all(client.clone())
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
}

/// The LSP the pod (or node) reconciler writes.
async fn create_port(nb: &NbClient, ls: &str, name: &str, pod: Option<&str>) {
    let mut ids = BTreeMap::from([
        (EXTERNAL_ID_VENDOR.to_owned(), VENDOR.to_owned()),
        (EXTERNAL_ID_LS.to_owned(), ls.to_owned()),
    ]);
    if let Some(pod) = pod {
        ids.insert(EXTERNAL_ID_POD.to_owned(), pod.to_owned());
    }
    let port = LogicalSwitchPort {
        name: name.into(),
        external_ids: ids,
        ..Default::default()
    };
    let mut txn = nb.txn();
    // the Subnet reconciler creates the switch; it does not run here
    txn.may_exist().ls_add(ls).unwrap();
    txn.lsp_add_row(ls, port).unwrap();
    nb.commit(txn).await.unwrap();
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn port_names(nb: &NbClient) -> Vec<String> {
    let rows = nb.store().rows::<LogicalSwitchPort>().unwrap();
    rows.into_iter().map(|s| s.row.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebuild_then_new_addresses_never_collide_and_an_orphan_port_frees_only_after_gc() {
    let Some(env) = env().await else {
        return;
    };
    let (client, ctx) = (&env.client, &env.ctx);
    create_namespace(client, "rb").await;
    // a subnet with exclusions, besides the defaults
    let custom = Subnet::new(
        "rb-net",
        SubnetSpec {
            cidr_block: Some("10.77.0.0/24".into()),
            exclude_ips: vec!["10.77.0.2..10.77.0.9".into()],
            ..Default::default()
        },
    );
    Api::<Subnet>::all(client.clone())
        .create(&PostParams::default(), &custom)
        .await
        .unwrap();
    create_allocated_pod(
        client,
        "rb",
        "web-1",
        "ovn-default",
        "10.16.0.3",
        "0a:00:00:00:00:03",
    )
    .await;
    create_allocated_pod(
        client,
        "rb",
        "web-2",
        "ovn-default",
        "10.16.0.5",
        "0a:00:00:00:00:05",
    )
    .await;
    create_allocated_pod(
        client,
        "rb",
        "edge",
        "rb-net",
        "10.77.0.10",
        "0a:00:00:00:00:10",
    )
    .await;
    create_allocated_node(client, "n1", "100.64.0.2").await;
    // a pod deleted while no controller ran: its IP object and port stayed (#4304)
    create_ip_object(
        client,
        "gone.rb",
        "gone",
        Some("rb"),
        "ovn-default",
        "10.16.0.4",
    )
    .await;
    create_port(
        &ctx.nb,
        "ovn-default",
        "gone.rb",
        Some(&pod_key("rb", "gone")),
    )
    .await;
    create_port(
        &ctx.nb,
        "ovn-default",
        &pod_port_name("rb", "web-1", OVN_PROVIDER),
        Some(&pod_key("rb", "web-1")),
    )
    .await;

    let summary = rebuild_ipam(ctx).await.unwrap();
    assert!(summary.conflicts.is_empty(), "{summary:?}");
    assert!(summary.refused.is_empty(), "{summary:?}");
    assert_eq!(summary.loaded, 5, "{summary:?}");
    let gone = pod_owner("rb", "gone", OVN_PROVIDER);
    assert_eq!(
        ctx.ipam.owner_of("ovn-default", ip("10.16.0.4")).unwrap(),
        Some(gone.clone())
    );

    // new allocations pass over every address already given out, and the exclusions
    let taken: Vec<IpAddr> = ["10.16.0.3", "10.16.0.4", "10.16.0.5"].map(ip).to_vec();
    for i in 0..8 {
        let owner = Owner::new(format!("rb/new-{i}"), OVN_PROVIDER);
        let got = ctx
            .ipam
            .allocate("ovn-default", &owner, &AllocationRequest::next_free())
            .unwrap();
        let addr = got.addresses().next().unwrap();
        assert!(!taken.contains(&addr), "{addr} handed out twice");
        let edge = Owner::new(format!("rb/edge-{i}"), OVN_PROVIDER);
        let got = ctx
            .ipam
            .allocate("rb-net", &edge, &AllocationRequest::next_free())
            .unwrap();
        let IpAddr::V4(v4) = got.addresses().next().unwrap() else {
            panic!("v4 subnet")
        };
        assert!(v4.octets()[3] > 10, "{v4} is excluded or taken");
    }
    let node = node_owner("n2");
    let got = ctx
        .ipam
        .allocate("join", &node, &AllocationRequest::next_free())
        .unwrap();
    assert_ne!(got.addresses().next(), Some(ip("100.64.0.2")));

    // start-up GC: the orphan's port and IP object go, then its address is free
    let report = gc::collect_garbage(ctx).await.unwrap();
    assert_eq!(report.ports, vec!["gone.rb".to_owned()]);
    assert_eq!(report.ips, vec!["gone.rb".to_owned()]);
    let ports = port_names(&ctx.nb);
    assert!(!ports.contains(&"gone.rb".to_owned()), "{ports:?}");
    assert!(ports.contains(&"web-1.rb".to_owned()), "{ports:?}");
    let listed = common::nbctl(&env.nb_remote, &["lsp-list", "ovn-default"]);
    assert!(
        !listed.contains("gone.rb") && listed.contains("web-1.rb"),
        "{listed}"
    );
    assert!(Api::<IP>::all(client.clone())
        .get_opt("gone.rb")
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        ctx.ipam.owner_of("ovn-default", ip("10.16.0.4")).unwrap(),
        None
    );
    // a second round finds nothing more
    assert_eq!(
        gc::collect_garbage(ctx).await.unwrap(),
        gc::GcReport::default()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pods_claiming_one_address_the_older_keeps_it_and_the_other_is_reported() {
    let Some(env) = env().await else {
        return;
    };
    let (client, ctx) = (&env.client, &env.ctx);
    create_namespace(client, "cf").await;
    create_allocated_pod(
        client,
        "cf",
        "zz-old",
        "ovn-default",
        "10.16.0.20",
        "0a:00:00:00:00:20",
    )
    .await;
    // creation timestamps have one-second resolution: make the second pod younger
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // its name sorts first, so only age can make it lose
    create_allocated_pod(
        client,
        "cf",
        "aa-new",
        "ovn-default",
        "10.16.0.20",
        "0a:00:00:00:00:21",
    )
    .await;

    let summary = rebuild_ipam(ctx).await.unwrap();
    assert_eq!(summary.conflicts.len(), 1, "{summary:?}");
    let conflict = &summary.conflicts[0];
    let (old, new) = (
        pod_owner("cf", "zz-old", OVN_PROVIDER),
        pod_owner("cf", "aa-new", OVN_PROVIDER),
    );
    assert_eq!((&conflict.kept, &conflict.loser), (&old, &new));
    assert_eq!(
        ctx.ipam.owner_of("ovn-default", ip("10.16.0.20")).unwrap(),
        Some(old.clone())
    );
    assert_eq!(ctx.ipam.get("ovn-default", &new).unwrap(), None);

    let events = Api::<Event>::namespaced(client.clone(), "cf")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let reported: Vec<_> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some(REASON_ADDRESS_CONFLICT))
        .map(|e| e.involved_object.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(reported, vec!["aa-new".to_owned()], "{events:?}");
    let annotations = |pod: Pod| pod.metadata.annotations.unwrap_or_default();
    let pods = Api::<Pod>::namespaced(client.clone(), "cf");
    let loser = PodNetwork::parse(
        &Provider::ovn(),
        &annotations(pods.get("aa-new").await.unwrap()),
    )
    .unwrap();
    let winner = PodNetwork::parse(
        &Provider::ovn(),
        &annotations(pods.get("zz-old").await.unwrap()),
    )
    .unwrap();
    assert!(!loser.is_allocated(), "the loser must be allocated afresh");
    assert!(winner.is_allocated());
    // a rebuild after a leader change gives the same answer
    rebuild_ipam(ctx).await.unwrap();
    assert_eq!(
        ctx.ipam.owner_of("ovn-default", ip("10.16.0.20")).unwrap(),
        Some(old)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_removes_router_entries_join_ports_and_ip_objects_of_gone_nodes_and_keeps_owned_ones() {
    let Some(env) = env().await else {
        return;
    };
    let (client, ctx) = (&env.client, &env.ctx);
    create_allocated_node(client, "live", "100.64.0.2").await;
    create_ip_object(
        client,
        &node_port_name("live"),
        "live",
        None,
        "join",
        "100.64.0.2",
    )
    .await;
    create_ip_object(
        client,
        &node_port_name("dead"),
        "dead",
        None,
        "join",
        "100.64.0.3",
    )
    .await;
    create_port(&ctx.nb, "join", &node_port_name("live"), None).await;
    create_port(&ctx.nb, "join", &node_port_name("dead"), None).await;
    rebuild_ipam(ctx).await.unwrap();
    let router = &ctx.config.cluster_router;
    let ids = |key: &str, value: &str| {
        BTreeMap::from([
            (EXTERNAL_ID_VENDOR.to_owned(), VENDOR.to_owned()),
            (key.to_owned(), value.to_owned()),
        ])
    };
    let mut txn = ctx.nb.txn();
    for (node, addr) in [("live", "10.16.0.0"), ("dead", "10.16.1.0")] {
        let policy = PolicySpec {
            priority: 30000,
            r#match: format!("ip4.dst == {addr}"),
            action: LogicalRouterPolicyAction::Allow,
            nexthops: Default::default(),
            options: Default::default(),
            external_ids: ids(EXTERNAL_ID_NODE, node),
        };
        txn.lr_policy_add(router, policy).unwrap();
    }
    for (subnet, prefix) in [
        ("ovn-default", "192.168.1.0/24"),
        ("deleted-subnet", "192.168.2.0/24"),
    ] {
        let route = RouteSpec {
            ip_prefix: prefix.into(),
            nexthop: "100.64.0.1".into(),
            output_port: None,
            policy: None,
            route_table: String::new(),
            ecmp: false,
            external_ids: ids(EXTERNAL_ID_SUBNET, subnet),
        };
        txn.lr_route_add(router, route).unwrap();
    }
    ctx.nb.commit(txn).await.unwrap();

    let report = gc::collect_garbage(ctx).await.unwrap();
    assert_eq!((report.policies, report.routes), (1, 1), "{report:?}");
    assert_eq!(report.ports, vec![node_port_name("dead")]);
    assert_eq!(report.ips, vec![node_port_name("dead")]);
    let policies = common::nbctl(&env.nb_remote, &["lr-policy-list", router]);
    assert!(
        policies.contains("10.16.0.0") && !policies.contains("10.16.1.0"),
        "{policies}"
    );
    let routes = common::nbctl(&env.nb_remote, &["lr-route-list", router]);
    assert!(
        routes.contains("192.168.1.0/24") && !routes.contains("192.168.2.0/24"),
        "{routes}"
    );
    let ports = port_names(&ctx.nb);
    assert!(ports.contains(&node_port_name("live")) && !ports.contains(&node_port_name("dead")));
    let ips = Api::<IP>::all(client.clone());
    assert!(ips
        .get_opt(&node_port_name("live"))
        .await
        .unwrap()
        .is_some());
    assert!(ips
        .get_opt(&node_port_name("dead"))
        .await
        .unwrap()
        .is_none());
    assert_eq!(ctx.ipam.owner_of("join", ip("100.64.0.3")).unwrap(), None);
    assert_eq!(
        ctx.ipam.owner_of("join", ip("100.64.0.2")).unwrap(),
        Some(node_owner("live"))
    );
}

fn ready(pool: &IPPool) -> (ConditionStatus, String, String) {
    let conds = &pool.status.as_ref().expect("a status").conditions;
    let c = find(conds, READY).unwrap_or_else(|| panic!("no Ready condition: {conds:?}"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

async fn ip_pool_of(client: &Client, ns: &str) -> Option<String> {
    let ns = Api::<Namespace>::all(client.clone()).get(ns).await.unwrap();
    let map = ns.metadata.annotations.unwrap_or_default();
    NamespaceAnnotations::parse(&map)
        .unwrap()
        .ip_pool
        .map(|n| n.0.join(","))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ippool_is_registered_and_a_bad_one_is_refused_changing_nothing() {
    let Some(env) = env().await else {
        return;
    };
    let (client, ctx) = (&env.client, &env.ctx);
    rebuild_ipam(ctx).await.unwrap();
    create_namespace(client, "pool-ns").await;
    let api = Api::<IPPool>::all(client.clone());
    let spec = IPPoolSpec {
        subnet: "ovn-default".into(),
        namespaces: vec!["pool-ns".into()],
        ips: vec!["10.16.9.0/30".into()],
        enable_address_set: None,
    };
    let pool = api
        .create(&PostParams::default(), &IPPool::new("pool-a", spec))
        .await
        .unwrap();
    let report = ippool::apply(ctx, &pool).await.unwrap();
    assert_eq!(report.refused, None);
    let pool = api.get("pool-a").await.unwrap();
    assert_eq!(ready(&pool).0, ConditionStatus::True);
    let usage = ctx.ipam.pool_usage("ovn-default", "pool-a").unwrap();
    let status = pool.status.clone().unwrap();
    assert_eq!(
        status.v4_available_ips.map(|c| c.0),
        Some(usage.v4.available)
    );
    assert_eq!(
        status.v4_available_ip_range,
        Some(usage.v4.available_range.clone())
    );
    // a /30 holds four addresses, all inside the subnet
    assert_eq!(usage.v4.available, 4);
    assert_eq!(
        ip_pool_of(client, "pool-ns").await.as_deref(),
        Some("pool-a")
    );
    // an address from the pool for a pod of its namespace
    let req = AllocationRequest {
        pool: Some("pool-a".into()),
        ..AllocationRequest::default()
    };
    let got = ctx
        .ipam
        .allocate(
            "ovn-default",
            &pod_owner("pool-ns", "p", OVN_PROVIDER),
            &req,
        )
        .unwrap();
    let IpAddr::V4(v4) = got.addresses().next().unwrap() else {
        panic!("v4")
    };
    assert_eq!(&v4.octets()[..3], &[10, 16, 9]);
    let before = ctx.ipam.pool_usage("ovn-default", "pool-a").unwrap();

    // an address outside the subnet: refused, named, and nothing changes
    let patch = serde_json::json!({ "spec": { "ips": ["10.99.0.5"], "namespaces": ["other-ns"] } });
    let bad = api
        .patch("pool-a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let report = ippool::apply(ctx, &bad).await.unwrap();
    let refused = report.refused.expect("refused");
    assert!(refused.contains("10.99.0.5"), "{refused}");
    let (status, _, message) = ready(&api.get("pool-a").await.unwrap());
    assert_eq!(status, ConditionStatus::False);
    assert!(message.contains("10.99.0.5"), "{message}");
    assert_eq!(
        ctx.ipam.pool_usage("ovn-default", "pool-a").unwrap(),
        before
    );
    assert_eq!(
        ip_pool_of(client, "pool-ns").await.as_deref(),
        Some("pool-a")
    );

    // deleting returns the addresses and unbinds the namespace
    ippool::cleanup(ctx, &pool).await.unwrap();
    assert!(ctx.ipam.pool_usage("ovn-default", "pool-a").is_err());
    assert_eq!(ip_pool_of(client, "pool-ns").await, None);
}

/// Polls `check` until it holds, failing after 30 s.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ippool_reconciler_keeps_a_finalizer_and_a_deleted_pool_unbinds_its_namespace() {
    let Some(env) = env().await else {
        return;
    };
    let (client, ctx) = (&env.client, &env.ctx);
    rebuild_ipam(ctx).await.unwrap();
    create_namespace(client, "fin-ns").await;
    let reconciler = tokio::spawn(ippool::run(ctx.clone()));
    let api = Api::<IPPool>::all(client.clone());
    let spec = IPPoolSpec {
        subnet: "ovn-default".into(),
        namespaces: vec!["fin-ns".into()],
        ips: vec!["10.16.8.1..10.16.8.4".into()],
        enable_address_set: None,
    };
    api.create(&PostParams::default(), &IPPool::new("pool-f", spec))
        .await
        .unwrap();
    eventually("the pool bound and ready", || async {
        let pool = api.get("pool-f").await.unwrap();
        let ready = pool
            .status
            .as_ref()
            .and_then(|s| find(&s.conditions, READY))
            .is_some_and(|c| c.status == ConditionStatus::True);
        ready && ip_pool_of(client, "fin-ns").await.as_deref() == Some("pool-f")
    })
    .await;
    let pool = api.get("pool-f").await.unwrap();
    assert!(pool.finalizers().contains(&ippool::FINALIZER.to_owned()));
    assert!(ctx.ipam.pool_usage("ovn-default", "pool-f").is_ok());

    api.delete("pool-f", &Default::default()).await.unwrap();
    eventually("the pool gone", || async {
        api.get_opt("pool-f").await.unwrap().is_none()
    })
    .await;
    assert_eq!(ip_pool_of(client, "fin-ns").await, None);
    assert!(ctx.ipam.pool_usage("ovn-default", "pool-f").is_err());
    reconciler.abort();
}
