//! Fifty pods set up at once from a multi-threaded runtime.

use std::collections::BTreeSet;
use std::path::PathBuf;

use futures::future::join_all;

use crate::common::*;

const PODS: usize = 50;

fn netns_of_this_thread() -> PathBuf {
    std::fs::read_link("/proc/thread-self/ns/net").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_pods_in_parallel_stay_in_their_namespaces() {
    if !require_root() {
        return;
    }
    let host_ns = netns_of_this_thread();
    let bridge = TestLink::bridge();
    let namespaces: Vec<TestNetns> = (0..PODS).map(|_| TestNetns::new()).collect();
    let mut pods = Vec::new();
    let mut guards = Vec::new();
    for (i, ns) in namespaces.iter().enumerate() {
        let addr = format!("10.81.{}.{}/16", i / 200, i % 200 + 10);
        let (mut p, g) = pod(ns, Some(&bridge), &[&addr]);
        p.container.mac = Some(mac(&format!("0a:58:00:81:00:{i:02x}")));
        pods.push(p);
        guards.push(g);
    }
    let results = join_all(pods.iter().map(|p| {
        let p = p.clone();
        tokio::spawn(async move { datapath::setup(&p).await })
    }))
    .await;
    for r in results {
        r.unwrap().unwrap();
    }

    // No tokio worker was left in a pod namespace.
    let seen = join_all((0..32).map(|_| tokio::spawn(async { netns_of_this_thread() }))).await;
    assert!(seen.into_iter().all(|ns| ns.unwrap() == host_ns));

    let host_links: BTreeSet<String> = link_names(None).into_iter().collect();
    for (i, (p, ns)) in pods.iter().zip(&namespaces).enumerate() {
        assert!(host_links.contains(&p.host.name));
        assert!(!host_links.contains(&p.container.temp_name));
        let links = ip_json(Some(&ns.name), &["addr", "show"]);
        let links = links.as_array().unwrap();
        let names: Vec<&str> = links
            .iter()
            .map(|l| l["ifname"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["lo", "eth0"], "pod {i}");
        assert_eq!(links[1]["address"], format!("0a:58:00:81:00:{i:02x}"));
        let v4: Vec<&str> = links[1]["addr_info"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["family"] == "inet")
            .map(|a| a["local"].as_str().unwrap())
            .collect();
        assert_eq!(
            v4,
            vec![p.container.addresses[0].addr().to_string()],
            "pod {i}"
        );
    }
    let ports = ip_json(None, &["link", "show", "master", &bridge.name]);
    assert_eq!(ports.as_array().unwrap().len(), PODS);
    // A pod reaches one of the other pods across the bridge.
    assert!(namespaces[0].ping(pods[PODS - 1].container.addresses[0].addr()));

    let removed = join_all(pods.iter().map(|p| {
        let p = p.clone();
        tokio::spawn(async move { datapath::teardown(&p).await })
    }))
    .await;
    assert!(removed
        .into_iter()
        .all(|r| r.unwrap().unwrap().host_end_removed));
    let after: BTreeSet<String> = link_names(None).into_iter().collect();
    assert!(pods.iter().all(|p| !after.contains(&p.host.name)));
}
