//! Our drop-in `ovn-nbctl` and `ovs-vsctl` on `ssl:` remotes with `-p/-c/-C`, as Kube-OVN
//! runs them with `ENABLE_SSL`: against an ovsdb-server listening on `pssl:` with a
//! certificate from the harness's CA, side by side with the real tools.

mod common;

use common::{run_tool, Outcome};
use ovn_harness::{Db, OvsdbServer, Pki, TlsFiles};

const OUR_NBCTL: &str = env!("CARGO_BIN_EXE_ovn-nbctl");
const OUR_VSCTL: &str = env!("CARGO_BIN_EXE_ovs-vsctl");

/// `program --db=REMOTE -p KEY -c CERT -C CA args...`, the short options as Kube-OVN's
/// scripts pass them.
fn run_with_tls(program: &str, remote: &str, tls: &TlsFiles, args: &[&str]) -> Outcome {
    let files = [
        "-p",
        tls.private_key.to_str().expect("utf-8 path"),
        "-c",
        tls.certificate.to_str().expect("utf-8 path"),
        "-C",
        tls.ca_cert.to_str().expect("utf-8 path"),
    ];
    let all: Vec<&str> = files.iter().chain(args).copied().collect();
    run_tool(program, remote, &all)
}

#[test]
fn nbctl_over_ssl_writes_and_reads_like_the_real_one() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovn-nbctl"]) {
        return;
    }
    let pki = Pki::new("dbctl-ssl-ca").expect("CA");
    let ovn = pki.issue("ovn").expect("certificate");
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).expect("start NB with pssl");
    let remote = server.ssl_remote().expect("ssl remote");

    let ours = run_with_tls(OUR_NBCTL, &remote, &ovn, &["ls-add", "from-ours"]);
    assert!(ours.ok, "ours over ssl: {ours:?}");
    let real = run_with_tls("ovn-nbctl", &remote, &ovn, &["ls-add", "from-real"]);
    assert!(real.ok, "real over ssl: {real:?}");
    for read in [
        &["ls-list"][..],
        &["--columns=name", "list", "Logical_Switch"],
    ] {
        let real = run_with_tls("ovn-nbctl", &remote, &ovn, read);
        let ours = run_with_tls(OUR_NBCTL, &remote, &ovn, read);
        assert!(real.ok && ours.ok, "{read:?}: real {real:?} ours {ours:?}");
        assert!(real.stdout.contains("from-ours"), "{real:?}");
        assert_eq!(real.stdout, ours.stdout, "{read:?}");
    }
}

#[test]
fn ssl_without_certificates_or_with_a_strangers_is_refused_naming_the_remote() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool"]) {
        return;
    }
    let pki = Pki::new("dbctl-ssl-ca2").expect("CA");
    let ovn = pki.issue("ovn").expect("certificate");
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).expect("start NB with pssl");
    let remote = server.ssl_remote().expect("ssl remote");

    let bare = run_tool(OUR_NBCTL, &remote, &["--timeout=5", "ls-add", "x"]);
    assert!(!bare.ok, "{bare:?}");
    assert!(
        bare.stderr.contains(&remote) && bare.stderr.contains("ssl"),
        "{bare:?}"
    );
    let other = Pki::new("dbctl-ssl-other").expect("CA");
    let stranger = other.issue("ovn").expect("certificate");
    let refused = run_with_tls(
        OUR_NBCTL,
        &remote,
        &stranger,
        &["--timeout=5", "ls-add", "x"],
    );
    assert!(!refused.ok, "{refused:?}");
    assert!(refused.stderr.contains(&remote), "{refused:?}");
    // Nothing was written by either attempt.
    let listed = run_with_tls(OUR_NBCTL, &remote, &ovn, &["ls-list"]);
    assert_eq!(
        (listed.ok, listed.stdout.as_str()),
        (true, ""),
        "{listed:?}"
    );
}

#[test]
fn vsctl_over_ssl_adds_a_bridge_the_real_one_lists() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovs-vsctl"]) {
        return;
    }
    let pki = Pki::new("dbctl-ssl-ovs").expect("CA");
    let ovs = pki.issue("ovs").expect("certificate");
    let server = OvsdbServer::start_ssl(Db::OpenVswitch, &ovs).expect("start OVS db with pssl");
    let remote = server.ssl_remote().expect("ssl remote");
    // A fresh Open_vSwitch database has no root row; the real tool's `init` makes it.
    let init = run_with_tls("ovs-vsctl", &remote, &ovs, &["--no-wait", "init"]);
    assert!(init.ok, "{init:?}");
    let added = run_with_tls(OUR_VSCTL, &remote, &ovs, &["--no-wait", "add-br", "br-ssl"]);
    assert!(added.ok, "ours over ssl: {added:?}");
    let real = run_with_tls("ovs-vsctl", &remote, &ovs, &["list-br"]);
    let ours = run_with_tls(OUR_VSCTL, &remote, &ovs, &["list-br"]);
    assert_eq!(
        (real.ok, real.stdout.as_str()),
        (true, "br-ssl\n"),
        "{real:?}"
    );
    assert_eq!(real.stdout, ours.stdout);
}

#[test]
fn tls_files_are_not_read_for_a_unix_remote_as_with_the_real_tool() {
    if !ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovn-nbctl"]) {
        return;
    }
    let server = OvsdbServer::start(Db::Northbound).expect("start NB");
    let remote = server.unix_remote();
    let missing = TlsFiles {
        private_key: "/nonexistent/key.pem".into(),
        certificate: "/nonexistent/cert.pem".into(),
        ca_cert: "/nonexistent/cacert.pem".into(),
    };
    let real = run_with_tls("ovn-nbctl", &remote, &missing, &["ls-list"]);
    let ours = run_with_tls(OUR_NBCTL, &remote, &missing, &["ls-list"]);
    assert!(real.ok, "{real:?}");
    assert_eq!(
        (ours.ok, ours.stdout.as_str()),
        (true, real.stdout.as_str()),
        "{ours:?}"
    );
}
