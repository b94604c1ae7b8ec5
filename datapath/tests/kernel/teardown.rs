//! CNI DEL after the sandbox is gone: an empty or vanished namespace, and a
//! failing step that must not stop the ones after it.

use datapath::{Error, PodInterface, Step};
use nix::errno::Errno;
use nix::sched::CloneFlags;

use crate::common::*;

#[tokio::test]
async fn del_after_the_namespace_is_deleted_succeeds_twice() {
    if !require_root() {
        return;
    }
    let ns = TestNetns::new();
    let (mut p, _g) = pod(&ns, None, &["10.81.0.2/24"]);
    datapath::setup(&p).await.unwrap();
    assert!(link_names(None).contains(&p.host.name));
    drop(ns); // `ip netns del`: the runtime has torn the sandbox down.

    // First DEL still names the vanished namespace, the second has none
    // (CNI_NETNS empty), as runtimes send it on retries.
    datapath::teardown(&p).await.unwrap();
    assert!(!link_names(None).contains(&p.host.name), "host end left");
    p.container.netns = "".into();
    let again = datapath::teardown(&p).await.unwrap();
    assert!(!again.host_end_removed && !again.stray_peer_removed);
    assert!(!link_names(None).contains(&p.container.temp_name));
}

/// Runs `job` on a thread in a fresh network namespace of its own: the
/// worker threads it starts, and the `ip` commands it runs, inherit it.
fn in_private_netns<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        nix::sched::unshare(CloneFlags::CLONE_NEWNET).expect("unshare(CLONE_NEWNET)");
        job()
    })
    .join()
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[test]
fn del_goes_on_after_a_failed_step_and_reports_every_failure() {
    if !require_root() {
        return;
    }
    // The host end is `lo`, which the kernel refuses to delete; the stray
    // peer is a real link that must still be removed after that failure.
    let (err, stray_left) = in_private_netns(|| {
        let mut p = PodInterface::new(&unique_id(), "", "eth0").unwrap();
        p.host.name = "lo".into();
        run(
            "ip",
            &["link", "add", &p.container.temp_name, "type", "bridge"],
        );
        let err = datapath::blocking::teardown(&p).unwrap_err();
        (
            err,
            succeeds("ip", &["link", "show", &p.container.temp_name]),
        )
    });
    assert!(!stray_left, "teardown stopped at its first failure");
    let Error::Teardown { interface, errors } = &err else {
        panic!("want Error::Teardown, got {err:?}");
    };
    assert_eq!(interface, "lo");
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(errors[0].failed_step(), Some(Step::DeleteLink));
    assert_eq!(err.errno(), Some(Errno::EOPNOTSUPP), "{err}");
    assert!(
        err.to_string()
            .contains("delete link failed for interface lo"),
        "{err}"
    );
}
