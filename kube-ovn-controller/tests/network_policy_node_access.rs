//! Node access through NetworkPolicies (issue 14): while a policy exists, each node
//! keeps reaching the pods scheduled on it (kubelet's probes come from the node
//! through `ovn0`, its join port), through Kube-OVN's `node.<node>` port groups and
//! their priority-3000 allow-related ACLs; a node reaches no other node's isolated
//! pods; with the last policy gone the groups go too. Proven with the real
//! `ovn-nbctl` (rows) and `ovn-trace` on the real Southbound (packets from the join
//! ports through the cluster router).

use kube_ovn_test_support as common;
use kube_ovn_test_support::netpol;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube_ovn_controller::network_policy::names::Family;
use kube_ovn_controller::network_policy::sync;
use netpol::eval::PodInfo;
use netpol::layout::{self, ip4, pod_mac, router_mac, switch, ROUTER};
use netpol::table::np;
use ovn_nb::{NbClient, PortGroup};
use serde_json::json;

const NO_POLICIES: &[NetworkPolicy] = &[];
const JOIN_ROUTER_MAC: &str = "00:00:00:00:64:01";

/// (node, join port MAC, join address, InternalIP)
const NODES: [(&str, &str, &str, &str); 2] = [
    (
        "kube-ovn-w1",
        "0a:00:00:00:64:02",
        "100.64.0.2",
        "172.18.0.2",
    ),
    (
        "kube-ovn-w2",
        "0a:00:00:00:64:03",
        "100.64.0.3",
        "172.18.0.3",
    ),
];

/// Pods a and b of every namespace run on w1, c on w2.
fn node_of(pod: &str) -> &'static str {
    if pod == "c" {
        NODES[1].0
    } else {
        NODES[0].0
    }
}

/// The join switch on the layout's router, with one `node-<node>` port per node.
fn join_topology() -> Vec<String> {
    let router = common::RouterPort {
        router: ROUTER,
        mac: JOIN_ROUTER_MAC,
        network: "100.64.0.1/16",
    };
    let nodes = NODES.iter().map(|(node, mac, ip, _)| (node, mac, ip));
    common::join_switch(Some(router), nodes)
}

fn node_object(name: &str, join_ip: &str, internal_ip: &str) -> Node {
    common::node_object(
        name,
        common::joined_node_annotations(name, join_ip),
        Some(internal_ip),
    )
}

fn trace(sb: &str, datapath: &str, flow: &str) -> String {
    let db = format!("--db={sb}");
    let args = [
        db.as_str(),
        "--ct=new",
        "--ct=new",
        "--ct=new",
        "--ct=new",
        "--minimal",
        datapath,
        flow,
    ];
    ovn_harness::run("ovn-trace", &args).expect("ovn-trace")
}

/// Whether a new TCP connection from `node`'s join port to pod `dst` port 80 is
/// delivered.
fn node_reaches(sb: &str, node: usize, dst: &PodInfo) -> bool {
    let (name, mac, ip, _) = NODES[node];
    let flow = format!(
        "inport == \"node-{name}\" && eth.src == {mac} && eth.dst == {JOIN_ROUTER_MAC} && ip4.src == {ip} && ip4.dst == {} && ip.ttl == 64 && tcp.dst == 80",
        ip4(dst)
    );
    let out = trace(sb, "join", &flow);
    out.contains(&format!("output(\"{}.{}\")", dst.name, dst.namespace))
}

/// Whether a new TCP connection from pod `src` to `node`'s join address port 10250
/// (what a pod's own traffic to its node looks like) is delivered to the join port.
fn pod_reaches_node(sb: &str, src: &PodInfo, node: usize) -> bool {
    let (name, _, ip, _) = NODES[node];
    let flow = format!(
        "inport == \"{}.{}\" && eth.src == {} && eth.dst == {} && ip4.src == {} && ip4.dst == {ip} && ip.ttl == 64 && tcp.dst == 10250",
        src.name,
        src.namespace,
        pod_mac(&src.namespace, &src.name),
        router_mac(&src.namespace),
        ip4(src)
    );
    let out = trace(sb, &switch(&src.namespace), &flow);
    out.contains(&format!("output(\"node-{name}\")"))
}

fn node_groups(nb: &NbClient) -> Vec<String> {
    let mut names: Vec<String> = nb
        .store()
        .rows::<PortGroup>()
        .expect("port groups")
        .into_iter()
        .map(|g| g.row.name)
        .filter(|n| n.starts_with("node."))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_reach_their_own_pods_through_policies() {
    let Some(central) = common::central() else {
        return;
    };
    let (nb_remote, sb_remote) = (central.nb_remote(), central.sb_remote());
    common::nbctl(&nb_remote, &["init"]);
    let mut topology = layout::nbctl_topology();
    topology.push("--".into());
    topology.extend(join_topology());
    let args: Vec<&str> = topology.iter().map(String::as_str).collect();
    common::nbctl(&nb_remote, &args);
    let nb = NbClient::connect(&nb_remote).await.expect("NB");

    let pods = layout::eval_pods(&BTreeMap::new());
    let pod_objects: Vec<_> = pods
        .iter()
        .map(|p| {
            let mut object = layout::pod_object(p);
            object.spec.as_mut().expect("spec").node_name = Some(node_of(&p.name).into());
            object
        })
        .collect();
    let namespaces = layout::namespace_objects(&layout::namespace_labels());
    let nodes: Vec<Node> = NODES
        .iter()
        .map(|(n, _, join, internal)| node_object(n, join, internal))
        .collect();
    let v4 = [Family::V4];
    let find = |ns: &str, name: &str| {
        pods.iter()
            .find(|p| p.namespace == ns && p.name == name)
            .expect("a layout pod")
    };
    let (xa, xc, ya) = (find("x", "a"), find("x", "c"), find("y", "a"));

    // no policy: no node groups, everything open
    let report = sync(&nb, NO_POLICIES, &pod_objects, &namespaces, &nodes, &v4)
        .await
        .expect("a pass");
    assert_eq!(report.policy_ops + report.member_ops, 0, "{report:?}");
    assert!(node_groups(&nb).is_empty());
    common::nbctl(&nb_remote, &["--wait=sb", "sync"]);
    assert!(node_reaches(&sb_remote, 0, xa), "open: w1 -> x/a");
    assert!(node_reaches(&sb_remote, 0, xc), "open: w1 -> x/c");

    // x isolated both ways
    let deny_all = np(
        "x",
        "deny-all",
        json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
    );
    let policies = [deny_all];
    sync(&nb, &policies, &pod_objects, &namespaces, &nodes, &v4)
        .await
        .expect("a pass");
    let again = sync(&nb, &policies, &pod_objects, &namespaces, &nodes, &v4)
        .await
        .expect("a pass");
    assert_eq!(
        (again.policy_ops, again.member_ops),
        (0, 0),
        "a second pass writes nothing"
    );
    assert_eq!(
        node_groups(&nb),
        ["node.kube.ovn.w1", "node.kube.ovn.w2"],
        "one group per node, named as Kube-OVN names it"
    );
    // the rows, as the real ovn-nbctl reads them
    let ids = common::nb_get(&nb_remote, "Port_Group", "node.kube.ovn.w1", "external_ids");
    for pair in [
        "node=kube-ovn-w1",
        "np=\"node/kube-ovn-w1\"",
        "vendor=kube-ovn",
    ] {
        assert!(ids.contains(pair), "{pair} in {ids}");
    }
    let ports = common::nb_get(&nb_remote, "Port_Group", "node.kube.ovn.w1", "ports");
    let members = ports.trim_matches(['[', ']']).split(", ").count();
    assert_eq!(members, 6, "a and b of x, y and z run on w1: {ports}");
    let acls = common::nbctl(&nb_remote, &["acl-list", "node.kube.ovn.w1"]);
    for line in [
        "to-lport  3000 (ip4.src == 100.64.0.2 && ip4.dst == $node.kube.ovn.w1_ip4) allow-related",
        "from-lport  3000 (ip4.dst == 100.64.0.2 && ip4.src == $node.kube.ovn.w1_ip4) allow-related",
        "to-lport  3000 (ip4.src == 172.18.0.2 && ip4.dst == $node.kube.ovn.w1_ip4) allow-related",
        "from-lport  3000 (ip4.dst == 172.18.0.2 && ip4.src == $node.kube.ovn.w1_ip4) allow-related",
    ] {
        assert!(acls.contains(line), "{line} in\n{acls}");
    }
    assert_eq!(acls.lines().count(), 4, "{acls}");

    common::nbctl(&nb_remote, &["--wait=sb", "sync"]);
    assert!(
        node_reaches(&sb_remote, 0, xa),
        "w1 reaches its isolated pod x/a"
    );
    assert!(
        node_reaches(&sb_remote, 1, xc),
        "w2 reaches its isolated pod x/c"
    );
    assert!(
        !node_reaches(&sb_remote, 0, xc),
        "w1 does not reach w2's isolated pod x/c"
    );
    assert!(
        pod_reaches_node(&sb_remote, xa, 0),
        "the isolated x/a reaches its own node"
    );
    assert!(
        !pod_reaches_node(&sb_remote, xc, 0),
        "the isolated x/c does not reach w1"
    );
    assert!(
        pod_reaches_node(&sb_remote, ya, 1),
        "y/a, not isolated, reaches any node"
    );

    // a pod moving to the other node moves between the groups, no ACL rewritten
    let acl_rows = |nb: &NbClient| {
        let mut ids: Vec<String> = nb
            .store()
            .rows::<ovn_nb::Acl>()
            .expect("ACLs")
            .into_iter()
            .map(|a| a.id.uuid().to_string())
            .collect();
        ids.sort();
        ids
    };
    let before = acl_rows(&nb);
    let mut moved = pod_objects.clone();
    for object in &mut moved {
        if object.metadata.namespace.as_deref() == Some("x")
            && object.metadata.name.as_deref() == Some("c")
        {
            object.spec.as_mut().expect("spec").node_name = Some(NODES[0].0.into());
        }
    }
    let report = sync(&nb, &policies, &moved, &namespaces, &nodes, &v4)
        .await
        .expect("a pass");
    assert_eq!(report.policy_ops, 0, "only membership changes: {report:?}");
    assert!(report.member_ops > 0, "{report:?}");
    assert_eq!(acl_rows(&nb), before, "ACL rows unchanged");
    common::nbctl(&nb_remote, &["--wait=sb", "sync"]);
    assert!(
        node_reaches(&sb_remote, 0, xc),
        "x/c now on w1: w1 reaches it"
    );
    assert!(!node_reaches(&sb_remote, 1, xc), "and w2 no longer does");

    // the last policy gone: the groups and their ACLs go
    let report = sync(&nb, NO_POLICIES, &moved, &namespaces, &nodes, &v4)
        .await
        .expect("a pass");
    assert!(report.policy_ops > 0);
    assert!(node_groups(&nb).is_empty(), "{:?}", node_groups(&nb));
    let acls = common::nbctl(&nb_remote, &["list", "ACL"]);
    assert!(acls.trim().is_empty(), "no ACL left: {acls}");
}
