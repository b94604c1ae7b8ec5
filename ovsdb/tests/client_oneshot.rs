//! The blocking one-shot client (`ovsdb::client::OneshotConnection`, `connect_cluster`)
//! against real ovsdb-servers: a standalone NB server and a 3-member Raft cluster.

use ovn_harness::{Db, OvsdbServer, Pki, RaftCluster, TlsFiles};
use ovsdb::client::{
    connect_cluster, ClusterOptions, Deadline, OneshotError, Remote, Seen, TlsConfig,
};
use serde_json::json;

const NB: &str = "OVN_Northbound";

fn options(leader_only: bool, secs: u64) -> ClusterOptions {
    ClusterOptions {
        leader_only,
        shuffle: false,
        deadline: Some(Deadline::after_secs(secs)),
        tls: None,
    }
}

fn tls_config(files: &TlsFiles) -> TlsConfig {
    TlsConfig::from_files(&files.private_key, &files.certificate, &files.ca_cert)
        .expect("TLS files load")
}

/// `ssl:` remotes: with the CA's key and certificate the one-shot client transacts; with
/// none it says TLS is not configured; with a certificate from another CA the server
/// refuses it (and this client refuses the server's), reported as a connection failure.
#[test]
fn ssl_remote_needs_a_certificate_from_the_servers_ca() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    let pki = Pki::new("oneshot-ca").expect("CA");
    let ovn = pki.issue("ovn").expect("certificate");
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).expect("start NB with pssl");
    let remote = server.ssl_remote().expect("ssl remote");
    let remotes = Remote::parse_list(&remote).expect("remote parses");

    let mut with_tls = options(true, 10);
    with_tls.tls = Some(tls_config(&ovn));
    let mut conn = connect_cluster(&remotes, NB, &with_tls, &mut Seen::default()).expect("connect");
    let insert = json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "over-tls"}});
    let results = conn.transact(NB, &[insert]).expect("transact over TLS");
    assert!(results[0]["uuid"][1].is_string(), "{results:?}");

    let err = connect_cluster(&remotes, NB, &options(true, 10), &mut Seen::default()).unwrap_err();
    assert!(
        matches!(&err, OneshotError::TlsNotConfigured { remote: r } if *r == remote),
        "{err:?}"
    );

    let other = Pki::new("other-ca").expect("CA");
    let mut stranger = options(true, 10);
    stranger.tls = Some(tls_config(&other.issue("ovn").expect("certificate")));
    let err = connect_cluster(&remotes, NB, &stranger, &mut Seen::default()).unwrap_err();
    assert!(matches!(err, OneshotError::Io { .. }), "{err:?}");
    assert!(err.to_string().starts_with(&remote), "{err}");
}

#[test]
fn standalone_schema_transact_and_rpc_errors() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    let server = OvsdbServer::start(Db::Northbound).expect("start NB");
    let remotes = Remote::parse_list(&server.unix_remote()).expect("remote parses");
    let mut conn =
        connect_cluster(&remotes, NB, &options(true, 10), &mut Seen::default()).expect("connect");
    let (schema, _) = conn.get_schema(NB).expect("schema");
    assert!(schema.table("Logical_Switch").is_some());
    let insert = json!({"op": "insert", "table": "Logical_Switch", "row": {"name": "a"}});
    let results = conn.transact(NB, &[insert]).expect("transact");
    assert!(results[0]["uuid"][1].is_string(), "{results:?}");
    // A bad request is an RPC error naming the method, and the connection stays usable.
    let err = conn.get_schema("No_Such_Db").unwrap_err();
    assert!(
        matches!(&err, OneshotError::Rpc { method, .. } if method == "get_schema"),
        "{err}"
    );
    let select = json!({"op": "select", "table": "Logical_Switch", "where": []});
    let rows = conn
        .transact(NB, &[select])
        .expect("select after the error");
    assert_eq!(rows[0]["rows"][0]["name"], "a");
}

#[test]
fn a_dead_single_remote_is_reported_at_once_with_its_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let remote = format!("unix:{}/missing.sock", dir.path().display());
    let remotes = Remote::parse_list(&remote).expect("remote parses");
    let err = connect_cluster(&remotes, NB, &options(true, 30), &mut Seen::default()).unwrap_err();
    assert!(matches!(err, OneshotError::Io { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("{remote}: database connection failed (No such file or directory)")
    );
}

#[test]
fn cluster_list_finds_the_leader_past_dead_members_and_followers() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl"]) {
        return;
    }
    let mut cluster = RaftCluster::start(Db::Northbound, 3).expect("start cluster");
    let leader = cluster.wait_leader().expect("leader");
    let follower = (leader + 1) % 3;
    let dead = (leader + 2) % 3;
    cluster.kill(dead);
    let unix = cluster.unix_remotes();
    // Dead member first, then a follower, then the leader: only the leader qualifies.
    let list = [&unix[dead], &unix[follower], &unix[leader]]
        .map(String::as_str)
        .join(",");
    let remotes = Remote::parse_list(&list).expect("list parses");
    let conn =
        connect_cluster(&remotes, NB, &options(true, 30), &mut Seen::default()).expect("leader");
    assert_eq!(conn.remote(), unix[leader]);
    // With followers allowed, the first live member (the follower) is taken.
    let conn =
        connect_cluster(&remotes, NB, &options(false, 30), &mut Seen::default()).expect("follower");
    assert_eq!(conn.remote(), unix[follower]);
    // Leader only, with only a follower listed: a timeout that says why.
    let only_follower = Remote::parse_list(&unix[follower]).expect("parses");
    let err =
        connect_cluster(&only_follower, NB, &options(true, 2), &mut Seen::default()).unwrap_err();
    assert!(
        matches!(err, OneshotError::Timeout { secs: 2, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("not the leader"), "{err}");
}
