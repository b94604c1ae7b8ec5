//! Leader election between two controller replicas against one embedded API server:
//! only one leads at a time; when the leader dies (its runtime is shut down, so it
//! cannot release the Lease) the other takes over once the Lease expires; a replica
//! told to stop releases the Lease at once.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use embedded_apiserver::{Config, EmbeddedApiServer};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube_ovn_controller::leader::{run_as_leader, LeaderElection, LEASE_NAME};
use tokio::sync::oneshot;

/// Generous bound for a takeover (the test Lease lasts 2 s).
const WAIT: Duration = Duration::from_secs(30);

/// Marks its replica as leading while alive (a term's work holds one).
struct Leading(Arc<AtomicBool>);

impl Drop for Leading {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// One replica in its own runtime, as a separate process would be.
struct Replica {
    name: String,
    leading: Arc<AtomicBool>,
    terms: Arc<AtomicUsize>,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<oneshot::Receiver<()>>,
}

impl Replica {
    fn start(kubeconfig: &Path, name: &str) -> Replica {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let leading = Arc::new(AtomicBool::new(false));
        let terms = Arc::new(AtomicUsize::new(0));
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let kubeconfig = kubeconfig.to_path_buf();
        let mut election = LeaderElection::kube_ovn("kube-system", name);
        election.duration_secs = 2;
        election.grace_secs = 1;
        let (flag, count) = (leading.clone(), terms.clone());
        runtime.spawn(async move {
            // a client of this runtime, the way the binary builds its own
            let file = Kubeconfig::read_from(&kubeconfig).unwrap();
            let options = KubeConfigOptions::default();
            let config = kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .unwrap();
            let client = kube::Client::try_from(config).unwrap();
            let work = move || {
                let (flag, count) = (flag.clone(), count.clone());
                async move {
                    flag.store(true, Ordering::SeqCst);
                    count.fetch_add(1, Ordering::SeqCst);
                    let _leading = Leading(flag);
                    std::future::pending::<()>().await;
                }
            };
            let stop = async {
                let _ = stop_rx.await;
            };
            run_as_leader(client, &election, work, stop).await.unwrap();
            let _ = done_tx.send(());
        });
        Replica {
            name: name.to_owned(),
            leading,
            terms,
            runtime: Some(runtime),
            stop: Some(stop_tx),
            done: Some(done_rx),
        }
    }

    fn is_leading(&self) -> bool {
        self.leading.load(Ordering::SeqCst)
    }

    /// A crash: every task stops where it is, nothing is released.
    fn kill(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }

    /// A clean stop (SIGTERM): returns once the election has released the Lease.
    async fn stop(&mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.done.take().unwrap().await.unwrap();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn holder(api: &Api<Lease>) -> Option<String> {
    let lease = api.get_opt(LEASE_NAME).await.unwrap()?;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

/// Waits until `check` holds, failing after [`WAIT`]; while waiting, never two leaders.
async fn wait_until(what: &str, replicas: &[&Replica], check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let leaders = replicas.iter().filter(|r| r.is_leading()).count();
        assert!(leaders <= 1, "two leaders at once");
        if check() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_of_two_replicas_leads_and_the_other_takes_over_when_it_dies() {
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("the embedded API server starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    let leases: Api<Lease> = Api::namespaced(server.kube_client().unwrap(), "kube-system");
    let mut a = Replica::start(&kubeconfig, "controller-a");
    let mut b = Replica::start(&kubeconfig, "controller-b");
    wait_until("a leader", &[&a, &b], || a.is_leading() || b.is_leading()).await;
    // several Lease lifetimes later, still exactly the one leader
    let first = if a.is_leading() {
        a.name.clone()
    } else {
        b.name.clone()
    };
    let later = tokio::time::Instant::now() + Duration::from_secs(5);
    wait_until("five seconds of renewals", &[&a, &b], || {
        tokio::time::Instant::now() >= later
    })
    .await;
    assert_eq!(holder(&leases).await.as_deref(), Some(first.as_str()));
    let (leader, follower) = if a.name == first {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    assert!(leader.is_leading() && !follower.is_leading());
    assert_eq!(
        leader.terms.load(Ordering::SeqCst),
        1,
        "the leader never lost the Lease"
    );

    // the leader dies without releasing: the follower takes over once the Lease expires
    leader.kill();
    wait_until("the takeover", &[&*follower], || follower.is_leading()).await;
    assert_eq!(
        holder(&leases).await.as_deref(),
        Some(follower.name.as_str())
    );

    // a clean stop releases the Lease at once and stops the work
    follower.stop().await;
    assert!(!follower.is_leading());
    assert_eq!(holder(&leases).await, None);
    server.shutdown().await;
}
