//! CNI ADD/DEL on a simulated node, end to end: the `kube-ovn` binary (as containerd runs
//! it) talks to the daemon's JSON-RPC socket; the daemon plugs veths into a real
//! ovs-vswitchd (userspace datapath) bound by a real ovn-controller to OVN; pods in real
//! network namespaces exchange traffic through OVN. The test plays the controller
//! (annotations, logical switch ports).

#[path = "cni_node/env.rs"]
mod env;

use std::process::Output;
use std::time::Duration;

use env::{container_id, tcp_exchange, Env, PodNetns, OVN_DEFAULT, SECOND};
use kube_ovn_api::annotations::{AnnotationMap, PodNetwork, Provider, Route, Routes};

fn stdout_json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "CNI failed: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The CNI binary is blocking: run it off the runtime the daemon serves on.
async fn cni(
    env: &Env,
    command: &str,
    container: &str,
    netns: &str,
    ns: &str,
    pod: &str,
) -> Output {
    let conf = env.plugin_conf();
    let (command, container, netns, ns, pod) = (
        command.to_string(),
        container.to_string(),
        netns.to_string(),
        ns.to_string(),
        pod.to_string(),
    );
    tokio::task::spawn_blocking(move || {
        env::run_cni(&command, &container, &netns, &ns, &pod, &conf)
    })
    .await
    .unwrap()
}

fn host_end(container: &str) -> String {
    format!("{}_h", &container[..12])
}

/// Nothing of the container left: no port, no veth in the node's namespace.
fn assert_gone(env: &Env, container: &str) {
    let host = host_end(container);
    assert!(
        !env.ports().contains(&host),
        "port {host} left: {:?}",
        env.ports()
    );
    let links = env.node_ip(&["-o", "link", "show"]);
    assert!(!links.contains(&host), "veth {host} left: {links}");
    assert!(
        !links.contains(&format!("{}_c", &container[..12])),
        "peer left: {links}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_talk_through_ovn_and_del_removes_everything() {
    let Some(env) = Env::start(|_| {}).await else {
        return;
    };
    let (ip_a, mac_a) = env.allocate("ns1", "a", OVN_DEFAULT, 10).await;
    let (ip_b, _) = env.allocate("ns1", "b", OVN_DEFAULT, 11).await;
    let (ip_c, _) = env.allocate("ns2", "c", SECOND, 12).await;
    let pods = [PodNetns::new(), PodNetns::new(), PodNetns::new()];
    let ids = [container_id(), container_id(), container_id()];
    let names = [("ns1", "a"), ("ns1", "b"), ("ns2", "c")];
    let mut results = Vec::new();
    for ((netns, id), (ns, pod)) in pods.iter().zip(&ids).zip(names) {
        let out = ok(cni(
            &env,
            "ADD",
            id,
            &netns.path().display().to_string(),
            ns,
            pod,
        )
        .await);
        results.push(stdout_json(&out));
    }
    // the result: 0.3.1 layout, eth0 in the sandbox with the annotated MAC and address
    let first = &results[0];
    assert_eq!(first["cniVersion"], "0.3.1");
    assert_eq!(first["interfaces"][0]["name"], "eth0");
    assert_eq!(first["interfaces"][0]["mac"], mac_a.as_str());
    assert_eq!(first["ips"][0]["address"], format!("{ip_a}/16"));
    assert_eq!(first["ips"][0]["gateway"], "10.16.0.1");
    assert_eq!(first["routes"][0]["dst"], "0.0.0.0/0");
    // the port: Kube-OVN's external_ids, installed by ovn-controller
    let host = host_end(&ids[0]);
    let get = |key: &str| {
        env.vsctl(&["get", "Interface", &host, &format!("external_ids:{key}")])
            .trim()
            .trim_matches('"')
            .to_string()
    };
    assert_eq!(get("iface-id"), "a.ns1");
    assert_eq!(get("pod_name"), "a");
    assert_eq!(get("pod_namespace"), "ns1");
    assert_eq!(get("pod_netns"), pods[0].path().display().to_string());
    assert_eq!(get("vendor"), "kube-ovn");
    assert_eq!(get("ovn-installed"), "true");
    // inside the pod
    let addr = pods[0].ip(&["addr", "show", "eth0"]);
    assert!(addr.contains(&format!("inet {ip_a}/16")), "{addr}");
    assert!(addr.contains(&mac_a), "{addr}");
    // an IPv4-only pod: no IPv6 address on eth0, not even link-local (its DAD and MLD
    // would be flooded to every port of the switch); IPv6 stays on (::1 on lo)
    assert!(!addr.contains("inet6"), "{addr}");
    let lo = pods[0].ip(&["-6", "addr", "show", "lo"]);
    assert!(lo.contains("inet6 ::1/128"), "{lo}");
    let routes = pods[0].ip(&["route", "show"]);
    assert!(
        routes.contains("default via 10.16.0.1 dev eth0"),
        "{routes}"
    );

    // same switch, and across the cluster router
    for target in [&ip_b, &ip_c] {
        let ping = pods[0].exec(&["ping", "-c", "3", "-i", "0.2", "-W", "2", target]);
        assert!(
            ping.status.success(),
            "ping {target}: {}",
            String::from_utf8_lossy(&ping.stdout)
        );
    }
    let ping = pods[2].exec(&["ping", "-c", "2", "-i", "0.2", "-W", "2", &ip_a]);
    assert!(
        ping.status.success(),
        "ping back: {}",
        String::from_utf8_lossy(&ping.stdout)
    );
    assert_eq!(tcp_exchange(&pods[1], &ip_b, &pods[0]), "pong");
    // the node reaches its pods through ovn0, and the pods reach the node
    env.bootstrap_node().await;
    let ping = env.node_exec(&["ping", "-c", "3", "-i", "0.2", "-W", "2", &ip_a]);
    assert!(
        ping.status.success(),
        "node -> pod: {}",
        String::from_utf8_lossy(&ping.stdout)
    );
    let ping = pods[2].exec(&["ping", "-c", "3", "-i", "0.2", "-W", "2", "100.64.0.2"]);
    assert!(
        ping.status.success(),
        "pod -> node: {}",
        String::from_utf8_lossy(&ping.stdout)
    );

    // DEL: everything gone; a second DEL and the runtime's netns-less DEL succeed
    for ((netns, id), (ns, pod)) in pods.iter().zip(&ids).zip(names) {
        ok(cni(
            &env,
            "DEL",
            id,
            &netns.path().display().to_string(),
            ns,
            pod,
        )
        .await);
        assert_gone(&env, id);
        ok(cni(
            &env,
            "DEL",
            id,
            &netns.path().display().to_string(),
            ns,
            pod,
        )
        .await);
        ok(cni(&env, "DEL", id, "", ns, pod).await);
    }
    assert_eq!(env.ports(), vec!["ovn0".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_sees_the_annotation_as_soon_as_the_controller_writes_it() {
    // reads paced a minute apart: only the watch can see the annotation within the wait
    let Some(env) = Env::start(|s| s.annotation_poll = Duration::from_secs(60)).await else {
        return;
    };
    env.create_pod("ns1", "late", AnnotationMap::new()).await;
    let netns = PodNetns::new();
    let id = container_id();
    let path = netns.path().display().to_string();
    let add = {
        let (conf, id, path) = (env.plugin_conf(), id.clone(), path.clone());
        tokio::task::spawn_blocking(move || env::run_cni("ADD", &id, &path, "ns1", "late", &conf))
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    // the controller: the logical port, then the annotations
    let (ip, mac, map) = env::pod_network(OVN_DEFAULT, 30);
    env::add_port(&env.nb, OVN_DEFAULT, "late.ns1", &mac, &ip).await;
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(env.client.clone(), "ns1");
    let mut pod = pods.get("late").await.unwrap();
    pod.metadata.annotations = Some(map);
    pods.replace("late", &Default::default(), &pod)
        .await
        .unwrap();
    let written = std::time::Instant::now();
    let out = ok(add.await.unwrap());
    let took = written.elapsed();
    assert_eq!(stdout_json(&out)["ips"][0]["address"], format!("{ip}/16"));
    assert!(
        took < Duration::from_secs(5),
        "ADD done {took:?} after the annotation"
    );
    ok(cni(&env, "DEL", &id, &path, "ns1", "late").await);
    assert_gone(&env, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_add_succeeds_and_leaves_one_attachment() {
    let Some(env) = Env::start(|_| {}).await else {
        return;
    };
    env.allocate("ns1", "twice", OVN_DEFAULT, 20).await;
    // the user's routes annotation, as Kube-OVN reads it
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(env.client.clone(), "ns1");
    let mut pod = pods.get("twice").await.unwrap();
    let map = pod
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    let mut network = PodNetwork::parse(&Provider::ovn(), map).unwrap();
    network.routes = Some(Routes(vec![Route {
        destination: Some("192.168.50.0/24".parse().unwrap()),
        gateway: Some("10.16.0.1".parse().unwrap()),
    }]));
    network.write_into(&Provider::ovn(), map);
    pods.replace("twice", &Default::default(), &pod)
        .await
        .unwrap();
    let netns = PodNetns::new();
    let id = container_id();
    let path = netns.path().display().to_string();
    // CHECK needs a 0.4.0+ configuration
    let conf = env.plugin_conf().replace("0.3.1", "1.0.0");
    let run = |command: &'static str| {
        let (conf, id, path) = (conf.clone(), id.clone(), path.clone());
        tokio::task::spawn_blocking(move || {
            env::run_cni(command, &id, &path, "ns1", "twice", &conf)
        })
    };
    ok(run("ADD").await.unwrap());
    ok(run("ADD").await.unwrap());
    assert_eq!(env.ports(), vec![host_end(&id)]);
    let addr = netns.ip(&["-o", "-4", "addr", "show", "eth0"]);
    assert_eq!(addr.lines().count(), 1, "{addr}");
    let routes = netns.ip(&["route", "show"]);
    assert!(
        routes.contains("192.168.50.0/24 via 10.16.0.1 dev eth0"),
        "{routes}"
    );
    assert!(
        routes.contains("default via 10.16.0.1 dev eth0"),
        "{routes}"
    );
    ok(run("CHECK").await.unwrap());
    ok(run("DEL").await.unwrap());
    let (code, text) = error_of(&run("CHECK").await.unwrap());
    assert_eq!(code, 11, "{text}");
    assert!(text.contains("not ovn-installed"), "{text}");
    assert_gone(&env, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn del_after_the_namespace_is_gone_and_qos_rows_removed() {
    let Some(env) = Env::start(|_| {}).await else {
        return;
    };
    let (ip, mac, mut map) = env::pod_network(OVN_DEFAULT, 30);
    map.insert("ovn.kubernetes.io/ingress_rate".into(), "10".into());
    map.insert("ovn.kubernetes.io/egress_rate".into(), "5".into());
    env.create_pod("ns1", "q", map).await;
    env::add_port(&env.nb, OVN_DEFAULT, "q.ns1", &mac, &ip).await;
    let netns = PodNetns::new();
    let id = container_id();
    let path = netns.path().display().to_string();
    ok(cni(&env, "ADD", &id, &path, "ns1", "q").await);
    // ADD applied the QoS before answering (no QoS loop runs here): into the pod a
    // linux-htb QoS and its Queue on the port, out of it a tbf on eth0 (userspace datapath)
    let host = host_end(&id);
    let qos = env.vsctl(&["get", "Port", &host, "qos"]);
    let kind = env.vsctl(&["get", "QoS", qos.trim(), "type"]);
    assert_eq!(kind.trim().trim_matches('"'), "linux-htb");
    let qdisc = netns.exec(&["tc", "qdisc", "show", "dev", "eth0"]);
    let qdisc = String::from_utf8_lossy(&qdisc.stdout);
    assert!(qdisc.contains("tbf"), "{qdisc}");
    assert_eq!((env.rows("QoS"), env.rows("Queue")), (1, 1));
    drop(netns);
    ok(cni(&env, "DEL", &id, &path, "ns1", "q").await);
    assert_gone(&env, &id);
    assert_eq!((env.rows("QoS"), env.rows("Queue")), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn del_after_ovs_vswitchd_restarted() {
    let Some(env) = Env::start(|_| {}).await else {
        return;
    };
    let (ip_a, _) = env.allocate("ns1", "r1", OVN_DEFAULT, 70).await;
    let (ip_b, _) = env.allocate("ns1", "r2", OVN_DEFAULT, 71).await;
    let pods = [PodNetns::new(), PodNetns::new()];
    let ids = [container_id(), container_id()];
    for ((netns, id), pod) in pods.iter().zip(&ids).zip(["r1", "r2"]) {
        ok(cni(
            &env,
            "ADD",
            id,
            &netns.path().display().to_string(),
            "ns1",
            pod,
        )
        .await);
    }
    let vswitchd = env.restart_vswitchd();
    // the restarted switch picks the ports up again: the pods still talk
    let ping = pods[0].exec(&["ping", "-c", "3", "-i", "0.2", "-W", "3", &ip_b]);
    assert!(
        ping.status.success(),
        "ping after restart: {}",
        String::from_utf8_lossy(&ping.stdout)
    );
    for ((netns, id), pod) in pods.iter().zip(&ids).zip(["r1", "r2"]) {
        ok(cni(
            &env,
            "DEL",
            id,
            &netns.path().display().to_string(),
            "ns1",
            pod,
        )
        .await);
        assert_gone(&env, id);
    }
    assert!(env.ports().is_empty(), "{:?} ({ip_a})", env.ports());
    drop(vswitchd);
}

fn error_of(out: &Output) -> (u64, String) {
    assert!(!out.status.success(), "expected a failure");
    let v = stdout_json(out);
    let text = format!(
        "{} {}",
        v["msg"].as_str().unwrap_or(""),
        v["details"].as_str().unwrap_or("")
    );
    (v["code"].as_u64().unwrap_or(0), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_give_clear_errors_and_leave_nothing() {
    let Some(mut env) = Env::start(|s| {
        s.annotation_wait = Duration::from_secs(2);
        s.ovn_installed_wait = Duration::from_secs(3);
        s.gateway_check = datapath::GatewayCheck {
            attempts: 3,
            interval: Duration::from_millis(200),
        };
    })
    .await
    else {
        return;
    };
    let netns = PodNetns::new();
    let path = netns.path().display().to_string();
    // whoever can write to the socket can plug any pod: owner only
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&env.socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    // the gateway never answers: the port and the veth are removed again
    env.allocate("ns1", "deadgw", env::DEAD_GATEWAY, 45).await;
    let id = container_id();
    let (code, text) = error_of(&cni(&env, "ADD", &id, &path, "ns1", "deadgw").await);
    assert_eq!(code, 11, "{text}");
    assert!(text.contains("10.16.0.254"), "{text}");
    assert_gone(&env, &id);

    // the controller never annotates the pod
    env.create_pod("ns1", "bare", AnnotationMap::new()).await;
    let id = container_id();
    let (code, text) = error_of(&cni(&env, "ADD", &id, &path, "ns1", "bare").await);
    assert_eq!(code, 11, "{text}");
    assert!(
        text.contains("no address allocated to pod ns1/bare"),
        "{text}"
    );
    assert_gone(&env, &id);

    // annotated, but no logical switch port: ovn-controller never installs the port
    let (ip, mac) = env.allocate("ns1", "nolsp", OVN_DEFAULT, 40).await;
    let mut txn = env.nb.txn();
    txn.lsp_del("nolsp.ns1").unwrap();
    env.nb.commit(txn).await.unwrap();
    let id = container_id();
    let (code, text) = error_of(&cni(&env, "ADD", &id, &path, "ns1", "nolsp").await);
    assert_eq!(code, 11, "{text}");
    assert!(text.contains("not ovn-installed"), "{text}");
    assert!(text.contains("nolsp.ns1"), "{text}");
    assert_gone(&env, &id);
    let addr = netns.ip(&["-o", "link", "show"]);
    assert!(!addr.contains("eth0"), "pod end left: {addr} ({ip} {mac})");

    // a pod being deleted before the controller gave it an address: the ADD does not
    // wait out annotation_wait for an address that will not come
    let mut holding = AnnotationMap::new();
    holding.insert("other/key".into(), "x".into());
    env.create_pod("ns1", "going", holding).await;
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(env.client.clone(), "ns1");
    let hold = serde_json::json!({ "metadata": { "finalizers": ["example.com/hold"] } });
    pods.patch(
        "going",
        &Default::default(),
        &kube::api::Patch::Merge(&hold),
    )
    .await
    .unwrap();
    pods.delete("going", &Default::default()).await.unwrap();
    let id = container_id();
    let (code, text) = error_of(&cni(&env, "ADD", &id, &path, "ns1", "going").await);
    assert_eq!(code, 11, "{text}");
    assert!(text.contains("pod ns1/going is being deleted"), "{text}");
    assert!(text.contains("no address allocated"), "{text}");
    assert_gone(&env, &id);
    let release = serde_json::json!({ "metadata": { "finalizers": null } });
    pods.patch(
        "going",
        &Default::default(),
        &kube::api::Patch::Merge(&release),
    )
    .await
    .unwrap();

    // a pod that does not exist
    let (code, text) = error_of(&cni(&env, "ADD", &container_id(), &path, "ns1", "missing").await);
    assert_eq!(code, 11, "{text}");
    assert!(text.contains("pod ns1/missing not found"), "{text}");

    // malformed configuration and arguments: the spec's codes, naming the field
    let bad = serde_json::json!({"cniVersion": "0.3.1", "name": "kube-ovn", "type": "kube-ovn"})
        .to_string();
    let id = container_id();
    let out = tokio::task::spawn_blocking(move || {
        env::run_cni("ADD", &id, "/var/run/netns/x", "ns1", "a", &bad)
    })
    .await
    .unwrap();
    let (code, text) = error_of(&out);
    assert_eq!(code, 7, "{text}");
    assert!(text.contains("server_socket"), "{text}");
    let conf = env.plugin_conf();
    let id = container_id();
    let out = tokio::task::spawn_blocking(move || {
        env::run_cni("ADD", &id, "/var/run/netns/x", "ns1", "", &conf)
    })
    .await
    .unwrap();
    let (code, text) = error_of(&out);
    assert_eq!(code, 4, "{text}");
    assert!(text.contains("K8S_POD_NAME"), "{text}");

    // the daemon is down: try again later, with the cause
    env.stop_server().await;
    let (code, text) = error_of(&cni(&env, "ADD", &container_id(), &path, "ns1", "bare").await);
    assert_eq!(code, 11, "{text}");
    assert!(
        text.contains("cannot connect to the kube-ovn daemon"),
        "{text}"
    );
    assert!(env.ports().is_empty(), "{:?}", env.ports());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_of_other_nodes_are_refused_and_gc_removes_ports_of_gone_pods() {
    let Some(env) = Env::start(|_| {}).await else {
        return;
    };
    // another node's pod
    let mut map = AnnotationMap::new();
    map.insert("x".into(), "y".into());
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(env.client.clone(), "ns1");
    env.create_pod("ns1", "elsewhere", map).await;
    let patch = serde_json::json!({"spec": {"nodeName": "node-b"}});
    let _ = pods
        .patch(
            "elsewhere",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await;
    let netns = PodNetns::new();
    let path = netns.path().display().to_string();
    let (code, text) =
        error_of(&cni(&env, "ADD", &container_id(), &path, "ns1", "elsewhere").await);
    assert_eq!(code, 11, "{text}");
    assert!(text.contains("not on this node node-a"), "{text}");
    // DEL only removes this node's state of the container: it succeeds
    ok(cni(&env, "DEL", &container_id(), &path, "ns1", "elsewhere").await);

    // GC: the pod is deleted without a DEL (runtime crash): its port goes
    env.allocate("ns1", "gone", OVN_DEFAULT, 50).await;
    env.allocate("ns1", "kept", OVN_DEFAULT, 51).await;
    let kept_ns = PodNetns::new();
    let (gone_id, kept_id) = (container_id(), container_id());
    ok(cni(&env, "ADD", &gone_id, &path, "ns1", "gone").await);
    ok(cni(
        &env,
        "ADD",
        &kept_id,
        &kept_ns.path().display().to_string(),
        "ns1",
        "kept",
    )
    .await);
    pods.delete("gone", &Default::default()).await.unwrap();
    // a StatefulSet pod deleted without DEL and recreated on another node
    env.allocate("ns1", "moved", OVN_DEFAULT, 52).await;
    let moved_ns = PodNetns::new();
    let moved_id = container_id();
    ok(cni(
        &env,
        "ADD",
        &moved_id,
        &moved_ns.path().display().to_string(),
        "ns1",
        "moved",
    )
    .await);
    pods.delete("moved", &Default::default()).await.unwrap();
    env.create_pod("ns1", "moved", AnnotationMap::new()).await;
    let _ = pods
        .patch(
            "moved",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await;
    let mut report = env.daemon.gc().await.unwrap();
    report.removed.sort();
    let mut want = vec![host_end(&gone_id), host_end(&moved_id)];
    want.sort();
    assert_eq!(report.removed, want);
    assert_gone(&env, &gone_id);
    assert_gone(&env, &moved_id);
    assert_eq!(env.ports(), vec![host_end(&kept_id)]);
    let report = env.daemon.gc().await.unwrap();
    assert!(report.removed.is_empty(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installed_conflist_chain_runs_as_containerd_drives_it() {
    use cni_spec::runtime::{CniRuntime, RuntimeConf};
    use cni_spec::{CniArgs, NetworkConfigList};
    let Some(env) = Env::start(|_| {}).await else {
        return;
    };
    if !ovn_harness::require(&["/usr/lib/cni/portmap"]) {
        return;
    }
    let (ip, mac) = env.allocate("ns1", "chained", OVN_DEFAULT, 60).await;
    let netns = PodNetns::new();
    let id = container_id();
    // the file the daemon installs with --install-cni-config
    let conf_dir = env.dir.path().join("net.d");
    let file =
        kube_ovn_daemon::cniconf::install(&conf_dir, "01-kube-ovn.conflist", &env.socket).unwrap();
    let list = NetworkConfigList::from_file(&file).unwrap();
    let runtime = CniRuntime::new(
        vec![env::plugin_dir(), "/usr/lib/cni".into()],
        env.dir.path().join("cache"),
    );
    let mut attachment = RuntimeConf::new(&id, netns.path(), "eth0");
    attachment.args = CniArgs::from_pairs([
        ("IgnoreUnknown", "1"),
        ("K8S_POD_NAMESPACE", "ns1"),
        ("K8S_POD_NAME", "chained"),
        ("K8S_POD_INFRA_CONTAINER_ID", id.as_str()),
        ("K8S_POD_UID", "6f0d2d38-chained"),
    ]);
    let (result, attachment) = tokio::task::spawn_blocking({
        let (runtime, list) = (runtime.clone(), list.clone());
        move || (runtime.add_network_list(&list, &attachment), attachment)
    })
    .await
    .unwrap();
    let result = result.expect("ADD through the chain").to_value();
    assert_eq!(result["cniVersion"], "0.3.1");
    assert_eq!(result["interfaces"][0]["name"], "eth0");
    assert_eq!(result["interfaces"][0]["mac"], mac.as_str());
    assert_eq!(result["ips"][0]["address"], format!("{ip}/16"));
    assert_eq!(env.ports(), vec![host_end(&id)]);

    // StopPodSandbox (netns set), then RemovePodSandbox (no netns, no cached result)
    let mut removed = attachment.clone();
    removed.netns = None;
    let (stop, remove) = tokio::task::spawn_blocking(move || {
        let stop = runtime.del_network_list(&list, &attachment);
        let remove = runtime.del_network_list(&list, &removed);
        (stop, remove)
    })
    .await
    .unwrap();
    stop.expect("DEL (StopPodSandbox)");
    remove.expect("DEL without netns (RemovePodSandbox)");
    assert_gone(&env, &id);
}
