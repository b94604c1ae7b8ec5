//! The NetworkPolicy reconciler following the cluster (embedded API server, real NB
//! and ovn-northd, `controller::run_reconcilers` with `--enable-np`): a policy's rows
//! appear, a pod relabelled into a peer selector and then deleted moves through the
//! address set while the ACL rows stay, a deleted policy takes its rows; a namespace
//! labelled into and out of a namespaceSelector and new pods move the address set and
//! the port group, not the ACLs. And bad input: an invalid CIDR, an empty selector
//! key (refused, naming the field and the value; nothing written for them and nothing
//! of an earlier version lost) and an unknown named port (logged, matches nothing).

use kube_ovn_test_support as common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::{Config, EmbeddedApiServer};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_ovn_api::annotations::{IpPair, PodNetwork, Provider};
use kube_ovn_controller::config::ControllerConfig;
use kube_ovn_controller::network_policy::names::Family;
use kube_ovn_controller::network_policy::sync;
use kube_ovn_controller::{run_reconcilers, Context};
use ovn_nb::{Acl, AddressSet, NbClient, PortGroup};
use serde_json::{json, Value};

const NO_NODES: &[k8s_openapi::api::core::v1::Node] = &[];

/// How long a watch-driven change may take before the test gives up.
const WAIT: Duration = Duration::from_secs(30);

fn np(ns: &str, name: &str, spec: Value) -> NetworkPolicy {
    serde_json::from_value(json!({
        "metadata": {"namespace": ns, "name": name},
        "spec": spec,
    }))
    .expect("a NetworkPolicy")
}

fn pod(ns: &str, name: &str, app: &str, ip: [u8; 4]) -> Pod {
    let network = PodNetwork {
        allocated: Some(true),
        ip_address: Some(IpPair::v4(ip.into())),
        ..Default::default()
    };
    let mut annotations = BTreeMap::new();
    network.write_into(&Provider::ovn(), &mut annotations);
    serde_json::from_value(json!({
        "metadata": {"namespace": ns, "name": name, "labels": {"app": app}, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "agnhost",
                 "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]},
    }))
    .expect("a Pod")
}

fn namespace(name: &str) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {"ns": name}}}))
        .expect("a Namespace")
}

/// A switch with one port per (pod, namespace, MAC, IP), as the Pod reconciler makes them.
fn ports(remote: &str, pods: &[(&str, &str, &str)]) {
    let mut args = vec!["ls-add".to_string(), "sw".to_string()];
    for (name, ns, ip) in pods {
        let port = format!("{name}.{ns}");
        args.extend(["--".into(), "lsp-add".into(), "sw".into(), port.clone()]);
        args.extend([
            "--".into(),
            "lsp-set-addresses".into(),
            port,
            format!("0a:00:00:00:00:{} {ip}", &ip[ip.len() - 2..]),
        ]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::nbctl(remote, &args);
}

fn addresses(nb: &NbClient, set: &str) -> Option<BTreeSet<String>> {
    nb.by_name::<AddressSet>(set)
        .ok()
        .flatten()
        .map(|s| s.row.addresses)
}

fn acl_ids(nb: &NbClient) -> BTreeSet<String> {
    nb.store()
        .rows::<Acl>()
        .expect("ACLs")
        .into_iter()
        .map(|a| a.id.uuid().to_string())
        .collect()
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selection_follows_pods_and_policies_live() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    ports(
        &remote,
        &[
            ("web", "live", "10.16.0.10"),
            ("other", "live", "10.16.0.11"),
        ],
    );
    let config = ControllerConfig::parse_from([
        "kube-ovn-controller",
        &format!("--ovn-nb-addr={remote}"),
        "--enable-np",
    ])
    .expect("flags");
    assert!(config.enable_np);
    let nb = Arc::new(NbClient::connect(&remote).await.expect("NB"));
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.kube_client().expect("a client");
    let ctx = Arc::new(Context::new(client.clone(), nb.clone(), Arc::new(config)));
    let (pods, nps): (Api<Pod>, Api<NetworkPolicy>) = (
        Api::namespaced(client.clone(), "live"),
        Api::namespaced(client.clone(), "live"),
    );
    let pp = PostParams::default();
    Api::<Namespace>::all(client.clone())
        .create(&pp, &namespace("live"))
        .await
        .expect("namespace");
    pods.create(&pp, &pod("live", "web", "web", [10, 16, 0, 10]))
        .await
        .expect("pod web");
    pods.create(&pp, &pod("live", "other", "other", [10, 16, 0, 11]))
        .await
        .expect("pod other");
    let policy = np(
        "live",
        "web-from-client",
        json!({"podSelector": {"matchLabels": {"app": "web"}},
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "client"}}}], "ports": [{"port": "http"}]}]}),
    );
    nps.create(&pp, &policy).await.expect("policy");
    let reconciler = tokio::spawn(run_reconcilers(ctx));

    let (pg, set) = (
        "web.from.client.live",
        "web.from.client.live.ingress.allow.IPv4.0",
    );
    until("the policy's port group with pod web", || {
        let web = nb
            .by_name::<ovn_nb::LogicalSwitchPort>("web.live")
            .ok()
            .flatten()
            .map(|p| p.id);
        nb.by_name::<PortGroup>(pg)
            .ok()
            .flatten()
            .is_some_and(|g| web.is_some_and(|w| g.row.ports == BTreeSet::from([w])))
    })
    .await;
    until("an empty allow set", || {
        addresses(&nb, set) == Some(BTreeSet::new())
    })
    .await;
    let acls_before = acl_ids(&nb);
    let group = nb
        .by_name::<PortGroup>(pg)
        .expect("store")
        .expect("the group");
    let matches: Vec<String> = group
        .row
        .acls
        .iter()
        .filter_map(|id| nb.store().get(*id).ok().flatten())
        .map(|a: Acl| a.r#match)
        .collect();
    assert!(
        matches.iter().any(
            |m| m == &format!("outport == @{pg} && ip && ip4.src == ${set} && tcp.dst == 8080")
        ),
        "{matches:?}"
    );

    let relabel = json!({"metadata": {"labels": {"app": "client"}}});
    pods.patch("other", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .expect("relabel");
    until("pod other's address in the allow set", || {
        addresses(&nb, set) == Some(BTreeSet::from(["10.16.0.11".to_string()]))
    })
    .await;
    assert_eq!(acl_ids(&nb), acls_before, "a relabel rewrote ACL rows");

    pods.delete("other", &DeleteParams::default())
        .await
        .expect("delete pod");
    until("the allow set emptied", || {
        addresses(&nb, set) == Some(BTreeSet::new())
    })
    .await;
    assert_eq!(acl_ids(&nb), acls_before, "a pod deletion rewrote ACL rows");

    nps.delete("web-from-client", &DeleteParams::default())
        .await
        .expect("delete policy");
    until("the policy's rows gone", || {
        nb.by_name::<PortGroup>(pg).ok().flatten().is_none() && addresses(&nb, set).is_none()
    })
    .await;
    assert!(
        nb.store().rows::<Acl>().expect("ACLs").is_empty(),
        "ACLs outlived their port group"
    );
    reconciler.abort();
}

/// The port group's members, by port name.
fn members(nb: &NbClient, pg: &str) -> Option<BTreeSet<String>> {
    let group = nb.by_name::<PortGroup>(pg).ok().flatten()?;
    Some(
        group
            .row
            .ports
            .iter()
            .filter_map(|id| nb.store().get(*id).ok().flatten())
            .map(|p: ovn_nb::LogicalSwitchPort| p.name)
            .collect(),
    )
}

fn names(items: &[&str]) -> Option<BTreeSet<String>> {
    Some(items.iter().map(|s| s.to_string()).collect())
}

/// A namespaceSelector peer follows namespace labels, and new pods join the allow set
/// (a peer) or the port group (selected) as they come, all without rewriting an ACL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_labels_and_new_pods_move_selection_live() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    ports(
        &remote,
        &[
            ("web", "team", "10.16.0.20"),
            ("c1", "guests", "10.16.0.21"),
            ("web2", "team", "10.16.0.22"),
            ("c2", "guests", "10.16.0.23"),
        ],
    );
    let config = ControllerConfig::parse_from([
        "kube-ovn-controller",
        &format!("--ovn-nb-addr={remote}"),
        "--enable-np",
    ])
    .expect("flags");
    let nb = Arc::new(NbClient::connect(&remote).await.expect("NB"));
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.kube_client().expect("a client");
    let ctx = Arc::new(Context::new(client.clone(), nb.clone(), Arc::new(config)));
    let pp = PostParams::default();
    let namespaces = Api::<Namespace>::all(client.clone());
    for ns in ["team", "guests"] {
        namespaces
            .create(&pp, &namespace(ns))
            .await
            .expect("namespace");
    }
    let (team, guests): (Api<Pod>, Api<Pod>) = (
        Api::namespaced(client.clone(), "team"),
        Api::namespaced(client.clone(), "guests"),
    );
    team.create(&pp, &pod("team", "web", "web", [10, 16, 0, 20]))
        .await
        .expect("pod web");
    guests
        .create(&pp, &pod("guests", "c1", "c", [10, 16, 0, 21]))
        .await
        .expect("pod c1");
    let policy = np(
        "team",
        "np",
        json!({"podSelector": {"matchLabels": {"app": "web"}},
        "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"role": "client"}}}]}]}),
    );
    Api::<NetworkPolicy>::namespaced(client.clone(), "team")
        .create(&pp, &policy)
        .await
        .expect("policy");
    let reconciler = tokio::spawn(run_reconcilers(ctx));
    let (pg, set) = ("np.team", "np.team.ingress.allow.IPv4.0");
    until("web selected, nobody allowed", || {
        members(&nb, pg) == names(&["web.team"]) && addresses(&nb, set) == names(&[])
    })
    .await;
    let acls_before = acl_ids(&nb);

    let label = |role: Value| json!({"metadata": {"labels": {"role": role}}});
    namespaces
        .patch(
            "guests",
            &PatchParams::default(),
            &Patch::Merge(&label(json!("client"))),
        )
        .await
        .expect("label namespace");
    until("the labelled namespace's pod allowed", || {
        addresses(&nb, set) == names(&["10.16.0.21"])
    })
    .await;
    guests
        .create(&pp, &pod("guests", "c2", "c", [10, 16, 0, 23]))
        .await
        .expect("pod c2");
    until("a new pod of that namespace allowed", || {
        addresses(&nb, set) == names(&["10.16.0.21", "10.16.0.23"])
    })
    .await;
    team.create(&pp, &pod("team", "web2", "web", [10, 16, 0, 22]))
        .await
        .expect("pod web2");
    until("a new selected pod in the port group", || {
        members(&nb, pg) == names(&["web.team", "web2.team"])
    })
    .await;
    namespaces
        .patch(
            "guests",
            &PatchParams::default(),
            &Patch::Merge(&label(Value::Null)),
        )
        .await
        .expect("unlabel namespace");
    until("the unlabelled namespace's pods no longer allowed", || {
        addresses(&nb, set) == names(&[])
    })
    .await;
    assert_eq!(
        acl_ids(&nb),
        acls_before,
        "selection changes rewrote ACL rows"
    );
    reconciler.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_policies_refused_naming_the_offender() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    ports(
        &remote,
        &[("a", "x", "10.16.0.10"), ("b", "x", "10.16.0.11")],
    );
    let nb = NbClient::connect(&remote).await.expect("NB");
    let pods = [
        pod("x", "a", "a", [10, 16, 0, 10]),
        pod("x", "b", "b", [10, 16, 0, 11]),
    ];
    let namespaces = [namespace("x")];
    let v4 = [Family::V4];
    let from_b = json!({"podSelector": {"matchLabels": {"app": "a"}}, "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "b"}}}]}]});
    let good = np("x", "good", from_b.clone());
    let was_good = np("x", "was-good", from_b);
    sync(&nb, [&good, &was_good], &pods, &namespaces, NO_NODES, &v4)
        .await
        .expect("a pass");
    let rows_before = (
        acl_ids(&nb),
        nb.store().rows::<AddressSet>().expect("sets").len(),
    );

    let bad_cidr = np(
        "x",
        "bad-cidr",
        json!({"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.16.0.0/33"}}]}]}),
    );
    let empty_key = np(
        "x",
        "empty-key",
        json!({"podSelector": {"matchLabels": {"": "a"}}, "policyTypes": ["Ingress"]}),
    );
    // the update a real API server would refuse: the earlier version stays in force
    let was_good_now_bad = np(
        "x",
        "was-good",
        json!({"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}]}]}),
    );
    let unknown_port = np(
        "x",
        "unknown-port",
        json!({"podSelector": {"matchLabels": {"app": "a"}}, "ingress": [{"ports": [{"port": "nosuch"}]}]}),
    );
    let report = sync(
        &nb,
        [
            &good,
            &bad_cidr,
            &empty_key,
            &was_good_now_bad,
            &unknown_port,
        ],
        &pods,
        &namespaces,
        NO_NODES,
        &v4,
    )
    .await
    .expect("a pass");
    let refused: Vec<(String, String, String)> = report
        .invalid
        .iter()
        .map(|e| (e.name.clone(), e.field.clone(), e.value.clone()))
        .collect();
    assert_eq!(
        refused,
        [
            (
                "bad-cidr".to_string(),
                "spec.ingress[0].from[0].ipBlock.cidr".to_string(),
                "10.16.0.0/33".to_string()
            ),
            (
                "empty-key".to_string(),
                "spec.podSelector.key".to_string(),
                String::new()
            ),
            (
                "was-good".to_string(),
                "spec.egress[0].to[0].ipBlock.except[0]".to_string(),
                "192.168.0.0/16".to_string()
            ),
        ]
    );
    assert!(
        report.invalid[0].to_string().contains("x/bad-cidr"),
        "{}",
        report.invalid[0]
    );
    assert_eq!(report.unresolved.len(), 1, "{:?}", report.unresolved);
    assert_eq!(
        (
            report.unresolved[0].0.as_str(),
            report.unresolved[0].1.name.as_str()
        ),
        ("x/unknown-port", "nosuch")
    );
    assert!(nb
        .by_name::<PortGroup>("bad.cidr.x")
        .expect("store")
        .is_none());
    assert!(nb
        .by_name::<PortGroup>("empty.key.x")
        .expect("store")
        .is_none());
    // the unknown port's policy isolates pod a and allows nothing: its only ACL is the drop
    let group = nb
        .by_name::<PortGroup>("unknown.port.x")
        .expect("store")
        .expect("its group");
    let acls: Vec<Acl> = group
        .row
        .acls
        .iter()
        .filter_map(|id| nb.store().get(*id).ok().flatten())
        .collect();
    assert_eq!(
        acls.iter().map(|a| a.r#match.as_str()).collect::<Vec<_>>(),
        ["outport == @unknown.port.x && ip"]
    );
    // nothing of good's or was-good's rows lost
    assert!(
        rows_before.0.is_subset(&acl_ids(&nb)),
        "ACLs of valid policies were lost"
    );
    assert_eq!(
        nb.store().rows::<AddressSet>().expect("sets").len(),
        rows_before.1 + 2,
        "only the unknown port policy's two sets are new"
    );
}
