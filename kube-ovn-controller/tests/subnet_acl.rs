//! Subnet ACLs on a real NB, read back with the real `ovn-nbctl acl-list`: a private
//! subnet's drop / same-subnet / node / allowSubnets ACLs, then `spec.acls` with
//! `allowEWTraffic` replacing them, each reconcile writing nothing the second time,
//! and an unrealizable `spec.acls` entry leaving the ACLs in place.

use kube_ovn_test_support as common;
use kube_ovn_test_support::ControllerEnv;

use kube::api::{Api, PostParams};
use kube_ovn_api::crd::Subnet;
use kube_ovn_controller::subnet::acl::{desired_acls, AclInvalid};
use kube_ovn_controller::subnet::{apply, validate};
use serde_json::{json, Value};

fn subnet(spec: Value) -> Subnet {
    serde_json::from_value(json!({
        "apiVersion": "kubeovn.io/v1", "kind": "Subnet",
        "metadata": {"name": "acl1"}, "spec": spec,
    }))
    .expect("a Subnet")
}

/// Creates or replaces Subnet `acl1` with `spec`, then reconciles it; NB operations.
async fn put(env: &ControllerEnv, spec: Value) -> usize {
    let api = Api::<Subnet>::all(env.client.clone());
    let mut wanted = subnet(spec);
    let stored = match api.get_opt("acl1").await.unwrap() {
        None => api.create(&PostParams::default(), &wanted).await.unwrap(),
        Some(old) => {
            wanted.metadata.resource_version = old.metadata.resource_version;
            api.replace("acl1", &PostParams::default(), &wanted)
                .await
                .unwrap()
        }
    };
    apply(&env.ctx, &stored).await.unwrap().nb_ops
}

/// The switch's ACLs as `ovn-nbctl acl-list` prints them, one per line, trimmed.
fn acl_list(remote: &str) -> Vec<String> {
    common::nbctl(remote, &["acl-list", "acl1"])
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// `external_ids` of every ACL on the switch.
fn acl_external_ids(remote: &str) -> Vec<String> {
    common::nbctl(
        remote,
        &[
            "--bare",
            "--columns=external_ids",
            "find",
            "ACL",
            "external_ids:parent=acl1",
        ],
    )
    .lines()
    .filter(|l| !l.trim().is_empty())
    .map(str::to_string)
    .collect()
}

#[tokio::test]
async fn private_then_spec_acls_as_kube_ovn_writes_them() {
    let Some(env) = ControllerEnv::builder().start().await else {
        return;
    };
    let remote = env.nb_remote.as_str();
    let private = json!({"cidrBlock": "10.66.0.0/16", "private": true,
                         "allowSubnets": ["10.20.0.0/16"]});
    assert!(put(&env, private.clone()).await > 0);
    let mut acls = acl_list(remote);
    acls.sort();
    let mut want = vec![
        "to-lport 1000 (ip) drop log(name=acl1,severity=warning)".to_string(),
        "to-lport 1001 (ip4.src == 10.66.0.0/16 && ip4.dst == 10.66.0.0/16) allow-related"
            .to_string(),
        "to-lport 1001 ((ip4.src == 10.66.0.0/16 && ip4.dst == 10.20.0.0/16) || (ip4.src == 10.20.0.0/16 && ip4.dst == 10.66.0.0/16)) allow-related".to_string(),
        "to-lport 3000 (ip4.src == 100.64.0.0/16) allow-related".to_string(),
    ];
    want.sort();
    assert_eq!(acls, want);
    for ids in acl_external_ids(remote) {
        assert!(
            ids.contains("parent=acl1") && ids.contains("vendor=kube-ovn"),
            "{ids}"
        );
    }
    // unchanged: nothing written
    assert_eq!(put(&env, private).await, 0);

    // not private any more, spec.acls with east-west traffic allowed
    let with_acls = json!({"cidrBlock": "10.66.0.0/16", "allowEWTraffic": true, "acls": [
        {"direction": "to-lport", "priority": 2500, "match": "ip4.src == 1.1.1.1", "action": "drop"}]});
    assert!(put(&env, with_acls.clone()).await > 0);
    let mut acls = acl_list(remote);
    acls.sort();
    let mut want = vec![
        "from-lport 1900 (ip4.src == 10.66.0.0/16 && ip4.dst == 10.66.0.0/16) allow".to_string(),
        "to-lport 1900 (ip4.src == 10.66.0.0/16 && ip4.dst == 10.66.0.0/16) allow".to_string(),
        "to-lport 2500 (ip4.src == 1.1.1.1) drop".to_string(),
    ];
    want.sort();
    assert_eq!(acls, want);
    for ids in acl_external_ids(remote) {
        assert!(ids.contains("subnet=acl1"), "{ids}");
    }
    assert_eq!(put(&env, with_acls).await, 0);

    // an entry that cannot be written: nothing changes
    let bad = json!({"cidrBlock": "10.66.0.0/16", "acls": [
        {"direction": "to-lport", "priority": 40000, "match": "ip", "action": "drop"}]});
    let before = acl_list(remote);
    put(&env, bad.clone()).await;
    assert_eq!(acl_list(remote), before);
    let valid = validate(&subnet(bad.clone()), &[], "ovn-cluster").unwrap();
    let err = desired_acls(&subnet(bad), &valid, &env.ctx.config.node_switch.cidr).unwrap_err();
    assert_eq!(
        err,
        AclInvalid {
            subnet: "acl1".into(),
            field: "spec.acls[0].priority".into(),
            reason: "must be in 0..=32767".into(),
        }
    );

    // no ACLs asked for: the switch has none
    put(&env, json!({"cidrBlock": "10.66.0.0/16"})).await;
    assert!(acl_list(remote).is_empty(), "{:?}", acl_list(remote));
}
