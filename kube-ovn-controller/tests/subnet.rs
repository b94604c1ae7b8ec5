//! The Subnet reconciler against the embedded API server (our CRDs) and a real NB +
//! ovn-northd: rows read back with the real `ovn-nbctl`, namespaces bound, a second
//! reconcile writes nothing, bad specs get a condition naming the field and no rows,
//! and under `controller::run` the default Subnets appear and a deleted Subnet takes
//! its rows and finalizer with it.

use kube_ovn_test_support as common;
use kube_ovn_test_support::ControllerEnv;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::Client;
use kube_ovn_api::crd::conditions::{find, ConditionStatus, READY, VALIDATED};
use kube_ovn_api::crd::{Protocol, Subnet, SubnetSpec};
use kube_ovn_controller::run;
use kube_ovn_controller::subnet::{apply, FINALIZER};

/// How long a watch-driven change may take before the test gives up.
const WAIT: Duration = Duration::from_secs(30);

fn subnet(name: &str, spec: SubnetSpec) -> Subnet {
    Subnet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec,
        status: None,
    }
}

fn cidr(block: &str) -> SubnetSpec {
    SubnetSpec {
        cidr_block: Some(block.into()),
        ..Default::default()
    }
}

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

async fn create(client: &Client, subnet: &Subnet) -> Subnet {
    Api::<Subnet>::all(client.clone())
        .create(&PostParams::default(), subnet)
        .await
        .unwrap()
}

async fn get(client: &Client, name: &str) -> Subnet {
    Api::<Subnet>::all(client.clone()).get(name).await.unwrap()
}

async fn annotations(client: &Client, ns: &str) -> BTreeMap<String, String> {
    let ns = Api::<Namespace>::all(client.clone()).get(ns).await.unwrap();
    ns.metadata.annotations.unwrap_or_default()
}

fn condition(subnet: &Subnet, type_: &str) -> (ConditionStatus, String, String) {
    let conds = &subnet.status.as_ref().expect("a status").conditions;
    let c = find(conds, type_).unwrap_or_else(|| panic!("no {type_} condition: {conds:?}"));
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

/// The kube-ovn rows of the tables a Subnet writes, as `ovn-nbctl list` prints them.
fn subnet_tables(remote: &str) -> String {
    [
        "Logical_Switch",
        "Logical_Switch_Port",
        "Logical_Router_Port",
    ]
    .iter()
    .map(|table| common::nbctl(remote, &["list", table]))
    .collect()
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
async fn a_subnet_gets_its_switch_router_ports_and_namespaces_once() {
    let Some(env) = ControllerEnv::builder().start().await else {
        return;
    };
    let (client, remote) = (&env.client, env.nb_remote.as_str());
    create_namespace(client, "ns1").await;
    create_namespace(client, "ns2").await;
    let spec = SubnetSpec {
        exclude_ips: vec!["10.66.0.100..10.66.0.110".into(), "10.66.0.200".into()],
        namespaces: vec!["ns1".into(), "ns2".into()],
        ..cidr("10.66.0.0/16")
    };
    let created = create(client, &subnet("sub1", spec)).await;

    let report = apply(&env.ctx, &created).await.unwrap();
    assert_eq!(report.invalid, None);
    assert!(report.nb_ops > 0 && report.status_written);
    assert_eq!(report.namespaces_patched, 2);

    let get_ls = |col: &str| common::nb_get(remote, "Logical_Switch", "sub1", col);
    assert_eq!(get_ls("external_ids:vendor"), "kube-ovn");
    assert_eq!(get_ls("external_ids:subnet"), "sub1");
    assert_eq!(get_ls("other_config:subnet"), "10.66.0.0/16");
    assert_eq!(
        get_ls("other_config:exclude_ips"),
        "10.66.0.100..10.66.0.110 10.66.0.200"
    );
    assert_eq!(get_ls("other_config:gateway"), "10.66.0.1");
    let lrps = common::nbctl(remote, &["lrp-list", "ovn-cluster"]);
    assert!(lrps.contains("(ovn-cluster-sub1)"), "{lrps}");
    let lrp = |col: &str| common::nb_get(remote, "Logical_Router_Port", "ovn-cluster-sub1", col);
    assert_eq!(lrp("networks"), "[\"10.66.0.1/16\"]");
    assert_eq!(lrp("external_ids:vendor"), "kube-ovn");
    let lsps = common::nbctl(remote, &["lsp-list", "sub1"]);
    assert!(lsps.contains("(sub1-ovn-cluster)"), "{lsps}");
    let lsp = |col: &str| common::nb_get(remote, "Logical_Switch_Port", "sub1-ovn-cluster", col);
    assert_eq!(lsp("type"), "router");
    assert_eq!(lsp("options:router-port"), "ovn-cluster-sub1");
    assert_eq!(lsp("external_ids:ls"), "sub1");

    for ns in ["ns1", "ns2"] {
        let a = annotations(client, ns).await;
        assert_eq!(a["ovn.kubernetes.io/logical_switch"], "sub1");
        assert_eq!(a["ovn.kubernetes.io/cidr"], "10.66.0.0/16");
        assert_eq!(
            a["ovn.kubernetes.io/exclude_ips"],
            "10.66.0.100..10.66.0.110,10.66.0.200"
        );
    }
    let stored = get(client, "sub1").await;
    let (status, reason, _) = condition(&stored, VALIDATED);
    assert_eq!(
        (status, reason.as_str()),
        (ConditionStatus::True, "ValidateLogicalSwitchSuccess")
    );
    assert_eq!(condition(&stored, READY).0, ConditionStatus::True);
    // Kube-OVN's defaults written into the empty spec fields; written ones kept
    assert!(report.spec_defaulted);
    let spec = serde_json::to_value(&stored.spec).unwrap();
    for (field, value) in [
        ("provider", "ovn"),
        ("vpc", "ovn-cluster"),
        ("protocol", "IPv4"),
        ("gatewayType", "distributed"),
        ("gateway", "10.66.0.1"),
    ] {
        assert_eq!(spec[field], value, "spec.{field} in {spec}");
    }
    assert_eq!(
        stored.spec.exclude_ips,
        ["10.66.0.100..10.66.0.110", "10.66.0.200"]
    );

    // the second reconcile, on the stored object, writes nothing anywhere
    let before = subnet_tables(remote);
    let again = apply(&env.ctx, &stored).await.unwrap();
    assert!(!again.wrote_anything(), "{again:?}");
    assert_eq!(subnet_tables(remote), before);
    assert_eq!(get(client, "sub1").await, stored);
    env.server.shutdown().await;
}

#[tokio::test]
async fn bad_subnets_get_a_condition_naming_the_field_and_no_rows() {
    let Some(env) = ControllerEnv::builder().start().await else {
        return;
    };
    let (client, remote) = (&env.client, env.nb_remote.as_str());
    let base = create(client, &subnet("base", cidr("10.72.0.0/16"))).await;
    assert_eq!(apply(&env.ctx, &base).await.unwrap().invalid, None);
    let base_rows = subnet_tables(remote);

    let cases = [
        ("bad-cidr", cidr("10.67.0.0/33"), "spec.cidrBlock"),
        (
            "gw-outside",
            SubnetSpec {
                gateway: Some("10.69.0.1".into()),
                ..cidr("10.68.0.0/16")
            },
            "spec.gateway",
        ),
        (
            "exclude-outside",
            SubnetSpec {
                exclude_ips: vec!["10.71.0.5".into(), "10.70.5.0".into()],
                ..cidr("10.71.0.0/16")
            },
            "spec.excludeIps[1]",
        ),
        ("overlap", cidr("10.72.128.0/17"), "spec.cidrBlock"),
        (
            "unknown-proto",
            SubnetSpec {
                protocol: Some(Protocol::from("IPv5")),
                ..cidr("10.73.0.0/16")
            },
            "spec.protocol",
        ),
        (
            "proto-mismatch",
            SubnetSpec {
                protocol: Some(Protocol::IPv6),
                ..cidr("10.74.0.0/16")
            },
            "spec.protocol",
        ),
    ];
    for (name, spec, field) in cases {
        let created = create(client, &subnet(name, spec)).await;
        let report = apply(&env.ctx, &created).await.unwrap();
        let invalid = report.invalid.unwrap_or_else(|| panic!("{name} accepted"));
        assert_eq!(invalid.field, field, "{name}: {invalid}");
        assert_eq!(report.nb_ops, 0, "{name}");

        let stored = get(client, name).await;
        for type_ in [VALIDATED, READY] {
            let (status, reason, message) = condition(&stored, type_);
            assert_eq!(status, ConditionStatus::False, "{name} {type_}");
            assert_eq!(reason, "ValidateLogicalSwitchFailed");
            assert!(
                message.starts_with(&format!("{field}: ")),
                "{name}: {message}"
            );
        }
        let switches = common::nbctl(remote, &["ls-list"]);
        assert!(
            !switches.contains(&format!("({name})")),
            "{name}: {switches}"
        );
        let lrps = common::nbctl(remote, &["lrp-list", "ovn-cluster"]);
        assert!(!lrps.contains(&format!("-{name})")), "{name}: {lrps}");
    }
    // the overlap refused the newer subnet; the older one's rows are untouched
    assert_eq!(subnet_tables(remote), base_rows);

    // a valid subnet edited into an invalid one keeps its rows: nothing stored is lost
    let mut edited = get(client, "base").await;
    edited.spec.gateway = Some("10.99.0.1".into());
    let edited = Api::<Subnet>::all(client.clone())
        .replace("base", &PostParams::default(), &edited)
        .await
        .unwrap();
    let report = apply(&env.ctx, &edited).await.unwrap();
    assert_eq!(
        report.invalid.map(|i| i.field).as_deref(),
        Some("spec.gateway")
    );
    assert_eq!(subnet_tables(remote), base_rows);
    let (status, _, message) = condition(&get(client, "base").await, VALIDATED);
    assert_eq!(status, ConditionStatus::False);
    assert!(
        message.contains("10.99.0.1 is not inside the CIDR block"),
        "{message}"
    );
    env.server.shutdown().await;
}

#[tokio::test]
async fn the_controller_creates_defaults_and_a_deleted_subnet_takes_its_rows() {
    let Some(env) = ControllerEnv::builder().start().await else {
        return;
    };
    let (client, remote) = (env.client.clone(), env.nb_remote.clone());
    let ctx = env.ctx.clone();
    let controller = tokio::spawn(run(ctx.clone()));

    // the default subnets, from the flags, realized by the reconciler
    eventually("ovn-default's router port", || async {
        common::nbctl(&remote, &["lrp-list", "ovn-cluster"]).contains("(ovn-cluster-ovn-default)")
    })
    .await;
    let default = get(&client, "ovn-default").await;
    assert_eq!(default.spec.cidr_block.as_deref(), Some("10.16.0.0/16"));
    assert_eq!(default.spec.default, Some(true));
    let join = get(&client, "join").await;
    assert_eq!(join.spec.cidr_block.as_deref(), Some("100.64.0.0/16"));
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router_Port",
            "ovn-cluster-ovn-default",
            "networks"
        ),
        "[\"10.16.0.1/16\"]"
    );

    create_namespace(&client, "app").await;
    let spec = SubnetSpec {
        namespaces: vec!["app".into(), "late".into()],
        ..cidr("10.80.0.0/24")
    };
    create(&client, &subnet("sub3", spec)).await;
    eventually("sub3 bound to namespace app", || async {
        annotations(&client, "app")
            .await
            .get("ovn.kubernetes.io/logical_switch")
            == Some(&"sub3".to_string())
    })
    .await;
    // a namespace created after its subnet is bound through the Namespace watch
    create_namespace(&client, "late").await;
    eventually("sub3 bound to namespace late", || async {
        annotations(&client, "late")
            .await
            .get("ovn.kubernetes.io/cidr")
            == Some(&"10.80.0.0/24".to_string())
    })
    .await;
    let stored = get(&client, "sub3").await;
    assert_eq!(
        stored.metadata.finalizers,
        Some(vec![FINALIZER.to_string()])
    );
    assert!(common::nbctl(&remote, &["ls-list"]).contains("(sub3)"));

    Api::<Subnet>::all(client.clone())
        .delete("sub3", &DeleteParams::default())
        .await
        .unwrap();
    eventually("sub3 gone from the API", || async {
        Api::<Subnet>::all(client.clone())
            .get_opt("sub3")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert!(!common::nbctl(&remote, &["ls-list"]).contains("(sub3)"));
    let lrps = common::nbctl(&remote, &["lrp-list", "ovn-cluster"]);
    assert!(!lrps.contains("(ovn-cluster-sub3)"), "{lrps}");
    assert!(lrps.contains("(ovn-cluster-ovn-default)"), "{lrps}");
    // the namespace falls back to the default subnet
    let a = annotations(&client, "app").await;
    assert_eq!(a["ovn.kubernetes.io/logical_switch"], "ovn-default");
    assert_eq!(a["ovn.kubernetes.io/cidr"], "10.16.0.0/16");
    controller.abort();
    env.server.shutdown().await;
}
