//! Connecting: why each remote was refused is told once per remote (not nested), and a
//! remote that accepts but never answers is left after `remote_timeout`, within the
//! overall `connect_timeout`.

use std::time::Duration;

use ovsdb::client::{Client, ClientOptions, Error};
use tokio::net::UnixListener;

mod common;
use common::start_nb;

#[tokio::test]
async fn no_server_names_each_remote_once_with_its_own_reason() {
    let Some(server) = start_nb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("unix:{}", dir.path().join("absent.sock").display());
    // The server last: the old client nested its reason in a second "no usable" error.
    let options = ClientOptions::new([format!("{missing},{}", server.unix_remote())])
        .unwrap()
        .with_database("Not_A_Database")
        .with_backoff(Duration::from_millis(20), Duration::from_millis(50))
        .with_connect_timeout(Duration::from_millis(400));
    let error = Client::connect_with(options).await.unwrap_err();
    let text = error.to_string();
    assert_eq!(
        text.matches("no usable ovsdb server").count(),
        1,
        "nested: {text}"
    );
    let Error::NoServer { rejected, .. } = error else {
        panic!("not NoServer: {error:?}");
    };
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert_eq!(rejected[1].remote, server.unix_remote());
    assert!(
        rejected[1]
            .reason
            .contains("does not serve database \"Not_A_Database\""),
        "{}",
        rejected[1]
    );
    assert!(!rejected[1].reason.contains(&server.unix_remote()));
    assert_eq!(rejected[0].remote, missing);
    assert!(
        rejected[0].reason.starts_with("connecting: "),
        "{}",
        rejected[0]
    );
    for rejection in &rejected {
        assert!(text.contains(&rejection.to_string()), "{text}");
    }
}

#[tokio::test]
async fn a_silent_remote_is_left_for_the_next_one() {
    let Some(server) = start_nb() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let silent_path = dir.path().join("silent.sock");
    // Accepts connections (the kernel does, from the backlog) and never answers.
    let _silent = UnixListener::bind(&silent_path).unwrap();
    let silent = format!("unix:{}", silent_path.display());
    let options = ClientOptions::new([format!("{silent},{}", server.unix_remote())])
        .unwrap()
        .with_database("OVN_Northbound")
        .with_remote_timeout(Duration::from_millis(200))
        .with_connect_timeout(Duration::from_secs(30));
    let client = Client::connect_with(options).await.unwrap();
    assert_eq!(client.current_remote(), Some(server.unix_remote()));

    // With only the silent remote, the overall deadline ends the attempt, and the
    // rejection says what the remote did.
    let options = ClientOptions::new([silent.as_str()])
        .unwrap()
        .with_remote_timeout(Duration::from_millis(100))
        .with_backoff(Duration::from_millis(20), Duration::from_millis(20))
        .with_connect_timeout(Duration::from_millis(300));
    match Client::connect_with(options).await {
        Err(Error::NoServer { rejected, .. }) => {
            assert_eq!(rejected.len(), 1);
            assert!(
                rejected[0]
                    .reason
                    .contains("setting up the session took longer"),
                "{}",
                rejected[0]
            );
        }
        other => panic!("a silent remote was accepted: {other:?}"),
    }
}
