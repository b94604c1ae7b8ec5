//! Our `ovn-nbctl` against the real one (OVN 23.03) on real ovsdb-servers: the same
//! write script gives the same database, every read command prints the same bytes on the
//! same database, and bad input fails with the same message.

mod common;

use common::{dump_table, normalize_uuids, run_tool, script};
use ovn_harness::{Db, OvsdbServer};

const OURS: &str = env!("CARGO_BIN_EXE_ovn-nbctl");
const REAL: &str = "ovn-nbctl";

/// A topology touching every command family: switches, ports with addresses, types and
/// options, routers, router ports, routes (ECMP, route tables, IPv6), policies, NAT, load
/// balancers, ACLs on switches and port groups, DHCP options, generic db commands.
const TOPOLOGY: &str = r#"
ls-add sw0
ls-add sw1 -- ls-add sw2
--may-exist ls-add sw0
lsp-add sw0 p1 -- lsp-set-addresses p1 '00:00:00:00:00:01 10.0.0.1' -- lsp-set-port-security p1 '00:00:00:00:00:01 10.0.0.1'
lsp-add sw0 p2 -- lsp-set-addresses p2 dynamic
lsp-add sw0 p3 -- lsp-set-addresses p3 '00:00:00:00:00:03 10.0.0.3 fd00::3' unknown
lsp-add sw1 vm1 -- lsp-set-addresses vm1 '00:00:00:01:00:01 10.1.0.1' -- lsp-set-type vm1 localport
lsp-add sw1 ln1 -- lsp-set-type ln1 localnet -- lsp-set-addresses ln1 unknown -- lsp-set-options ln1 network_name=physnet1
lsp-add sw0 parent1 -- lsp-add sw0 child1 parent1 7
--may-exist lsp-add sw0 p1
lr-add r0 -- lr-add r1
lrp-add r0 r0-sw0 00:00:00:00:ff:01 10.0.0.254/24 fd00::fe/64
lrp-add r0 r0-sw1 00:00:00:00:ff:02 10.1.0.254/24
lrp-add r0 r0-ext 00:00:00:00:ff:03 172.16.0.1/24
--may-exist lrp-add r0 r0-sw1 00:00:00:00:ff:02 10.1.0.254/24
lsp-add sw0 sw0-r0 -- lsp-set-type sw0-r0 router -- lsp-set-addresses sw0-r0 router -- lsp-set-options sw0-r0 router-port=r0-sw0
lsp-add sw1 sw1-r0 -- lsp-set-type sw1-r0 router -- lsp-set-addresses sw1-r0 '00:00:00:00:ff:02' -- lsp-set-options sw1-r0 router-port=r0-sw1
lr-route-add r0 0.0.0.0/0 172.16.0.254
lr-route-add r0 10.9.0.0/16 10.0.0.1
--ecmp lr-route-add r0 10.8.0.0/16 10.0.0.2
--ecmp lr-route-add r0 10.8.0.0/16 10.0.0.3
--policy=src-ip lr-route-add r0 10.0.0.5 172.16.0.9 r0-ext
--route-table=rtb lr-route-add r0 192.168.0.0/24 10.0.0.7
lr-route-add r0 10.7.0.9/16 discard
lr-route-add r0 fd01::/64 fd00::1
--may-exist lr-route-add r0 10.9.0.0/16 10.0.0.4
lr-route-del r0 10.7.0.0/16
lr-policy-add r0 100 'ip4.src == 10.0.0.0/24' allow
lr-policy-add r0 200 'ip4.dst == 1.1.1.1' reroute 10.0.0.1,10.0.0.2
lr-policy-add r0 300 'ip4.dst == 2.2.2.2' drop pkt_mark=5
lr-policy-add r0 150 'ip4.dst == 3.3.3.3' allow
lr-policy-del r0 150 'ip4.dst == 3.3.3.3'
lr-nat-add r0 snat 172.16.0.1 10.0.0.0/24
lr-nat-add r0 dnat 172.16.0.5 10.0.0.5
lr-nat-add r0 dnat_and_snat 172.16.0.2 10.0.0.2 p2 00:00:00:00:00:22
lr-nat-add r0 snat 172.16.0.1 10.1.0.0/16
lr-nat-del r0 dnat 172.16.0.5
lb-add lb0 10.0.0.10:80 10.0.0.1:80,10.0.0.2:80
lb-add lb0 10.0.0.11:443 10.0.0.1:443 udp
lb-add lb1 10.0.0.20 10.0.0.3,10.0.0.4
lb-add lb2 '[fd00::10]:80' '[fd00::3]:8080'
ls-lb-add sw0 lb0 -- ls-lb-add sw0 lb1 -- lr-lb-add r0 lb0
ls-lb-add sw1 lb2
ls-lb-del sw1 lb2
lb-del lb1 10.0.0.20
pg-add pg1 p1 p2
pg-add pg2
pg-set-ports pg2 p3 vm1
acl-add sw0 to-lport 1001 'ip4.src == 10.0.0.1' drop
acl-add sw0 from-lport 1002 'ip' allow-related
--log --name=web --severity=info acl-add sw0 to-lport 1000 'tcp.dst == 80' allow
acl-add pg1 from-lport 100 'inport == @pg1' allow
--type=port-group acl-add pg2 to-lport 200 'outport == @pg2' reject
acl-del sw0 to-lport 1001 'ip4.src == 10.0.0.1'
set Logical_Switch sw0 other_config:subnet=10.0.0.0/24 external_ids:owner=test
set Logical_Switch_Port p3 tag_request=42 enabled=false
add Logical_Switch sw1 external_ids team=blue
add Logical_Router r0 options always_learn_from_arp_request=false
remove Logical_Switch sw0 external_ids owner
clear Logical_Switch_Port p1 port_security
--id=@as create Address_Set name=as1 'addresses="10.0.0.1","10.0.0.2"'
create Address_Set name=as2 addresses=[]
destroy Address_Set as2
lsp-del p2
ls-del sw2
lr-del r1
lrp-del r0-ext
"#;

/// Read commands compared byte for byte on one database.
const READS: &str = r#"
show
show sw0
show r0
ls-list
lr-list
lsp-list sw0
lsp-list sw1
lrp-list r0
lsp-get-addresses p3
lsp-get-port-security p1
lsp-get-type ln1
lsp-get-options ln1
lr-route-list r0
lr-policy-list r0
lr-nat-list r0
lb-list
lb-list lb0
ls-lb-list sw0
lr-lb-list r0
acl-list sw0
acl-list pg1
dhcp-options-list
list Logical_Switch
list Logical_Switch_Port
list Logical_Router
list Logical_Router_Port
list Logical_Router_Static_Route
list Logical_Router_Policy
list NAT
list Load_Balancer
list ACL
list Port_Group
list Address_Set
list DHCP_Options
list NB_Global
list Logical_Switch sw0 sw1
--columns=name,ports list Logical_Switch
--bare --columns=name list Logical_Switch_Port
find Logical_Switch_Port type=router
find Logical_Switch_Port 'addresses{>=}unknown'
find Logical_Switch_Port tag_request=42
find Logical_Switch 'other_config:subnet="10.0.0.0/24"'
find ACL priority>1000
get Logical_Switch sw0 name other_config:subnet external_ids
get Logical_Switch_Port p3 enabled tag_request _uuid
get Logical_Router r0 options
get Load_Balancer lb0 vips protocol
--bare get Logical_Switch_Port p1 addresses
"#;

const TABLES: &[&str] = &[
    "Logical_Switch",
    "Logical_Switch_Port",
    "Logical_Router",
    "Logical_Router_Port",
    "Logical_Router_Static_Route",
    "Logical_Router_Policy",
    "NAT",
    "Load_Balancer",
    "ACL",
    "Port_Group",
    "Address_Set",
    "DHCP_Options",
];

fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// Runs `text` through both tools, each on its own database; every step must succeed or
/// fail alike with the same (UUID-normalized) output.
fn run_script_on_both(text: &str, real_db: &str, our_db: &str) {
    for args in script(text) {
        let args = as_strs(&args);
        let real = run_tool(REAL, real_db, &args);
        let ours = run_tool(OURS, our_db, &args);
        assert_eq!(real.ok, ours.ok, "{args:?}: real {real:?} ours {ours:?}");
        assert_eq!(
            normalize_uuids(&real.stdout),
            normalize_uuids(&ours.stdout),
            "{args:?} stdout"
        );
        assert_eq!(
            normalize_uuids(&real.stderr),
            normalize_uuids(&ours.stderr),
            "{args:?} stderr"
        );
    }
}

fn compare_reads_on(db: &str) {
    for args in script(READS) {
        let args = as_strs(&args);
        let real = run_tool(REAL, db, &args);
        assert!(real.ok, "real {args:?} failed: {}", real.stderr);
        let ours = run_tool(OURS, db, &args);
        assert!(ours.ok, "ours {args:?} failed: {}", ours.stderr);
        assert_eq!(real.stdout, ours.stdout, "{args:?} differs on {db}");
    }
}

#[test]
fn same_script_builds_same_database_and_reads_match_byte_for_byte() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", REAL]) {
        return;
    }
    let real_server = OvsdbServer::start(Db::Northbound).expect("start NB for the real tool");
    let our_server = OvsdbServer::start(Db::Northbound).expect("start NB for ours");
    let (real_db, our_db) = (real_server.unix_remote(), our_server.unix_remote());
    run_script_on_both(TOPOLOGY, &real_db, &our_db);
    // DHCP options are addressed by UUID, so each tool works with its database's own.
    for (program, db) in [(REAL, &real_db), (OURS, &our_db)] {
        let created = run_tool(program, db, &["dhcp-options-create", "10.0.0.0/24", "k=v"]);
        assert!(created.ok, "{program}: {}", created.stderr);
        let found = run_tool(
            program,
            db,
            &[
                "--bare",
                "--columns=_uuid",
                "find",
                "DHCP_Options",
                "cidr=\"10.0.0.0/24\"",
            ],
        );
        let uuid = found.stdout.trim();
        let opts = [
            "dhcp-options-set-options",
            uuid,
            "lease_time=3600",
            "router=10.0.0.1",
        ];
        let set = run_tool(program, db, &opts);
        assert!(set.ok, "{program}: {}", set.stderr);
        let get = run_tool(program, db, &["dhcp-options-get-options", uuid]);
        assert_eq!(
            get.stdout,
            run_tool(REAL, db, &["dhcp-options-get-options", uuid]).stdout
        );
    }
    for table in TABLES {
        assert_eq!(
            dump_table(REAL, &real_db, table),
            dump_table(REAL, &our_db, table),
            "{table}"
        );
    }
    compare_reads_on(&real_db);
    compare_reads_on(&our_db);
}

#[test]
fn bad_input_fails_with_the_real_tools_message() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", REAL]) {
        return;
    }
    let server = OvsdbServer::start(Db::Northbound).expect("start NB");
    let db = server.unix_remote();
    let setup = run_tool(
        OURS,
        &db,
        &[
            "ls-add", "ls1", "--", "lsp-add", "ls1", "lp1", "--", "lr-add", "lr1",
        ],
    );
    assert!(setup.ok, "{}", setup.stderr);
    let bad = r#"
frobnicate
ls-add ls1
ls-add a b
lsp-add nosuch p
lsp-add ls1 lp1
lsp-del nosuch
lsp-set-type lp1 bogus
lsp-set-addresses lp1 not-a-mac
list Nope
list Logical_Switch nosuch
get Logical_Switch ls1 nosuchcolumn
set Logical_Switch_Port lp1 tag_request=5000
set Logical_Switch_Port lp1 enabled=maybe
set Logical_Switch ls1 other_config=1
get Logical_Switch ls1 external_ids:missing
lr-add lr1
lr-route-add lr1 not-a-prefix 10.0.0.1
lr-route-add lr1 10.0.0.0/24 fd00::1
lr-nat-add lr1 bogus 1.1.1.1 10.0.0.1
lr-nat-add lr1 snat 1.1.1.1 not-an-ip
lb-add lb 1.1.1.1:80 2.2.2.2
acl-add ls1 sideways 100 ip drop
acl-add ls1 to-lport 99999 ip drop
acl-add ls1 to-lport 100 ip explode
lr-policy-add lr1 10 ip4 reroute
clear Logical_Switch_Port lp1 name
"#;
    for args in script(bad) {
        let args = as_strs(&args);
        let real = run_tool(REAL, &db, &args);
        let ours = run_tool(OURS, &db, &args);
        assert!(!real.ok, "real tool accepted {args:?}");
        assert!(!ours.ok, "ours accepted {args:?}");
        assert!(ours.stdout.is_empty(), "{args:?} printed {:?}", ours.stdout);
        assert_eq!(real.stderr, ours.stderr, "{args:?}");
    }
    // Nothing was written by the failed commands.
    let ls = run_tool(
        OURS,
        &db,
        &["--bare", "--columns=name", "list", "Logical_Switch"],
    );
    assert_eq!(ls.stdout, "ls1\n");
}

/// Many rows make the C IDL's hash-table order (which our tool replays) non-trivial:
/// buckets collide and the table is resized several times. A pseudo-random topology is
/// built with our tool; the real one must print it identically.
#[test]
fn generated_topology_prints_identically() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", REAL]) {
        return;
    }
    let server = OvsdbServer::start(Db::Northbound).expect("start NB");
    let db = server.unix_remote();
    let mut seed: u64 = 0x5eed_1234;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let mut args: Vec<String> = Vec::new();
    for s in 0..150 {
        args.extend(["--".into(), "ls-add".into(), format!("ls{s}")]);
        for p in 0..next(4) {
            let port = format!("ls{s}-p{p}");
            let addr = format!(
                "00:00:00:{:02x}:{:02x}:{:02x} 10.{}.{}.{}",
                s / 256,
                s % 256,
                p,
                s / 256,
                s % 256,
                p + 2
            );
            args.extend([
                "--".into(),
                "lsp-add".into(),
                format!("ls{s}"),
                port.clone(),
            ]);
            args.extend(["--".into(), "lsp-set-addresses".into(), port, addr]);
        }
    }
    for r in 0..40 {
        args.extend(["--".into(), "lr-add".into(), format!("lr{r}")]);
        let mac = format!("00:00:01:00:00:{:02x}", r);
        let net = format!("172.{}.0.1/24", 16 + r);
        args.extend([
            "--".into(),
            "lrp-add".into(),
            format!("lr{r}"),
            format!("lr{r}-p"),
            mac,
            net,
        ]);
        let ext = format!("192.168.{r}.1");
        let int = format!("172.{}.0.0/24", 16 + r);
        args.extend([
            "--".into(),
            "lr-nat-add".into(),
            format!("lr{r}"),
            "snat".into(),
            ext,
            int,
        ]);
    }
    let argv: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let built = run_tool(OURS, &db, &argv);
    assert!(built.ok, "{}", built.stderr);
    for read in [
        &["show"][..],
        &["list", "Logical_Switch"],
        &["list", "Logical_Switch_Port"],
        &["ls-list"],
        &["lr-list"],
        &["find", "NAT", "type=snat"],
    ] {
        let real = run_tool(REAL, &db, read);
        let ours = run_tool(OURS, &db, read);
        assert!(
            real.ok && ours.ok,
            "{read:?}: {} / {}",
            real.stderr,
            ours.stderr
        );
        assert_eq!(real.stdout, ours.stdout, "{read:?}");
    }
}
