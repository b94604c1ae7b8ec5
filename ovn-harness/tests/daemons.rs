//! The harness against the real daemons: they start, answer, restart and stop by pid.

use ovn_harness::{require, run, Db, OvnCentral, OvsdbServer, RaftCluster};

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn standalone_server_serves_restarts_and_stops() {
    if !require(&["ovsdb-server", "ovsdb-tool", "ovsdb-client"]) {
        return;
    }
    let mut server = OvsdbServer::start_tcp(Db::Northbound).expect("start");
    let dbs = run("ovsdb-client", &["list-dbs", &server.unix_remote()]).unwrap();
    assert!(dbs.lines().any(|l| l == "OVN_Northbound"), "{dbs}");
    let tcp = server.tcp_remote().expect("tcp remote");
    let dbs = run("ovsdb-client", &["list-dbs", &tcp]).unwrap();
    assert!(dbs.contains("OVN_Northbound"));

    run(
        "ovn-nbctl",
        &[&format!("--db={}", server.unix_remote()), "ls-add", "kept"],
    )
    .unwrap();
    let pid = server.pid().unwrap();
    server.restart().unwrap();
    assert!(
        !pid_alive(pid),
        "old server {pid} still alive after restart"
    );
    let after = run("ovn-nbctl", &[&format!("--db={tcp}"), "ls-list"]).unwrap();
    assert!(after.contains("(kept)"), "{after}");

    let pid = server.pid().unwrap();
    drop(server);
    assert!(!pid_alive(pid), "server {pid} survived drop");
}

#[test]
fn raft_cluster_elects_a_new_leader_after_a_kill() {
    if !require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl"]) {
        return;
    }
    let mut cluster = RaftCluster::start(Db::Northbound, 3).expect("cluster");
    assert_eq!(cluster.remotes().len(), 3);
    let leader = cluster.leader().unwrap();
    let all = cluster.remotes().join(",");
    run("ovn-nbctl", &[&format!("--db={all}"), "ls-add", "before"]).unwrap();
    let pid = cluster.pid(leader).unwrap();
    cluster.kill(leader);
    assert!(!pid_alive(pid));
    let new_leader = cluster.wait_leader().unwrap();
    assert_ne!(new_leader, leader);
    let list = run("ovn-nbctl", &[&format!("--db={all}"), "ls-list"]).unwrap();
    assert!(list.contains("(before)"), "{list}");
    cluster.restart(leader).unwrap();
    assert!(cluster
        .cluster_status(leader)
        .unwrap()
        .contains("cluster member"));
}

#[test]
fn central_compiles_a_switch_into_the_southbound() {
    if !require(&["ovsdb-server", "ovn-northd", "ovn-nbctl", "ovn-sbctl"]) {
        return;
    }
    let central = OvnCentral::start().expect("central");
    let nb = format!("--db={}", central.nb_remote());
    run("ovn-nbctl", &[&nb, "--wait=sb", "ls-add", "sw0"]).unwrap();
    let sb = format!("--db={}", central.sb_remote());
    let dp = run(
        "ovn-sbctl",
        &[
            &sb,
            "--bare",
            "--columns=external_ids",
            "list",
            "Datapath_Binding",
        ],
    )
    .unwrap();
    assert!(dp.contains("name=sw0"), "{dp}");
}

#[test]
fn chassis_binds_a_port_plugged_into_br_int() {
    if !ovn_harness::require_root(&["ovs-vswitchd", "ovn-controller", "ip", "ovn-nbctl"]) {
        return;
    }
    let central = OvnCentral::start().expect("central");
    let nb = format!("--db={}", central.nb_remote());
    run(
        "ovn-nbctl",
        &[
            &nb,
            "ls-add",
            "sw0",
            "--",
            "lsp-add",
            "sw0",
            "p1",
            "--",
            "lsp-set-addresses",
            "p1",
            "50:54:00:00:00:01 10.0.0.11",
        ],
    )
    .unwrap();
    let ns = format!("hch{}", std::process::id());
    let chassis = ovn_harness::Chassis::start(ovn_harness::ChassisConfig::new(
        &ns,
        &central.sb_remote(),
        "127.0.0.1",
    ))
    .expect("chassis");
    // a veth whose host end lives in the chassis namespace, plugged as p1
    let host = format!("h{}", std::process::id());
    run(
        "ip",
        &[
            "-n", &ns, "link", "add", &host, "type", "veth", "peer", "name", "p1c",
        ],
    )
    .unwrap();
    run("ip", &["-n", &ns, "link", "set", &host, "up"]).unwrap();
    chassis
        .vsctl(&[
            "add-port",
            "br-int",
            &host,
            "--",
            "set",
            "Interface",
            &host,
            "external_ids:iface-id=p1",
        ])
        .unwrap();
    assert!(
        chassis.wait_ovn_installed(&host, std::time::Duration::from_secs(30)),
        "ovn-installed never set on {host}"
    );
    // ovn-installed is set by ovn-controller before northd copies Port_Binding.up back to the
    // northbound port, so wait for that copy rather than reading it once.
    run(
        "ovn-nbctl",
        &[
            &nb,
            "--timeout=30",
            "wait-until",
            "Logical_Switch_Port",
            "p1",
            "up=true",
        ],
    )
    .expect("northbound port p1 never came up");
    let up = run("ovn-nbctl", &[&nb, "lsp-get-up", "p1"]).unwrap();
    assert_eq!(up.trim(), "up");
    drop(chassis);
    assert!(
        !std::path::Path::new(&format!("/var/run/netns/{ns}")).exists(),
        "namespace {ns} left behind"
    );
}
