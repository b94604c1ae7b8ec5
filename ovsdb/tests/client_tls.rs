//! OVSDB over TLS against a real ovsdb-server: `ssl:` with mutual authentication beside
//! the real `ovn-nbctl`, refusals in both directions with errors that name the
//! certificate and the reason, `pssl:`/`ptcp:` where ovsdb-server connects to us, and
//! bad key/certificate files.

use std::time::Duration;

use ovn_harness::{Db, OvsPki, OvsdbServer, Pki, TlsFiles};
use ovsdb::client::{Client, ClientOptions, Error, Event, TlsConfig, TlsError, TlsFile};
use ovsdb::{Atom, Operation, Row};

const NB: &str = "OVN_Northbound";

/// The tools these tests drive; `false` (return early) only outside CI.
fn tools() -> bool {
    ovn_harness::require(&["ovsdb-server", "ovsdb-tool", "ovn-nbctl"])
}

fn tls(files: &TlsFiles) -> TlsConfig {
    TlsConfig::from_files(&files.private_key, &files.certificate, &files.ca_cert).unwrap()
}

fn options(remote: &str, files: &TlsFiles) -> ClientOptions {
    ClientOptions::new([remote])
        .unwrap()
        .with_database(NB)
        .with_tls(tls(files))
}

/// `ovn-nbctl --db=REMOTE -p KEY -c CERT -C CACERT ARGS...`.
fn nbctl(remote: &str, files: &TlsFiles, args: &[&str]) -> Result<String, String> {
    let db = format!("--db={remote}");
    let (key, cert, ca) = (
        files.private_key.to_string_lossy(),
        files.certificate.to_string_lossy(),
        files.ca_cert.to_string_lossy(),
    );
    let mut all = vec![
        db.as_str(),
        "--timeout=5",
        "-p",
        key.as_ref(),
        "-c",
        cert.as_ref(),
        "-C",
        ca.as_ref(),
    ];
    all.extend_from_slice(args);
    ovn_harness::run("ovn-nbctl", &all).map_err(|e| e.to_string())
}

async fn add_switch(client: &Client, name: &str) {
    let row = Row::new().with("name", Atom::from(name));
    client
        .transact(NB, &[Operation::insert("Logical_Switch", row).into()])
        .await
        .unwrap();
}

async fn switch_names(client: &Client) -> Vec<String> {
    let select = Operation::select("Logical_Switch").with_columns(["name"]);
    let reply = client.transact(NB, &[select.into()]).await.unwrap();
    let mut names: Vec<String> = reply[0]
        .rows()
        .unwrap()
        .iter()
        .filter_map(|row| row.get("name")?.as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

/// Kube-OVN's layout: one CA, one `CN=ovn` certificate shared by server and clients,
/// which connect by IP address (the certificate names no host).
#[tokio::test]
async fn our_client_and_ovn_nbctl_share_one_tls_server() {
    if !tools() {
        return;
    }
    let pki = Pki::new("ovn-ca").unwrap();
    let ovn = pki.issue("ovn").unwrap();
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).unwrap();
    let remote = server.ssl_remote().unwrap();

    let client = Client::connect_with(options(&remote, &ovn)).await.unwrap();
    add_switch(&client, "from-rust").await;
    let listed = nbctl(&remote, &ovn, &["ls-list"]).unwrap();
    assert!(
        listed.contains("(from-rust)"),
        "ovn-nbctl ls-list: {listed}"
    );

    nbctl(&remote, &ovn, &["ls-add", "from-nbctl"]).unwrap();
    assert_eq!(switch_names(&client).await, ["from-nbctl", "from-rust"]);
}

/// Transactions larger than the socket buffers, several in flight: rustls buffers what
/// the socket does not take, and the client must flush it, not leave it there.
#[tokio::test]
async fn large_pipelined_transactions_go_through_tls_whole() {
    if !tools() {
        return;
    }
    let pki = Pki::new("ovn-ca").unwrap();
    let ovn = pki.issue("ovn").unwrap();
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).unwrap();
    let remote = server.ssl_remote().unwrap();
    // No probes: a loaded machine must not turn a slow commit into a reconnection.
    let options = options(&remote, &ovn).with_probe_interval(None);
    let client = Client::connect_with(options).await.unwrap();
    let batch = |prefix: &str| -> Vec<Operation> {
        (0..5_000)
            .map(|i| {
                let row = Row::new().with("name", Atom::from(format!("{prefix}-{i:04}")));
                Operation::insert("Logical_Switch", row).into()
            })
            .collect()
    };
    let (a, b, c) = (batch("a"), batch("b"), batch("c"));
    let (ra, rb, rc) = tokio::join!(
        client.transact(NB, &a),
        client.transact(NB, &b),
        client.transact(NB, &c)
    );
    for results in [ra, rb, rc] {
        assert_eq!(results.unwrap().len(), 5_000);
    }
    assert_eq!(switch_names(&client).await.len(), 15_000);
}

/// A client certificate from another CA is refused by ovsdb-server, for our client and
/// for `ovn-nbctl` alike; the error names our certificate and the server's alert, and
/// the server keeps serving (and keeps its data for) authenticated clients.
#[tokio::test]
async fn a_client_certificate_from_another_ca_is_refused() {
    if !tools() {
        return;
    }
    let pki = Pki::new("ovn-ca").unwrap();
    let ovn = pki.issue("ovn").unwrap();
    let rogue_pki = Pki::new("rogue-ca").unwrap();
    let rogue = TlsFiles {
        // Trusts the real CA, so the server's certificate is accepted: only ours is wrong.
        ca_cert: ovn.ca_cert.clone(),
        ..rogue_pki.issue("ovn").unwrap()
    };
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).unwrap();
    let remote = server.ssl_remote().unwrap();
    let good = Client::connect_with(options(&remote, &ovn)).await.unwrap();
    add_switch(&good, "kept").await;

    let refused = options(&remote, &rogue).with_connect_timeout(Duration::from_secs(1));
    match Client::connect_with(refused).await {
        Err(Error::NoServer { last_reason, .. }) => {
            let certificate = rogue.certificate.display().to_string();
            assert!(
                last_reason.contains(&format!(
                    "the ovsdb-server at {remote} refused our certificate {certificate}"
                )),
                "{last_reason}"
            );
        }
        other => panic!("a foreign client certificate was not refused: {other:?}"),
    }
    let nbctl_refused = nbctl(&remote, &rogue, &["ls-list"]);
    assert!(
        nbctl_refused.is_err(),
        "ovn-nbctl got in: {nbctl_refused:?}"
    );

    assert_eq!(switch_names(&good).await, ["kept"]);
}

/// We refuse a server whose certificate does not lead to our CA, and say which
/// certificate, why, and against which CA file.
#[tokio::test]
async fn a_server_certificate_from_another_ca_is_refused() {
    if !tools() {
        return;
    }
    let pki = Pki::new("ovn-ca").unwrap();
    let ovn = pki.issue("ovn").unwrap();
    let other = Pki::new("other-ca").unwrap();
    let distrustful = TlsFiles {
        ca_cert: other.ca_cert().to_owned(),
        ..ovn.clone()
    };
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).unwrap();
    let remote = server.ssl_remote().unwrap();
    let options = options(&remote, &distrustful).with_connect_timeout(Duration::from_secs(1));
    match Client::connect_with(options).await {
        Err(Error::NoServer { last_reason, .. }) => {
            let expected = format!(
                "the certificate of the ovsdb-server at {remote} was refused: it is not signed \
                 by that CA (unknown issuer) (checked against CA certificate {})",
                other.ca_cert().display()
            );
            assert!(last_reason.contains(&expected), "{last_reason}");
        }
        other => panic!("a server certificate from another CA was accepted: {other:?}"),
    }
}

/// `pssl:`, `ptcp:` and `punix:`: we listen, ovsdb-server connects
/// (`--remote=ssl:`/`tcp:`/`unix:`), and
/// after the server restarts it connects again to the same listener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passive_remotes_accept_the_server_and_its_reconnection() {
    if !tools() {
        return;
    }
    let pki = Pki::new("ovn-ca").unwrap();
    let ovn = pki.issue("ovn").unwrap();
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let socket = dir.path().join("ours.sock").display().to_string();
    for (listen, connect, tls) in [
        ("pssl", "ssl", Some(&ovn)),
        ("ptcp", "tcp", None),
        ("punix", "unix", None),
    ] {
        let port = free_port();
        let (ours, theirs) = if listen == "punix" {
            (format!("punix:{socket}"), format!("unix:{socket}"))
        } else {
            (
                format!("{listen}:{port}:127.0.0.1"),
                format!("{connect}:127.0.0.1:{port}"),
            )
        };
        let mut options = ClientOptions::new([ours.as_str()])
            .unwrap()
            .with_database(NB)
            // ovsdb-server retries with its own backoff (1 s, 2 s, ...).
            .with_connect_timeout(Duration::from_secs(20));
        if tls.is_some() {
            options = options.with_tls(self::tls(&ovn));
        }
        let connecting = tokio::spawn(Client::connect_with(options));
        let mut server = OvsdbServer::start_connecting(Db::Northbound, &theirs, tls).unwrap();
        let client = connecting.await.unwrap().unwrap();
        assert_eq!(client.current_remote().as_deref(), Some(ours.as_str()));
        add_switch(&client, "before-restart").await;

        let mut events = client.events();
        tokio::task::block_in_place(|| server.restart()).unwrap();
        loop {
            match tokio::time::timeout(Duration::from_secs(30), events.recv()).await {
                Ok(Ok(Event::Connected { remote })) => {
                    assert_eq!(remote, ours);
                    break;
                }
                Ok(Ok(_)) => {}
                other => panic!("{listen}: no reconnection after a server restart: {other:?}"),
            }
        }
        add_switch(&client, "after-restart").await;
        assert_eq!(
            switch_names(&client).await,
            ["after-restart", "before-restart"],
            "{listen}"
        );
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Bad files are refused before any connection, naming the file and the reason.
#[test]
fn bad_key_and_certificate_files_name_the_file() {
    let pki = Pki::new("ovn-ca").unwrap();
    let ovn = pki.issue("ovn").unwrap();
    let other = pki.issue("other").unwrap();

    let missing = pki.dir().join("missing-privkey.pem");
    match TlsConfig::from_files(&missing, &ovn.certificate, &ovn.ca_cert) {
        Err(TlsError::File { file, path, .. }) => {
            assert_eq!((file, path), (TlsFile::PrivateKey, missing));
        }
        other => panic!("{other:?}"),
    }
    // A key where the certificate should be: no CERTIFICATE block in it.
    match TlsConfig::from_files(&ovn.private_key, &ovn.private_key, &ovn.ca_cert) {
        Err(TlsError::File { file, path, reason }) => {
            assert_eq!(
                (file, path),
                (TlsFile::Certificate, ovn.private_key.clone())
            );
            assert_eq!(reason, "holds no PEM certificate");
        }
        other => panic!("{other:?}"),
    }
    match TlsConfig::from_files(&other.private_key, &ovn.certificate, &ovn.ca_cert) {
        Err(TlsError::KeyMismatch {
            private_key,
            certificate,
            ..
        }) => assert_eq!(
            (private_key, certificate),
            (other.private_key.clone(), ovn.certificate.clone())
        ),
        other => panic!("{other:?}"),
    }
    let config = TlsConfig::from_files(&ovn.private_key, &ovn.certificate, &ovn.ca_cert).unwrap();
    assert_eq!(config.certificate(), ovn.certificate);
}

/// An `ssl:` remote without key, certificate and CA certificate says what is missing.
#[tokio::test]
async fn an_ssl_remote_without_tls_files_says_so() {
    let options = ClientOptions::new(["ssl:127.0.0.1:1"])
        .unwrap()
        .with_connect_timeout(Duration::from_millis(300));
    match Client::connect_with(options).await {
        Err(Error::NoServer { last_reason, .. }) => assert!(
            last_reason
                .contains("ssl:127.0.0.1:1 needs a private key, certificate and CA certificate"),
            "{last_reason}"
        ),
        other => panic!("{other:?}"),
    }
}

/// Certificates as `ovs-pki` makes them (X.509 v1, which webpki alone refuses), for
/// `ssl:` and `pssl:`, beside `ovn-nbctl`; and a v1 certificate from another v1 CA is
/// still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ovs_pki_v1_certificates_work_and_are_still_verified() {
    if !tools() || !ovn_harness::require(&["openssl"]) {
        return;
    }
    let pki = OvsPki::new("OVS switchca CA Certificate").unwrap();
    let ovn = pki.issue("ovn").unwrap();
    let server = OvsdbServer::start_ssl(Db::Northbound, &ovn).unwrap();
    let remote = server.ssl_remote().unwrap();
    let client = Client::connect_with(options(&remote, &ovn)).await.unwrap();
    add_switch(&client, "v1").await;
    let listed = nbctl(&remote, &ovn, &["ls-list"]).unwrap();
    assert!(listed.contains("(v1)"), "ovn-nbctl ls-list: {listed}");

    // pssl: the server presents the v1 certificate as a TLS client, to our verifier.
    let port = free_port();
    let ours = format!("pssl:{port}:127.0.0.1");
    let passive = ClientOptions::new([ours.as_str()])
        .unwrap()
        .with_database(NB)
        .with_connect_timeout(Duration::from_secs(20))
        .with_tls(tls(&ovn));
    let connecting = tokio::spawn(Client::connect_with(passive));
    let theirs = format!("ssl:127.0.0.1:{port}");
    let _active = OvsdbServer::start_connecting(Db::Northbound, &theirs, Some(&ovn)).unwrap();
    let passive = connecting.await.unwrap().unwrap();
    add_switch(&passive, "v1-passive").await;

    let other = OvsPki::new("OVS other CA Certificate").unwrap();
    let distrustful = TlsFiles {
        ca_cert: other.ca_cert().to_owned(),
        ..ovn.clone()
    };
    let refused = options(&remote, &distrustful).with_connect_timeout(Duration::from_secs(1));
    match Client::connect_with(refused).await {
        Err(Error::NoServer { last_reason, .. }) => assert!(
            last_reason.contains("was refused: it is not signed by that CA (unknown issuer)"),
            "{last_reason}"
        ),
        other => panic!("a v1 server certificate from another CA was accepted: {other:?}"),
    }
}
