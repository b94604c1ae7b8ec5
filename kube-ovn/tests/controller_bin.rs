//! The `kube-ovn-controller` binary run with Kube-OVN's own Deployment args (plus the
//! NB/SB flags `start-controller.sh` prepends) against a real NB + ovn-northd.

mod common;

use std::process::{Command, Output};

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

#[test]
fn runs_the_start_up_with_kube_ovns_deployment_args() {
    let Some(central) = common::central() else {
        return;
    };
    let nb = script_form(&central.nb.tcp_remote().unwrap());
    let sb = script_form(&central.sb.tcp_remote().unwrap());
    // a dead remote first: the client moves on to one that answers
    let mut args = vec![
        format!("--ovn-nb-addr=tcp:[127.0.0.1]:1,{nb}"),
        format!("--ovn-sb-addr={sb}"),
    ];
    args.extend(deployment_args());
    let out = run(&args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("reconcilers are not implemented yet"),
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
    let remote = central.nb_remote();
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

    // a restart writes nothing
    let before = common::nb_dump(&remote);
    let again = run(&args);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("(0 NB operations)"));
    assert_eq!(common::nb_dump(&remote), before);
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
