//! Our `ovn-nbctl` on a 3-member Raft cluster addressed as a remote list, the way
//! Kube-OVN addresses its NB cluster: it finds the leader, rides out the leader's death,
//! and never loses or doubles a write when a commit's reply is lost.

mod common;

use common::run_tool;
use ovn_harness::{Db, OvsdbServer, RaftCluster};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const OURS: &str = env!("CARGO_BIN_EXE_ovn-nbctl");
const REAL: &str = "ovn-nbctl";

/// How many switches of each name the cluster holds, read with the real tool.
fn switch_names(remote: &str) -> BTreeMap<String, usize> {
    let out = run_tool(
        REAL,
        remote,
        &["--bare", "--columns=name", "list", "Logical_Switch"],
    );
    assert!(out.ok, "real ovn-nbctl list: {}", out.stderr);
    let mut names = BTreeMap::new();
    for name in out.stdout.lines().filter(|l| !l.is_empty()) {
        *names.entry(name.to_owned()).or_insert(0) += 1;
    }
    names
}

#[test]
fn one_shot_ls_add_survives_leader_kill_and_restart() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl", REAL]) {
        return;
    }
    let mut cluster = RaftCluster::start(Db::Northbound, 3).expect("start 3-member NB cluster");
    let remote = cluster.unix_remotes().join(",");
    const N: usize = 300;
    let mut killed = None;
    let mut succeeded = Vec::new();
    let mut failures = Vec::new();
    for i in 0..N {
        let name = format!("sw{i}");
        let args = ["--timeout=60", "ls-add", &name];
        let ok = if i == N / 3 {
            // Killed while this command runs (connecting, reading or committing).
            let leader = cluster.wait_leader().expect("a leader");
            let child = std::process::Command::new(OURS)
                .arg(format!("--db={remote}"))
                .args(args)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn ovn-nbctl");
            std::thread::sleep(std::time::Duration::from_millis(3));
            cluster.kill(leader);
            killed = Some(leader);
            let out = child.wait_with_output().expect("wait for ovn-nbctl");
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            (out.status.success(), stderr)
        } else {
            if i == 2 * N / 3 {
                let member = killed.expect("killed at N/3");
                cluster.restart(member).expect("restart the killed member");
            }
            let out = run_tool(OURS, &remote, &args);
            (out.ok, out.stderr)
        };
        match ok {
            (true, _) => succeeded.push(name),
            (false, stderr) => failures.push(format!("{name}: {}", stderr.trim())),
        }
    }
    eprintln!(
        "{} of {N} one-shot ls-add succeeded; failures: {failures:?}",
        succeeded.len()
    );
    cluster.wait_leader().expect("a leader at the end");
    let names = switch_names(&remote);
    let doubled: Vec<_> = names.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "switches created twice: {doubled:?}");
    let lost: Vec<_> = succeeded
        .iter()
        .filter(|n| !names.contains_key(*n))
        .collect();
    assert!(lost.is_empty(), "reported created but missing: {lost:?}");
    assert!(
        succeeded.len() * 100 >= N * 97,
        "only {} of {N} succeeded; failures: {failures:?}",
        succeeded.len()
    );
}

#[test]
fn leader_only_skips_followers_unless_told_not_to() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-appctl", REAL]) {
        return;
    }
    let cluster = RaftCluster::start(Db::Northbound, 3).expect("start 3-member NB cluster");
    let leader = cluster.wait_leader().expect("a leader");
    let follower = cluster.unix_remotes()[(leader + 1) % 3].clone();
    let refused = run_tool(OURS, &follower, &["--timeout=2", "ls-add", "on-follower"]);
    assert!(!refused.ok, "leader-only run on a follower succeeded");
    assert!(
        refused.stderr.contains("timeout") && refused.stderr.contains("not the leader"),
        "{}",
        refused.stderr
    );
    let allowed = run_tool(
        OURS,
        &follower,
        &["--no-leader-only", "--timeout=10", "ls-add", "via-follower"],
    );
    assert!(
        allowed.ok,
        "--no-leader-only on a follower: {}",
        allowed.stderr
    );
    let names = switch_names(&cluster.unix_remotes().join(","));
    assert_eq!(names.get("via-follower"), Some(&1));
    assert_eq!(names.get("on-follower"), None);
}

/// A unix-socket proxy to `server` that, once, forwards a `transact` carrying an
/// `insert` and then closes the client's connection instead of relaying the reply: the
/// commit happens, the client never learns it.
fn reply_dropping_proxy(dir: &std::path::Path, server: String) -> String {
    let path = dir.join("proxy.sock");
    let listener = UnixListener::bind(&path).expect("bind proxy");
    let dropped = Arc::new(AtomicBool::new(false));
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let upstream = UnixStream::connect(&server).expect("proxy connects to server");
            let cut = Arc::new(AtomicBool::new(false));
            let (c2, u2) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
            let (cut2, dropped2) = (cut.clone(), dropped.clone());
            std::thread::spawn(move || pump_requests(c2, u2, &cut2, &dropped2));
            std::thread::spawn(move || pump_replies(upstream, client, &cut));
        }
    });
    format!("unix:{}", path.display())
}

fn pump_requests(mut from: UnixStream, mut to: UnixStream, cut: &AtomicBool, dropped: &AtomicBool) {
    let mut buf = [0u8; 65536];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        let text = String::from_utf8_lossy(&buf[..n]);
        if text.contains("\"method\":\"transact\"")
            && text.contains("\"op\":\"insert\"")
            && !dropped.swap(true, Ordering::SeqCst)
        {
            cut.store(true, Ordering::SeqCst);
        }
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

fn pump_replies(mut from: UnixStream, mut to: UnixStream, cut: &AtomicBool) {
    let mut buf = [0u8; 65536];
    while let Ok(n @ 1..) = from.read(&mut buf) {
        if cut.load(Ordering::SeqCst) {
            let _ = to.shutdown(std::net::Shutdown::Both);
            return;
        }
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

#[test]
fn lost_commit_reply_neither_fails_nor_doubles() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", REAL]) {
        return;
    }
    let server = OvsdbServer::start(Db::Northbound).expect("start NB");
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = reply_dropping_proxy(dir.path(), server.unix_remote()["unix:".len()..].into());
    let out = run_tool(OURS, &proxy, &["ls-add", "once"]);
    assert!(out.ok, "ls-add whose reply was lost: {}", out.stderr);
    let names = switch_names(&server.unix_remote());
    assert_eq!(names.get("once"), Some(&1), "{names:?}");
}

#[test]
fn bad_remote_lists_and_timeouts_are_named_and_change_nothing() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", REAL]) {
        return;
    }
    let server = OvsdbServer::start(Db::Northbound).expect("start NB");
    let good = server.unix_remote();
    assert!(run_tool(OURS, &good, &["ls-add", "kept"]).ok);
    let bad_list = format!("{good},bogus:x");
    let out = run_tool(OURS, &bad_list, &["ls-add", "never"]);
    assert!(!out.ok);
    assert!(out.stderr.contains("\"bogus:x\""), "{}", out.stderr);
    for timeout in ["--timeout=abc", "--timeout=0"] {
        let out = run_tool(OURS, &good, &[timeout, "ls-add", "never"]);
        assert!(!out.ok, "{timeout} accepted");
        let value = &timeout["--timeout=".len()..];
        let want = format!("ovn-nbctl: value {value} on -t or --timeout is invalid\n");
        assert_eq!(out.stderr, want);
    }
    let names = switch_names(&good);
    assert_eq!(names.keys().collect::<Vec<_>>(), ["kept"]);
}
