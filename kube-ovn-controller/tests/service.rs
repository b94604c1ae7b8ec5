//! The Service reconciler against the embedded API server and a real NB + SB +
//! ovn-northd: VIPs and backends read back with the real `ovn-nbctl lb-list` follow
//! Services and EndpointSlices (named target ports per slice, readiness, dual stack,
//! ClientIP affinity, headless and ExternalName left alone, deletion, a restart), bad
//! input is skipped naming the offender, and `ovn-trace` shows a packet from a pod to
//! a ClusterIP balanced to a backend.

use kube_ovn_test_support as common;
mod svc;

use kube::api::{Api, PostParams};
use kube_ovn_controller::service::{self, service_vips, ServiceInputError};
use serde_json::json;
use svc::{
    create_service, delete_service, env, eventually, from_json, key, lb_list, put_slice,
    service_json, slice_json, LBS,
};

#[tokio::test]
async fn vips_follow_services_and_endpoint_slices() {
    let Some(env) = env().await else {
        return;
    };
    let (client, remote) = (&env.client, env.remote.as_str());
    let (tcp, udp, tcp_session) = (
        "cluster-tcp-loadbalancer",
        "cluster-udp-loadbalancer",
        "cluster-tcp-session-loadbalancer",
    );
    // a VIP outside the service CIDR that someone else wrote: never touched
    common::nbctl(
        remote,
        &["lb-add", tcp, "192.168.50.1:80", "192.168.60.1:80"],
    );
    let controller = tokio::spawn(service::run(env.ctx.clone()));

    let web = json!({"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ports": [
        {"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
        {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 5353}]});
    create_service(client, &service_json("web", web)).await;
    // the named port `http` is 8080 on some pods and 9090 on others: two slices
    let a = |e: &[(&str, bool)]| {
        slice_json("web-a", "web", "IPv4", &[("http", 8080), ("dns", 5353)], e)
    };
    put_slice(
        client,
        &a(&[
            ("10.16.0.2", true),
            ("10.16.0.3", true),
            ("10.16.0.4", false),
        ]),
    )
    .await;
    put_slice(
        client,
        &slice_json(
            "web-b",
            "web",
            "IPv4",
            &[("http", 9090)],
            &[("10.16.0.5", true)],
        ),
    )
    .await;
    eventually(remote, "web's VIPs with ready backends only", |v| {
        v.get(&key(tcp, "10.96.0.10:80")).map(String::as_str)
            == Some("10.16.0.2:8080,10.16.0.3:8080,10.16.0.5:9090")
            && v.get(&key(udp, "10.96.0.10:53")).map(String::as_str)
                == Some("10.16.0.2:5353,10.16.0.3:5353")
    })
    .await;

    // churn: one pod stops being ready, then the last ready one of slice a goes
    put_slice(client, &a(&[("10.16.0.2", true), ("10.16.0.3", false)])).await;
    eventually(remote, "10.16.0.3 leaves both VIPs", |v| {
        v.get(&key(tcp, "10.96.0.10:80")).map(String::as_str)
            == Some("10.16.0.2:8080,10.16.0.5:9090")
            && v.get(&key(udp, "10.96.0.10:53")).map(String::as_str) == Some("10.16.0.2:5353")
    })
    .await;
    put_slice(client, &a(&[("10.16.0.2", false)])).await;
    eventually(remote, "the UDP VIP goes with its last backend", |v| {
        !v.contains_key(&key(udp, "10.96.0.10:53"))
            && v.get(&key(tcp, "10.96.0.10:80")).map(String::as_str) == Some("10.16.0.5:9090")
    })
    .await;

    // dual stack: one VIP per family, backends of the VIP's family
    let dual = json!({"clusterIP": "10.96.0.30", "clusterIPs": ["10.96.0.30", "fd00:10:96::30"],
        "ipFamilies": ["IPv4", "IPv6"], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]});
    create_service(client, &service_json("dual", dual)).await;
    put_slice(
        client,
        &slice_json(
            "dual-v4",
            "dual",
            "IPv4",
            &[("http", 80)],
            &[("10.16.0.30", true)],
        ),
    )
    .await;
    put_slice(
        client,
        &slice_json(
            "dual-v6",
            "dual",
            "IPv6",
            &[("http", 80)],
            &[("fd00:16::30", true)],
        ),
    )
    .await;
    // ClientIP affinity: the session balancer, with the Service's timeout
    let sticky = json!({"clusterIP": "10.96.0.20", "sessionAffinity": "ClientIP",
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 600}},
        "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]});
    create_service(client, &service_json("sticky", sticky)).await;
    put_slice(
        client,
        &slice_json(
            "sticky-a",
            "sticky",
            "IPv4",
            &[("https", 8443)],
            &[("10.16.0.20", true)],
        ),
    )
    .await;
    // headless and ExternalName: left alone even with ready endpoints
    create_service(
        client,
        &service_json(
            "headless",
            json!({"clusterIP": "None", "ports": [{"name": "http", "port": 80}]}),
        ),
    )
    .await;
    put_slice(
        client,
        &slice_json(
            "headless-a",
            "headless",
            "IPv4",
            &[("http", 80)],
            &[("10.16.0.40", true)],
        ),
    )
    .await;
    create_service(
        client,
        &service_json(
            "ext",
            json!({"type": "ExternalName", "externalName": "example.com"}),
        ),
    )
    .await;
    eventually(remote, "dual-stack and session VIPs", |v| {
        v.get(&key(tcp, "10.96.0.30:80")).map(String::as_str) == Some("10.16.0.30:80")
            && v.get(&key(tcp, "[fd00:10:96::30]:80")).map(String::as_str)
                == Some("[fd00:16::30]:80")
            && v.get(&key(tcp_session, "10.96.0.20:443"))
                .map(String::as_str)
                == Some("10.16.0.20:8443")
    })
    .await;
    assert_eq!(
        common::nb_get(
            remote,
            "Load_Balancer",
            tcp_session,
            "options:affinity_timeout"
        ),
        "600"
    );
    let vips = lb_list(remote);
    assert!(
        !vips
            .keys()
            .any(|(_, vip)| vip.contains("10.16.0.40") || vip.starts_with("None")),
        "{vips:#?}"
    );
    assert!(
        !vips.contains_key(&key(tcp, "10.96.0.20:443")),
        "ClientIP stays out of the plain balancer"
    );

    // deletion removes the Service's VIPs and nothing else
    delete_service(client, "web").await;
    eventually(remote, "web's VIPs gone", |v| {
        !v.keys().any(|(_, vip)| vip.starts_with("10.96.0.10:"))
    })
    .await;

    // a Service deleted while the controller is down is cleaned up when it starts
    controller.abort();
    let _ = controller.await;
    delete_service(client, "dual").await;
    let restarted = tokio::spawn(service::run(env.ctx.clone()));
    eventually(remote, "dual's VIPs gone after a restart", |v| {
        !v.keys()
            .any(|(_, vip)| vip.contains("10.96.0.30") || vip.contains("fd00:10:96::30"))
    })
    .await;
    let vips = lb_list(remote);
    assert_eq!(
        vips.get(&key(tcp, "192.168.50.1:80")).map(String::as_str),
        Some("192.168.60.1:80")
    );
    assert_eq!(
        vips.get(&key(tcp_session, "10.96.0.20:443"))
            .map(String::as_str),
        Some("10.16.0.20:8443")
    );
    restarted.abort();
}

#[tokio::test]
async fn bad_input_is_skipped_naming_the_offender() {
    let Some(env) = env().await else {
        return;
    };
    let (client, remote) = (&env.client, env.remote.as_str());
    let tcp = "cluster-tcp-loadbalancer";
    let controller = tokio::spawn(service::run(env.ctx.clone()));
    let good = json!({"clusterIP": "10.96.1.1", "ports": [{"name": "http", "port": 80}]});
    create_service(client, &service_json("good", good)).await;
    put_slice(
        client,
        &slice_json(
            "good-a",
            "good",
            "IPv4",
            &[("http", 80)],
            &[("10.16.1.1", true)],
        ),
    )
    .await;
    eventually(remote, "the good Service's VIP", |v| {
        v.contains_key(&key(tcp, "10.96.1.1:80"))
    })
    .await;

    // a malformed address, and a port (`metrics`) no slice has
    let bad = json!({"clusterIP": "10.96.1.2", "ports": [
        {"name": "http", "port": 80}, {"name": "metrics", "port": 9100}]});
    let bad_svc = service_json("bad", bad);
    create_service(client, &bad_svc).await;
    let bad_slice = slice_json(
        "bad-a",
        "bad",
        "IPv4",
        &[("http", 8080)],
        &[("10.16.1.x", true), ("10.16.1.2", true)],
    );
    put_slice(client, &bad_slice).await;
    eventually(remote, "the bad Service's good part", |v| {
        v.get(&key(tcp, "10.96.1.2:80")).map(String::as_str) == Some("10.16.1.2:8080")
    })
    .await;
    let vips = lb_list(remote);
    assert!(!vips.contains_key(&key(tcp, "10.96.1.2:9100")), "{vips:#?}");
    assert_eq!(
        vips.get(&key(tcp, "10.96.1.1:80")).map(String::as_str),
        Some("10.16.1.1:80")
    );

    // what is logged names the offenders
    let wanted = service_vips(&bad_svc, &[&bad_slice], &env.ctx.config.load_balancers);
    assert_eq!(
        wanted.problems,
        vec![
            ServiceInputError::BadEndpointAddress {
                service: "default/bad".into(),
                slice: "default/bad-a".into(),
                value: "10.16.1.x".into(),
            },
            ServiceInputError::UnresolvedPort {
                service: "default/bad".into(),
                port: "metrics".into(),
                number: 9100,
            },
        ]
    );
    let message = wanted.problems[0].to_string();
    assert!(
        message.contains("default/bad-a") && message.contains("10.16.1.x"),
        "{message}"
    );
    controller.abort();
}

#[tokio::test]
async fn ovn_trace_balances_a_pod_to_a_cluster_ip_backend() {
    if !ovn_harness::require(&["ovn-trace"]) {
        return;
    }
    let Some(env) = env().await else {
        return;
    };
    let (client, remote) = (&env.client, env.remote.as_str());
    // a subnet's switch, with the cluster balancers attached by the Subnet reconciler
    let subnet: kube_ovn_api::crd::Subnet = from_json(json!({
        "apiVersion": "kubeovn.io/v1", "kind": "Subnet",
        "metadata": {"name": "trace1"}, "spec": {"cidrBlock": "10.77.0.0/24"}}));
    let subnet = Api::<kube_ovn_api::crd::Subnet>::all(client.clone())
        .create(&PostParams::default(), &subnet)
        .await
        .unwrap();
    kube_ovn_controller::subnet::apply(&env.ctx, &subnet)
        .await
        .unwrap();
    let attached = common::nb_get(remote, "Logical_Switch", "trace1", "load_balancer");
    assert_eq!(
        attached.matches('-').count(),
        6 * 4,
        "six balancers: {attached}"
    );
    // two pods' ports, as the pod reconciler writes them
    for (pod, mac, ip) in [
        ("client", "00:00:00:77:00:11", "10.77.0.11"),
        ("backend", "00:00:00:77:00:12", "10.77.0.12"),
    ] {
        let port = format!("{pod}.default");
        common::nbctl(remote, &["lsp-add", "trace1", &port]);
        common::nbctl(
            remote,
            &["lsp-set-addresses", &port, &format!("{mac} {ip}")],
        );
    }
    let controller = tokio::spawn(service::run(env.ctx.clone()));
    let svc = json!({"clusterIP": "10.96.7.7", "ports": [{"name": "http", "port": 80}]});
    create_service(client, &service_json("traced", svc)).await;
    put_slice(
        client,
        &slice_json(
            "traced-a",
            "traced",
            "IPv4",
            &[("http", 8080)],
            &[("10.77.0.12", true)],
        ),
    )
    .await;
    eventually(remote, "the traced VIP", |v| {
        v.get(&key(LBS[0], "10.96.7.7:80")).map(String::as_str) == Some("10.77.0.12:8080")
    })
    .await;
    // ovn-northd has turned it into logical flows
    common::nbctl(remote, &["--wait=sb", "sync"]);
    let router_mac = common::nb_get(remote, "Logical_Router_Port", "ovn-cluster-trace1", "mac");
    let flow = format!(
        "inport == \"client.default\" && eth.src == 00:00:00:77:00:11 && eth.dst == {router_mac} \
         && ip4.src == 10.77.0.11 && ip4.dst == 10.96.7.7 && ip.ttl == 64 \
         && tcp && tcp.src == 40000 && tcp.dst == 80"
    );
    let db = format!("--db={}", env.central.sb_remote());
    let trace = ovn_harness::run(
        "ovn-trace",
        &[db.as_str(), "--ct=new", "trace1", flow.as_str()],
    )
    .expect("ovn-trace");
    assert!(trace.contains("ct_lb_mark"), "{trace}");
    assert!(
        trace.contains("10.77.0.12:8080"),
        "balanced to the backend: {trace}"
    );
    assert!(
        trace.contains("output to \"backend.default\""),
        "delivered to the backend pod: {trace}"
    );
    controller.abort();

    // `enableLb: false` on the Subnet takes the balancers off its switch
    let api = Api::<kube_ovn_api::crd::Subnet>::all(client.clone());
    let mut off = api.get("trace1").await.unwrap();
    off.spec.enable_lb = Some(false);
    let off = api
        .replace("trace1", &PostParams::default(), &off)
        .await
        .unwrap();
    kube_ovn_controller::subnet::apply(&env.ctx, &off)
        .await
        .unwrap();
    assert_eq!(
        common::nb_get(remote, "Logical_Switch", "trace1", "load_balancer"),
        "[]"
    );
}
