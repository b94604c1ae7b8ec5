//! The `kube-ovn-controller` binary run with Kube-OVN's own Deployment args (plus the
//! NB/SB flags `start-controller.sh` prepends) against a real NB + ovn-northd and the
//! embedded API server: the start-up, then the Subnet controller creating the default
//! subnets; the process is stopped by its pid.

use kube_ovn_test_support as common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::Duration;

use embedded_apiserver::{Config, EmbeddedApiServer, Handle};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};

const DEPLOYMENT_ARGS: &str = include_str!("data/kube-ovn-controller-args.txt");

fn deployment_args() -> Vec<String> {
    DEPLOYMENT_ARGS
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// `tcp:127.0.0.1:PORT` as start-controller.sh writes remotes: `tcp:[IP]:PORT`.
fn script_form(remote: &str) -> String {
    let (host, port) = remote.trim_start_matches("tcp:").rsplit_once(':').unwrap();
    format!("tcp:[{host}]:{port}")
}

fn run(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kube-ovn-controller"))
        .args(args)
        .env("RUST_LOG", "info")
        .output()
        .expect("run kube-ovn-controller")
}

/// How long the running controller may take to show a change.
const WAIT: Duration = Duration::from_secs(30);

/// The controller running in the background, its output going to files.
struct Running {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Running {
    fn start(args: &[String], dir: &Path, tag: &str) -> Running {
        let stdout = dir.join(format!("{tag}.stdout"));
        let stderr = dir.join(format!("{tag}.stderr"));
        let child = Command::new(env!("CARGO_BIN_EXE_kube-ovn-controller"))
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(File::create(&stdout).unwrap())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .expect("start kube-ovn-controller");
        Running {
            child,
            stdout,
            stderr,
        }
    }

    fn output(&self) -> (String, String) {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        (read(&self.stdout), read(&self.stderr))
    }

    /// Waits until `check` holds, failing with the output if the process exits first
    /// or [`WAIT`] passes.
    async fn wait_until(&mut self, what: &str, check: impl Fn(&str) -> bool) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (stdout, stderr) = self.output();
            if check(&stdout) {
                return;
            }
            let exited = self.child.try_wait().unwrap();
            assert!(
                exited.is_none() && tokio::time::Instant::now() < deadline,
                "never happened: {what} (exit: {exited:?})\nstdout: {stdout}\nstderr: {stderr}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops the process it started (by its own pid).
    fn stop(mut self) -> (String, String) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.output()
    }
}

/// The embedded API server with our CRDs, and a kubeconfig naming it.
async fn api_server(dir: &Path) -> (Handle, PathBuf) {
    let server = EmbeddedApiServer::start(Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.kube_client().expect("a client");
    let crd_api: Api<CustomResourceDefinition> = Api::all(client);
    for crd in kube_ovn_api::crd::crds() {
        crd_api.create(&PostParams::default(), &crd).await.unwrap();
    }
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    (server, kubeconfig)
}

#[tokio::test]
async fn runs_the_start_up_then_the_subnet_controller_with_kube_ovns_deployment_args() {
    let Some(central) = common::central() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (server, kubeconfig) = api_server(dir.path()).await;
    let nb = script_form(&central.nb.tcp_remote().unwrap());
    let sb = script_form(&central.sb.tcp_remote().unwrap());
    // a dead remote first: the client moves on to one that answers
    let mut args = vec![
        format!("--ovn-nb-addr=tcp:[127.0.0.1]:1,{nb}"),
        format!("--ovn-sb-addr={sb}"),
        format!("--kubeconfig={}", kubeconfig.display()),
    ];
    args.extend(deployment_args());
    let remote = central.nb_remote();
    let mut first = Running::start(&args, dir.path(), "first");
    first
        .wait_until("the default subnet's router port", |_| {
            // `find` answers empty (lrp-list fails) while the router does not exist
            let args = [
                "--bare",
                "--columns=networks",
                "find",
                "Logical_Router_Port",
            ];
            let found = common::nbctl(
                &remote,
                &[&args[..], &["name=ovn-cluster-ovn-default"]].concat(),
            );
            found.trim() == "10.16.0.1/16"
        })
        .await;
    let (stdout, stderr) = first.stop();
    assert!(
        stdout.contains("Services and NetworkPolicies are reconciled"),
        "{stdout}"
    );
    for flag in [
        "network-type=geneve",
        "log_file=/var/log/kube-ovn/kube-ovn-controller.log",
        "enable-eip-snat=true",
    ] {
        assert!(
            stderr.contains(flag),
            "{flag} not logged as ignored: {stderr}"
        );
    }
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router",
            "ovn-cluster",
            "external_ids:vendor"
        ),
        "kube-ovn"
    );
    assert_eq!(
        common::nb_get(
            &remote,
            "Logical_Router_Port",
            "ovn-cluster-join",
            "networks"
        ),
        "[\"100.64.0.1/16\"]"
    );
    let lbs = common::nbctl(
        &remote,
        &[
            "--bare",
            "--columns=name",
            "find",
            "Load_Balancer",
            "external_ids:vendor=kube-ovn",
        ],
    );
    assert_eq!(lbs.split_whitespace().count(), 6, "{lbs}");

    // a restart's start-up writes nothing
    let mut again = Running::start(&args, dir.path(), "again");
    again
        .wait_until("the restart's start-up", |stdout| {
            stdout.contains("start-up done")
        })
        .await;
    let (stdout, _) = again.stop();
    assert!(stdout.contains("(0 NB operations)"), "{stdout}");
    server.shutdown().await;
}

#[test]
fn an_unknown_flag_stops_it_before_any_write() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    let mut args = vec![format!("--ovn-nb-addr={remote}")];
    args.extend(deployment_args());
    args.push("--enable-everything=true".into());
    let out = run(&args);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown flag --enable-everything"),
        "{stderr}"
    );
    assert_eq!(common::nbctl(&remote, &["lr-list"]).trim(), "");
}

#[test]
fn a_bad_cidr_names_its_flag_and_writes_nothing() {
    let Some(central) = common::central() else {
        return;
    };
    let remote = central.nb_remote();
    let args = vec![
        format!("--ovn-nb-addr={remote}"),
        "--node-switch-cidr=100.64.0.0/40".to_string(),
    ];
    let out = run(&args);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--node-switch-cidr=\"100.64.0.0/40\""),
        "{stderr}"
    );
    assert_eq!(common::nbctl(&remote, &["lr-list"]).trim(), "");
}
