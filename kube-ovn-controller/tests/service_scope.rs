//! The Service reconciler's reach, against the embedded API server and a real NB + SB +
//! ovn-northd: the cluster balancers sit on the switch of every subnet of the default
//! VPC and not on `join`; an SCTP Service port is a VIP of the SCTP balancer (and of
//! the SCTP session balancer with ClientIP affinity); and endpoint churn is written as
//! one NB transaction per Service update that touches only the VIPs concerned, read
//! from the NB database's own transaction log (`ovsdb-tool show-log -mm`).

use kube_ovn_test_support as common;
mod svc;

use std::collections::BTreeSet;
use std::path::Path;

use kube::api::{Api, ListParams, PostParams};
use kube_ovn_api::crd::Subnet;
use kube_ovn_controller::{ensure_default_subnets, service, subnet};
use serde_json::json;
use svc::{create_service, env, eventually, from_json, key, lb_list, put_slice, service_json};
use svc::{slice_json, LBS};

/// The UUIDs of the balancers attached to switch `ls`.
fn attached(remote: &str, ls: &str) -> BTreeSet<String> {
    let list = common::nb_get(remote, "Logical_Switch", ls, "load_balancer");
    list.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn balancers_on_every_subnet_switch_of_the_default_vpc_and_not_on_join() {
    let Some(env) = env().await else {
        return;
    };
    let (client, remote) = (&env.client, env.remote.as_str());
    ensure_default_subnets(client, &env.ctx.config)
        .await
        .expect("default and join Subnets");
    let extra: Subnet = from_json(json!({
        "apiVersion": "kubeovn.io/v1", "kind": "Subnet",
        "metadata": {"name": "extra"}, "spec": {"cidrBlock": "10.78.0.0/24"}}));
    let api = Api::<Subnet>::all(client.clone());
    api.create(&PostParams::default(), &extra).await.unwrap();
    for s in api.list(&ListParams::default()).await.unwrap() {
        subnet::apply(&env.ctx, &s).await.unwrap();
    }
    let all: BTreeSet<String> = LBS
        .iter()
        .map(|lb| common::nb_get(remote, "Load_Balancer", lb, "_uuid"))
        .collect();
    assert_eq!(all.len(), 6);
    let default_ls = env.ctx.config.default_subnet.name.clone();
    let join_ls = env.ctx.config.node_switch.name.clone();
    for ls in [default_ls.as_str(), "extra"] {
        assert_eq!(attached(remote, ls), all, "the six balancers on {ls}");
    }
    // the join switch exists, without balancers
    assert_eq!(
        common::nb_get(remote, "Logical_Switch", &join_ls, "name"),
        join_ls
    );
    assert!(
        attached(remote, &join_ls).is_empty(),
        "balancers on {join_ls}"
    );
}

#[tokio::test]
async fn an_sctp_port_is_a_vip_of_the_sctp_balancers() {
    let Some(env) = env().await else {
        return;
    };
    let (client, remote) = (&env.client, env.remote.as_str());
    let controller = tokio::spawn(service::run(env.ctx.clone()));
    let plain = json!({"clusterIP": "10.96.2.1", "ports": [
        {"name": "sctp-diameter", "port": 3868, "protocol": "SCTP", "targetPort": "sctp-diameter"}]});
    create_service(client, &service_json("diameter", plain)).await;
    put_slice(
        client,
        &slice_json(
            "diameter-a",
            "diameter",
            "IPv4",
            &[("sctp-diameter", 3869)],
            &[("10.16.2.1", true), ("10.16.2.2", false)],
        ),
    )
    .await;
    let sticky = json!({"clusterIP": "10.96.2.2", "sessionAffinity": "ClientIP",
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 300}},
        "ports": [{"name": "sctp-m3ua", "port": 2905, "protocol": "SCTP"}]});
    create_service(client, &service_json("m3ua", sticky)).await;
    put_slice(
        client,
        &slice_json(
            "m3ua-a",
            "m3ua",
            "IPv4",
            &[("sctp-m3ua", 2905)],
            &[("10.16.2.3", true)],
        ),
    )
    .await;
    let (sctp, sctp_session) = (
        "cluster-sctp-loadbalancer",
        "cluster-sctp-session-loadbalancer",
    );
    eventually(remote, "the SCTP VIPs", |v| {
        v.get(&key(sctp, "10.96.2.1:3868")).map(String::as_str) == Some("10.16.2.1:3869")
            && v.get(&key(sctp_session, "10.96.2.2:2905"))
                .map(String::as_str)
                == Some("10.16.2.3:2905")
    })
    .await;
    for lb in [sctp, sctp_session] {
        assert_eq!(
            common::nb_get(remote, "Load_Balancer", lb, "protocol"),
            "sctp"
        );
    }
    assert_eq!(
        common::nb_get(
            remote,
            "Load_Balancer",
            sctp_session,
            "options:affinity_timeout"
        ),
        "300"
    );
    let vips = lb_list(remote);
    let elsewhere: Vec<_> = vips
        .keys()
        .filter(|(lb, vip)| vip.starts_with("10.96.2.") && lb != sctp && lb != sctp_session)
        .collect();
    assert!(
        elsewhere.is_empty(),
        "SCTP VIPs in other balancers: {elsewhere:?}"
    );
    controller.abort();
}

/// The records of the NB database's transaction log that change a Load_Balancer, with
/// their row diffs (`ovsdb-tool show-log -mm`).
fn balancer_records(db_file: &Path) -> Vec<String> {
    let path = db_file.to_str().expect("a UTF-8 path");
    let log = ovn_harness::run("ovsdb-tool", &["show-log", "-mm", path]).expect("show-log");
    log.split("\nrecord ")
        .filter(|r| r.contains("table Load_Balancer"))
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn endpoint_churn_is_one_transaction_touching_only_the_vips_concerned() {
    let Some(env) = env().await else {
        return;
    };
    let (client, remote) = (&env.client, env.remote.as_str());
    let controller = tokio::spawn(service::run(env.ctx.clone()));
    let tcp = "cluster-tcp-loadbalancer";
    let multi = json!({"clusterIP": "10.96.3.1", "ports": [
        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
        {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": "dns"}]});
    create_service(client, &service_json("multi", multi)).await;
    let web = |e: &[(&str, bool)]| slice_json("multi-web", "multi", "IPv4", &[("http", 8080)], e);
    put_slice(client, &web(&[("10.16.3.1", true), ("10.16.3.2", true)])).await;
    let dns = slice_json(
        "multi-dns",
        "multi",
        "IPv4",
        &[("dns", 5353)],
        &[("10.16.3.3", true)],
    );
    put_slice(client, &dns).await;
    let other = json!({"clusterIP": "10.96.3.2", "ports": [{"name": "http", "port": 80}]});
    create_service(client, &service_json("other", other)).await;
    let other_slice =
        |e: &[(&str, bool)]| slice_json("other-a", "other", "IPv4", &[("http", 80)], e);
    put_slice(client, &other_slice(&[("10.16.3.9", true)])).await;
    eventually(remote, "the three VIPs", |v| {
        v.get(&key(tcp, "10.96.3.1:80")).map(String::as_str)
            == Some("10.16.3.1:8080,10.16.3.2:8080")
            && v.contains_key(&key("cluster-udp-loadbalancer", "10.96.3.1:53"))
            && v.contains_key(&key(tcp, "10.96.3.2:80"))
    })
    .await;
    let before = lb_list(remote);
    let records_before = balancer_records(env.central.nb.db_file()).len();

    // one endpoint of one port's slice stops being ready; then, as a marker whose
    // arrival means the first update is all written, another Service gains one
    put_slice(client, &web(&[("10.16.3.1", true), ("10.16.3.2", false)])).await;
    eventually(remote, "10.16.3.2 leaves multi's HTTP VIP", |v| {
        v.get(&key(tcp, "10.96.3.1:80")).map(String::as_str) == Some("10.16.3.1:8080")
    })
    .await;
    put_slice(
        client,
        &other_slice(&[("10.16.3.9", true), ("10.16.3.10", true)]),
    )
    .await;
    eventually(remote, "other's second backend", |v| {
        v.get(&key(tcp, "10.96.3.2:80")).map(String::as_str) == Some("10.16.3.10:80,10.16.3.9:80")
    })
    .await;

    let records = balancer_records(env.central.nb.db_file());
    let new = &records[records_before..];
    assert_eq!(new.len(), 2, "one transaction per Service update: {new:#?}");
    for (record, vip, tag) in [
        (&new[0], "10.96.3.1:80", "multi"),
        (&new[1], "10.96.3.2:80", "other"),
    ] {
        let touched = record.matches("table ").count();
        assert_eq!(touched, 1, "{tag}: one row changed: {record}");
        assert!(record.contains(&format!("\"{tcp}\"")), "{tag}: {record}");
        assert!(record.contains(vip), "{tag}: {record}");
    }
    // the listing differs in those two VIPs only
    let after = lb_list(remote);
    let changed: BTreeSet<_> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .chain(after.keys().filter(|k| !before.contains_key(*k)).cloned())
        .collect();
    assert_eq!(
        changed,
        BTreeSet::from([key(tcp, "10.96.3.1:80"), key(tcp, "10.96.3.2:80")])
    );
    controller.abort();
}
