//! The Node reconciler and a Subnet's centralized gateway against the embedded API
//! server and a real NB + SB + ovn-northd: nodes get join addresses, the annotations
//! Kube-OVN writes (read back through the typed struct), the `node-<name>` port and the
//! router policies (read with the real `ovn-nbctl`); a second reconcile writes nothing;
//! a chassis registered later (`ovn-sbctl chassis-add`) shows up in the annotations; a
//! deleted node takes its rows, chassis and address with it; a centralized Subnet gets
//! its reroute policy; bad input is reported naming the offender and changes nothing.

use kube_ovn_test_support as common;
use kube_ovn_test_support::ControllerEnv;

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeAddress, NodeStatus};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::Client;
use kube_ovn_api::annotations::NodeAnnotations;
use kube_ovn_api::crd::conditions::{find, ConditionStatus, ERROR, READY};
use kube_ovn_api::crd::{GatewayType, Subnet, SubnetSpec};
use kube_ovn_api::naming::node_owner;
use kube_ovn_controller::node::{apply, NodeError, FINALIZER};
use kube_ovn_controller::{run_reconcilers, subnet};

/// How long a watch-driven change may take before the test gives up.
const WAIT: Duration = Duration::from_secs(30);

/// A central, the API server with our CRDs, the default Subnets, and the join subnet
/// registered in the IPAM (the Subnet reconciler's doing).
async fn env() -> Option<ControllerEnv> {
    ControllerEnv::builder()
        .with_sb()
        .default_subnets()
        .apply_subnet("join")
        .start()
        .await
}

async fn get_subnet(client: &Client, name: &str) -> Subnet {
    Api::<Subnet>::all(client.clone()).get(name).await.unwrap()
}

/// Creates node `name` with `InternalIP` `ip` and extra annotations.
async fn create_node(client: &Client, name: &str, ip: &str, annotations: &[(&str, &str)]) -> Node {
    let api = Api::<Node>::all(client.clone());
    let annotations = annotations
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let node = common::node_object(name, annotations, None);
    api.create(&PostParams::default(), &node).await.unwrap();
    let status = NodeStatus {
        addresses: Some(vec![NodeAddress {
            type_: "InternalIP".into(),
            address: ip.into(),
        }]),
        ..Default::default()
    };
    let patch = serde_json::json!({ "status": status });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap()
}

async fn get_node(client: &Client, name: &str) -> Option<Node> {
    Api::<Node>::all(client.clone())
        .get_opt(name)
        .await
        .unwrap()
}

async fn node_annotations(client: &Client, name: &str) -> NodeAnnotations {
    let node = get_node(client, name).await.expect("the node exists");
    NodeAnnotations::parse(&node.metadata.annotations.unwrap_or_default()).unwrap()
}

fn policies(nb: &str) -> String {
    common::nbctl(nb, &["lr-policy-list", "ovn-cluster"])
}

/// The `lr-policy-list` line of a policy, whitespace collapsed.
fn has_policy(list: &str, priority: &str, r#match: &str, action: &str) -> bool {
    list.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .any(|l| l == format!("{priority} {match} {action}"))
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

#[tokio::test]
async fn nodes_get_join_addresses_ports_policies_and_annotations_once() {
    let Some(env) = env().await else {
        return;
    };
    let (client, nb) = (&env.client, env.nb_remote.as_str());
    let n1 = create_node(client, "n1", "172.18.0.2", &[]).await;
    let n2 = create_node(client, "n2", "172.18.0.3", &[]).await;
    let r1 = apply(&env.ctx, &n1).await.unwrap();
    let r2 = apply(&env.ctx, &n2).await.unwrap();
    assert!(r1.nb_ops > 0 && r1.annotations_patched);
    let (ip1, ip2) = (r1.join.v4.unwrap(), r2.join.v4.unwrap());
    assert_ne!(ip1, ip2);
    // the join subnet's usage counts its nodes
    let join_status = get_subnet(client, "join").await.status.unwrap();
    assert_eq!(join_status.v4_using_ips.map(|c| c.0), Some(2));

    let a1 = node_annotations(client, "n1").await;
    assert!(a1.is_allocated());
    assert_eq!(a1.ip_address.unwrap().v4, Some(ip1));
    let join_cidr: ipnet::Ipv4Net = "100.64.0.0/16".parse().unwrap();
    assert!(join_cidr.contains(&ip1), "{ip1}");
    assert_eq!(a1.mac_address, r1.join.mac);
    assert_eq!(a1.cidr.unwrap().v4, Some(join_cidr));
    assert_eq!(a1.gateway.unwrap().v4, Some("100.64.0.1".parse().unwrap()));
    assert_eq!(a1.logical_switch.as_deref(), Some("join"));
    assert_eq!(a1.port_name.as_deref(), Some("node-n1"));
    assert_eq!(a1.chassis, None, "no chassis registered yet");

    let mac1 = r1.join.mac.unwrap().to_string();
    let addresses = common::nbctl(nb, &["lsp-get-addresses", "node-n1"]);
    assert_eq!(addresses.trim(), format!("{mac1} {ip1}"));
    assert!(common::nbctl(nb, &["lsp-list", "join"]).contains("(node-n2)"));
    let port = |col: &str| common::nb_get(nb, "Logical_Switch_Port", "node-n1", col);
    assert_eq!(port("external_ids:vendor"), "kube-ovn");
    assert_eq!(port("external_ids:node"), "n1");
    let list = policies(nb);
    let reroute1 = format!("reroute {ip1}");
    assert!(
        has_policy(&list, "30000", "ip4.dst == 172.18.0.2", &reroute1),
        "{list}"
    );
    let reroute2 = format!("reroute {ip2}");
    assert!(
        has_policy(&list, "30000", "ip4.dst == 172.18.0.3", &reroute2),
        "{list}"
    );

    // the distributed gateway of ovn-default: a port group per node, and its policy
    let dist1 = "ip4.src == $ovn.default.n1_ip4";
    assert!(has_policy(&list, "29000", dist1, &reroute1), "{list}");
    let group = |col: &str| common::nb_get(nb, "Port_Group", "ovn.default.n1", col);
    assert_eq!(group("external_ids:np"), "ovn-default/n1");
    assert_eq!(group("external_ids:vendor"), "kube-ovn");
    assert!(
        !list.contains("$join."),
        "no distributed gateway for join: {list}"
    );

    // a second reconcile of the stored node changes nothing
    let stored = get_node(client, "n1").await.unwrap();
    let again = apply(&env.ctx, &stored).await.unwrap();
    assert_eq!((again.nb_ops, again.annotations_patched), (0, false));
    assert_eq!(again.join, r1.join);

    // after a restart (an empty IPAM), the annotated address is claimed back
    env.ctx
        .ipam
        .release("join", &node_owner("n1"))
        .unwrap()
        .expect("n1 held an address");
    let restarted = apply(&env.ctx, &stored).await.unwrap();
    assert_eq!((restarted.join, restarted.nb_ops), (r1.join, 0));

    // a malformed annotation: an error naming the key; nothing allocated or written
    let key = "ovn.kubernetes.io/mac_address";
    let bad = create_node(client, "n3", "172.18.0.4", &[(key, "not-a-mac")]).await;
    let err = apply(&env.ctx, &bad).await.unwrap_err();
    assert!(matches!(err, NodeError::Annotation { .. }), "{err:?}");
    assert!(err.to_string().contains(key), "{err}");
    assert_eq!(env.ctx.ipam.get("join", &node_owner("n3")).unwrap(), None);
    assert!(!common::nbctl(nb, &["lsp-list", "join"]).contains("node-n3"));
    assert!(!policies(nb).contains("172.18.0.4"));
    let left = get_node(client, "n3").await.unwrap();
    assert_eq!(left.metadata.annotations.unwrap()[key], "not-a-mac");
    env.server.shutdown().await;
}

#[tokio::test]
async fn a_later_chassis_is_annotated_and_a_deleted_node_takes_everything() {
    let Some(env) = env().await else {
        return;
    };
    let (client, nb, sb) = (
        env.client.clone(),
        env.nb_remote.clone(),
        env.sb_remote.clone(),
    );
    let controller = tokio::spawn(run_reconcilers(env.ctx.clone()));
    create_node(&client, "w1", "172.19.0.2", &[]).await;
    create_node(&client, "w2", "172.19.0.3", &[]).await;
    eventually("w1 allocated", || async {
        node_annotations(&client, "w1").await.is_allocated()
    })
    .await;
    let node = get_node(&client, "w1").await.unwrap();
    assert_eq!(node.metadata.finalizers, Some(vec![FINALIZER.to_string()]));
    let join = node_annotations(&client, "w1").await.ip_address.unwrap();

    // ovn-controller registers the node's chassis later
    common::sbctl(
        &sb,
        &["chassis-add", "w1-system-id", "geneve", "172.19.0.2"],
    );
    common::sbctl(&sb, &["set", "chassis", "w1-system-id", "hostname=w1"]);
    eventually("w1's chassis annotation", || async {
        node_annotations(&client, "w1").await.chassis.as_deref() == Some("w1-system-id")
    })
    .await;
    let tag = common::sbctl(
        &sb,
        &["get", "chassis", "w1-system-id", "external_ids:node"],
    );
    assert_eq!(tag.trim().trim_matches('"'), "w1");

    // a centralized subnet through w1 and w2: one policy, both join IPs as next hops
    let w2_join = {
        eventually("w2 allocated", || async {
            node_annotations(&client, "w2").await.is_allocated()
        })
        .await;
        node_annotations(&client, "w2").await.ip_address.unwrap()
    };
    let spec = SubnetSpec {
        cidr_block: Some("10.70.0.0/24".into()),
        gateway_type: Some(GatewayType::Centralized),
        gateway_node: Some("w1, w2:172.19.0.3".into()),
        enable_ecmp: Some(true),
        ..Default::default()
    };
    create_subnet(&client, "central", spec).await;
    let both = format!("reroute {}, {}", join.v4.unwrap(), w2_join.v4.unwrap());
    let both_sorted = sorted_hops(&both);
    eventually("the ECMP gateway policy", || async {
        policies(&nb)
            .lines()
            .any(|l| l.contains("ip4.src == 10.70.0.0/24") && sorted_hops(l) == both_sorted)
    })
    .await;

    Api::<Node>::all(client.clone())
        .delete("w1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("w1 gone from the API", || async {
        get_node(&client, "w1").await.is_none()
    })
    .await;
    assert!(!common::nbctl(&nb, &["lsp-list", "join"]).contains("node-w1"));
    let list = policies(&nb);
    assert!(!list.contains("172.19.0.2"), "{list}");
    assert!(list.contains("172.19.0.3"), "{list}");
    // w1's hop left the gateway policy, w2's stayed
    let w2_only = format!("reroute {}", w2_join.v4.unwrap());
    assert!(
        has_policy(&list, "29000", "ip4.src == 10.70.0.0/24", &w2_only),
        "{list}"
    );
    assert!(!list.contains("$central."), "a centralized subnet: {list}");
    assert!(!list.contains(".w1_ip4"), "{list}");
    assert!(list.contains("$ovn.default.w2_ip4"), "{list}");
    let groups = common::nbctl(&nb, &["--columns=name", "list", "port_group"]);
    assert!(!groups.contains("ovn.default.w1"), "{groups}");
    assert!(groups.contains("ovn.default.w2"), "{groups}");
    let chassis = common::sbctl(&sb, &["--columns=name", "list", "chassis"]);
    assert!(!chassis.contains("w1-system-id"), "{chassis}");
    assert_eq!(env.ctx.ipam.get("join", &node_owner("w1")).unwrap(), None);
    assert!(env
        .ctx
        .ipam
        .get("join", &node_owner("w2"))
        .unwrap()
        .is_some());
    controller.abort();
    env.server.shutdown().await;
}

/// The next hops of an `lr-policy-list` line, sorted.
fn sorted_hops(line: &str) -> Vec<String> {
    let Some((_, hops)) = line.split_once("reroute") else {
        return Vec::new();
    };
    let mut hops: Vec<String> = hops
        .split(',')
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .collect();
    hops.sort();
    hops
}

async fn create_subnet(client: &Client, name: &str, spec: SubnetSpec) -> Subnet {
    let subnet = Subnet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec,
        status: None,
    };
    Api::<Subnet>::all(client.clone())
        .create(&PostParams::default(), &subnet)
        .await
        .unwrap()
}

fn condition(subnet: &Subnet, type_: &str) -> (ConditionStatus, String, String) {
    let conds = &subnet.status.as_ref().expect("a status").conditions;
    let c = find(conds, type_).unwrap_or_else(|| panic!("no {type_} condition: {conds:?}"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[tokio::test]
async fn a_centralized_subnet_reroutes_to_its_gateway_node_and_a_missing_one_is_named() {
    let Some(env) = env().await else {
        return;
    };
    let (client, nb) = (&env.client, env.nb_remote.as_str());
    let gw = create_node(client, "gw1", "172.20.0.2", &[]).await;
    let join = apply(&env.ctx, &gw).await.unwrap().join.v4.unwrap();
    let spec = SubnetSpec {
        cidr_block: Some("10.71.0.0/24".into()),
        gateway_type: Some(GatewayType::Centralized),
        gateway_node: Some("gw1".into()),
        ..Default::default()
    };
    let created = create_subnet(client, "cent", spec).await;
    let report = subnet::apply(&env.ctx, &created).await.unwrap();
    assert_eq!(report.gateway_problem, None);
    let list = policies(nb);
    let reroute = format!("reroute {join}");
    assert!(
        has_policy(&list, "29000", "ip4.src == 10.71.0.0/24", &reroute),
        "{list}"
    );
    let (ready, _, _) = condition(&get_subnet(client, "cent").await, READY);
    assert_eq!(ready, ConditionStatus::True);
    let active = |s: &Subnet| s.status.as_ref().and_then(|st| st.activate_gateway.clone());
    assert_eq!(
        active(&get_subnet(client, "cent").await).as_deref(),
        Some("gw1")
    );
    // a second apply writes nothing more
    let again = subnet::apply(&env.ctx, &get_subnet(client, "cent").await)
        .await
        .unwrap();
    assert_eq!((again.nb_ops, again.status_written), (0, false));

    // without ECMP the active gateway stays while it is ready, whatever the order
    let gw2 = create_node(client, "gw2", "172.20.0.3", &[]).await;
    apply(&env.ctx, &gw2).await.unwrap();
    let patch = serde_json::json!({ "spec": { "gatewayNode": "gw2,gw1" } });
    let reordered = Api::<Subnet>::all(client.clone())
        .patch("cent", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    subnet::apply(&env.ctx, &reordered).await.unwrap();
    let list = policies(nb);
    assert!(
        has_policy(&list, "29000", "ip4.src == 10.71.0.0/24", &reroute),
        "{list}"
    );
    assert_eq!(
        active(&get_subnet(client, "cent").await).as_deref(),
        Some("gw1")
    );

    // the gateway moved to a node that does not exist: named, the policy kept as it was
    let patch = serde_json::json!({ "spec": { "gatewayNode": "ghost" } });
    let moved = Api::<Subnet>::all(client.clone())
        .patch("cent", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let before = (policies(nb), common::nbctl(nb, &["ls-list"]));
    let report = subnet::apply(&env.ctx, &moved).await.unwrap();
    let problem = report.gateway_problem.expect("a gateway problem");
    assert!(problem.to_string().contains("ghost"), "{problem}");
    assert_eq!((policies(nb), common::nbctl(nb, &["ls-list"])), before);
    let stored = get_subnet(client, "cent").await;
    let (error, _, message) = condition(&stored, ERROR);
    assert_eq!(error, ConditionStatus::True);
    assert!(message.contains("node ghost does not exist"), "{message}");
    let (ready, _, _) = condition(&stored, READY);
    assert_eq!(ready, ConditionStatus::False);
    assert_eq!(active(&stored).as_deref(), Some("gw1"));

    // back to distributed: the centralized policy goes
    let patch = serde_json::json!({ "spec": { "gatewayType": "distributed" } });
    let distributed = Api::<Subnet>::all(client.clone())
        .patch("cent", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let report = subnet::apply(&env.ctx, &distributed).await.unwrap();
    assert_eq!(report.gateway_problem, None);
    assert!(!policies(nb).contains("10.71.0.0/24"));
    let stored = get_subnet(client, "cent").await;
    let (ready, _, _) = condition(&stored, READY);
    assert_eq!(ready, ConditionStatus::True);
    assert_eq!(active(&stored), None);
    // ... and the node's reconcile gives it the distributed gateway's policy
    let gw = get_node(client, "gw1").await.unwrap();
    assert!(apply(&env.ctx, &gw).await.unwrap().nb_ops > 0);
    let list = policies(nb);
    assert!(
        has_policy(&list, "29000", "ip4.src == $cent.gw1_ip4", &reroute),
        "{list}"
    );
    env.server.shutdown().await;
}
