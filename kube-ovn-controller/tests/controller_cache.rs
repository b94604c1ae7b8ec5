//! The controller's reflector caches and coalesced usage writes, against the embedded
//! API server with our CRDs: the stores hold every kind once filled and follow
//! changes, the shared Pod watch hands each pod to its subscriber, an IP object
//! write that trusts a cache a moment behind still ends right, and a burst of usage
//! marks becomes one or two Subnet status writes with the final figures.

use kube_ovn_test_support as common;
use kube_ovn_test_support::ControllerEnv;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use ipam::{AllocationRequest, Ipam, Owner, SubnetSpec as IpamSubnetSpec};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::watcher::{self, watcher, Event};
use kube_ovn_api::crd::{IPPool, IPPoolSpec, Subnet, SubnetSpec, IP};
use kube_ovn_controller::cache::{cached, Caches};
use kube_ovn_controller::pod::ip_object::{desired_ip, ensure_ip, IpHolder};
use kube_ovn_controller::pod::status::UsageQueue;
use kube_ovn_controller::Context;

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: namespace.map(Into::into),
        ..Default::default()
    }
}

fn pod(ns: &str, name: &str) -> Pod {
    common::plain_pod(ns, name, Default::default())
}

fn subnet(name: &str, cidr: &str) -> Subnet {
    Subnet {
        metadata: meta(name, None),
        spec: SubnetSpec {
            cidr_block: Some(cidr.into()),
            ..Default::default()
        },
        status: None,
    }
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_stores_hold_every_kind_once_filled_and_the_pod_watch_feeds_its_subscriber() {
    let (_server, client) = common::api_server_with_crds().await;
    let post = PostParams::default();
    Api::<Namespace>::all(client.clone())
        .create(
            &post,
            &Namespace {
                metadata: meta("ns1", None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    Api::<Node>::all(client.clone())
        .create(
            &post,
            &Node {
                metadata: meta("node1", None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    Api::<Subnet>::all(client.clone())
        .create(&post, &subnet("net1", "10.7.0.0/24"))
        .await
        .unwrap();
    let pool = IPPool::new(
        "pool1",
        IPPoolSpec {
            subnet: "net1".into(),
            namespaces: vec!["ns1".into()],
            ips: vec!["10.7.0.8/30".into()],
            enable_address_set: None,
        },
    );
    Api::<IPPool>::all(client.clone())
        .create(&post, &pool)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "ns1");
    pods.create(&post, &pod("ns1", "before")).await.unwrap();

    let (caches, feeds) = Caches::start(&client);
    // the policy reconciler does not run here: its triggers go, as run() drops them
    drop(feeds.policy_triggers);
    let watches = tokio::spawn(feeds.watches.drive());
    let mut pod_events = feeds.pod_events;
    tokio::time::timeout(Duration::from_secs(20), caches.wait_until_ready())
        .await
        .expect("every store filled");
    assert!(cached::<Namespace>(&caches, None, "ns1").is_some());
    assert!(cached::<Node>(&caches, None, "node1").is_some());
    assert!(cached::<IPPool>(&caches, None, "pool1").is_some());
    let cached_subnet = cached::<Subnet>(&caches, None, "net1").expect("the subnet");
    assert_eq!(
        cached_subnet.spec.cidr_block.as_deref(),
        Some("10.7.0.0/24")
    );
    let before = cached::<Pod>(&caches, Some("ns1"), "before").expect("the pod");
    assert!(
        before.metadata.managed_fields.is_none()
            || before
                .metadata
                .managed_fields
                .as_ref()
                .is_some_and(Vec::is_empty),
        "managedFields are not kept"
    );
    assert!(cached::<Pod>(&caches, Some("other"), "before").is_none());

    // the subscriber sees the listed pod, then a new one, each already in the store
    let first = tokio::time::timeout(Duration::from_secs(20), pod_events.next())
        .await
        .expect("an event")
        .expect("the stream goes on");
    assert_eq!(first.metadata.name.as_deref(), Some("before"));
    pods.create(&post, &pod("ns1", "after")).await.unwrap();
    let second = tokio::time::timeout(Duration::from_secs(20), pod_events.next())
        .await
        .expect("an event")
        .expect("the stream goes on");
    assert_eq!(second.metadata.name.as_deref(), Some("after"));
    assert!(cached::<Pod>(&caches, Some("ns1"), "after").is_some());

    // deletions follow too
    Api::<Subnet>::all(client.clone())
        .delete("net1", &Default::default())
        .await
        .unwrap();
    let c = caches.clone();
    eventually("the deleted subnet leaves the store", || {
        let gone = cached::<Subnet>(&c, None, "net1").is_none();
        async move { gone }
    })
    .await;
    watches.abort();
}

#[tokio::test]
async fn an_ip_object_written_from_a_cache_a_moment_behind_still_ends_right() {
    let (_server, client) = common::api_server_with_crds().await;
    let api: Api<IP> = Api::all(client.clone());
    let ipam = Ipam::new();
    ipam.add_or_update_subnet("net1", &IpamSubnetSpec::new("10.8.0.0/24"))
        .unwrap();
    let alloc = ipam
        .allocate(
            "net1",
            &Owner::new("ns1/p", "ovn"),
            &AllocationRequest::next_free(),
        )
        .unwrap();
    let holder = IpHolder {
        name: "p.ns1",
        pod: "p",
        namespace: "ns1",
        node: Some("node1"),
        pod_type: None,
    };
    let wanted = desired_ip(&holder, "net1", &alloc);
    // the cache has not seen it: created
    assert!(ensure_ip(&api, &wanted, Some(None)).await.unwrap());
    // the cache still has not seen it: the refused create is not an error, and the
    // object already says what is wanted
    assert!(!ensure_ip(&api, &wanted, Some(None)).await.unwrap());
    // a cache holding it as wanted: nothing to write
    let stored = Arc::new(api.get("p.ns1").await.unwrap());
    assert!(!ensure_ip(&api, &wanted, Some(Some(stored.clone())))
        .await
        .unwrap());
    // the pod moved node while the cache lags: the server's copy is updated
    let moved = desired_ip(
        &IpHolder {
            node: Some("node2"),
            ..holder.clone()
        },
        "net1",
        &alloc,
    );
    assert!(ensure_ip(&api, &moved, Some(Some(stored))).await.unwrap());
    let now = api.get("p.ns1").await.unwrap();
    assert_eq!(now.spec.node_name.as_deref(), Some("node2"));
    assert!(ensure_ip(&api, &moved, Some(None)).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_usage_marks_is_written_once_or_twice_with_the_last_figures() {
    // the writer works through a controller's context, which holds an NB client
    let Some(env) = ControllerEnv::builder().without_bootstrap().start().await else {
        return;
    };
    let (client, ctx) = (env.client.clone(), Context::clone(&env.ctx));
    let subnets: Api<Subnet> = Api::all(client.clone());
    subnets
        .create(&PostParams::default(), &subnet("net1", "10.9.0.0/24"))
        .await
        .unwrap();
    let ipam = ctx.ipam.clone();
    ipam.add_or_update_subnet("net1", &IpamSubnetSpec::new("10.9.0.0/24"))
        .unwrap();
    // every status change the API server makes to the subnet, from here on
    let mut changes = watcher(subnets.clone(), watcher::Config::default()).boxed();
    let writes = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = writes.clone();
    let counter = tokio::spawn(async move {
        while let Some(Ok(event)) = changes.next().await {
            if let Event::Apply(s) = event {
                if s.status.is_some() {
                    seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        }
    });
    let (queue, writer) = UsageQueue::new();
    let writer = tokio::spawn(writer.run(ctx.clone()));
    for i in 0..50 {
        ipam.allocate(
            "net1",
            &Owner::new(format!("ns1/p{i}"), "ovn"),
            &AllocationRequest::next_free(),
        )
        .unwrap();
        queue.mark("net1");
    }
    let api = subnets.clone();
    eventually("the figures show 50 addresses in use", || {
        let api = api.clone();
        async move {
            let s = api.get("net1").await.unwrap();
            s.status
                .and_then(|st| st.v4_using_ips)
                .is_some_and(|n| n.0 == 50)
        }
    })
    .await;
    // past the writer's rest, so a second round would have shown
    tokio::time::sleep(kube_ovn_controller::pod::status::USAGE_SETTLE * 3).await;
    let n = writes.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        (1..=2).contains(&n),
        "50 marks in a burst made {n} status writes"
    );
    let s = subnets.get("net1").await.unwrap().status.unwrap();
    let usage = ipam.subnet_usage("net1").unwrap().subnet_status();
    assert_eq!(usage.v4_using_ips, 50);
    assert_eq!(
        s.v4_available_ips.map(|c| c.0),
        Some(usage.v4_available_ips)
    );
    // a subnet that does not exist is not an error for the writer: it goes on
    queue.mark("no-such-subnet");
    ipam.release("net1", &Owner::new("ns1/p0", "ovn")).unwrap();
    queue.mark("net1");
    eventually("the release shows", || {
        let api = api.clone();
        async move {
            let s = api.get("net1").await.unwrap();
            s.status
                .and_then(|st| st.v4_using_ips)
                .is_some_and(|n| n.0 == 49)
        }
    })
    .await;
    drop(queue);
    tokio::time::timeout(Duration::from_secs(5), writer)
        .await
        .expect("the writer stops when its queue is gone")
        .unwrap();
    counter.abort();
}
