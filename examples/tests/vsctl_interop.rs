//! Our `ovs-vsctl` against the real one (OVS 3.1, `--no-wait`) on real ovsdb-servers:
//! same script, same database; same bytes from `show`/`list`/`find`/`get` on one database;
//! same failures for bad input.

mod common;

use common::{dump_table, normalize_uuids, run_tool, script};
use ovn_harness::{Db, OvsdbServer};

const OURS: &str = env!("CARGO_BIN_EXE_ovs-vsctl");
const REAL: &str = "ovs-vsctl";

const TOPOLOGY: &str = r#"
init
add-br br-int
add-br br-ex -- set Bridge br-ex fail_mode=secure datapath_type=netdev
--may-exist add-br br-int
add-port br-int vm1 -- set Interface vm1 type=internal external_ids:iface-id=ls1-vm1
add-port br-int vm2 tag=10 -- set Interface vm2 external_ids:iface-id=ls1-vm2 mtu_request=1400
add-port br-int tun0 -- set Interface tun0 type=geneve options:remote_ip=192.168.0.2 options:key=flow
add-port br-ex eth1 trunks=1,2,3
--may-exist add-port br-int vm1
add-port br-int tmp -- del-port br-int tmp
set-controller br-ex tcp:127.0.0.1:6653
set-manager ptcp:6640
set Open_vSwitch . external_ids:system-id=chassis-1 external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip=127.0.0.1
set Port vm2 other_config:priority-tags=true
add Bridge br-int protocols OpenFlow13
add Bridge br-int protocols OpenFlow15
remove Bridge br-int protocols OpenFlow13
clear Interface vm2 mtu_request
--id=@q create QoS type=linux-htb other_config:max-rate=1000000 -- set Port vm1 qos=@q
add-br br-tmp
del-br br-tmp
--if-exists del-br br-none
--if-exists del-port no-port
"#;

const READS: &str = r#"
show
list-br
list-ports br-int
list-ports br-ex
list Open_vSwitch
list Bridge
list Port
list Interface
list Controller
list Manager
list QoS
list Bridge br-int
--columns=name,type list Interface
--bare --columns=name list Port
find Interface type=internal
find Port tag=10
find Interface 'external_ids:iface-id=ls1-vm1'
get Open_vSwitch . external_ids:system-id
get Bridge br-int protocols fail_mode _uuid
get Interface tun0 options
"#;

const TABLES: &[&str] = &[
    "Open_vSwitch",
    "Bridge",
    "Port",
    "Interface",
    "Controller",
    "Manager",
    "QoS",
];

fn with_no_wait(args: &[String]) -> Vec<&str> {
    let mut v = vec!["--no-wait"];
    v.extend(args.iter().map(String::as_str));
    v
}

#[test]
fn same_script_builds_same_database_and_reads_match_byte_for_byte() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", REAL]) {
        return;
    }
    let real_server =
        OvsdbServer::start(Db::OpenVswitch).expect("start vswitch db for the real tool");
    let our_server = OvsdbServer::start(Db::OpenVswitch).expect("start vswitch db for ours");
    let (real_db, our_db) = (real_server.unix_remote(), our_server.unix_remote());
    for args in script(TOPOLOGY) {
        let args = with_no_wait(&args);
        let real = run_tool(REAL, &real_db, &args);
        let ours = run_tool(OURS, &our_db, &args);
        assert_eq!(real.ok, ours.ok, "{args:?}: real {real:?} ours {ours:?}");
        assert_eq!(
            normalize_uuids(&real.stdout),
            normalize_uuids(&ours.stdout),
            "{args:?}"
        );
        assert_eq!(real.stderr, ours.stderr, "{args:?}");
    }
    for table in TABLES {
        assert_eq!(
            dump_table(REAL, &real_db, table),
            dump_table(REAL, &our_db, table),
            "{table}"
        );
    }
    for db in [&real_db, &our_db] {
        for args in script(READS) {
            let args = with_no_wait(&args);
            let real = run_tool(REAL, db, &args);
            assert!(real.ok, "real {args:?}: {}", real.stderr);
            let ours = run_tool(OURS, db, &args);
            assert!(ours.ok, "ours {args:?}: {}", ours.stderr);
            assert_eq!(real.stdout, ours.stdout, "{args:?} on {db}");
        }
    }
}

#[test]
fn bad_input_fails_with_the_real_tools_message() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", REAL]) {
        return;
    }
    let server = OvsdbServer::start(Db::OpenVswitch).expect("start vswitch db");
    let db = server.unix_remote();
    let setup = run_tool(
        OURS,
        &db,
        &["init", "--", "add-br", "br0", "--", "add-port", "br0", "p0"],
    );
    assert!(setup.ok, "{}", setup.stderr);
    let bad = r#"
frobnicate
add-br br0
add-port br0 p0
add-port nobr p1
del-br nobr
del-port nope
del-port br0 nope
list-ports nobr
list Nope
get Bridge br0 nosuchcolumn
get Bridge nobr name
set Bridge br0 fail_mode=sometimes
set Port p0 tag=5000
set Interface p0 ofport_request=notanumber
add Bridge br0 protocols OpenFlow99
clear Bridge br0 name
"#;
    for args in script(bad) {
        let args = with_no_wait(&args);
        let real = run_tool(REAL, &db, &args);
        let ours = run_tool(OURS, &db, &args);
        assert!(!real.ok, "real tool accepted {args:?}");
        assert!(!ours.ok, "ours accepted {args:?}");
        assert_eq!(real.stderr, ours.stderr, "{args:?}");
    }
    let ports = run_tool(OURS, &db, &["list-ports", "br0"]);
    assert_eq!(ports.stdout, "p0\n", "failed commands must not write");
}
