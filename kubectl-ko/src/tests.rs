//! Unit tests: the sandbox state file, cluster-mode pod discovery and the exec command
//! lines Kube-OVN's plugin would run, exec exit statuses, trace parsing.

use std::path::PathBuf;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;

use super::run::exit_code;
use super::target::*;
use super::trace::{condense, logged_acl, verdict, TraceRequest, Verdict};
use super::{split_pod, KoError};

fn state() -> SandboxState {
    SandboxState {
        nb_remote: "unix:/run/nb.sock".into(),
        sb_remote: "unix:/run/sb.sock".into(),
        kubeconfig: PathBuf::from("/run/kubeconfig"),
        nodes: vec![SandboxNode {
            name: "n1".into(),
            netns: "ns1".into(),
            ovs_remote: "unix:/run/n1/db.sock".into(),
            ctl_dir: PathBuf::from("/run/n1"),
        }],
    }
}

fn pod(name: &str, labels: &[(&str, &str)], node: Option<&str>, phase: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "kube-system",
            "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<std::collections::BTreeMap<_, _>>()},
        "spec": {"nodeName": node, "containers": []},
        "status": {"phase": phase},
    }))
    .expect("a pod")
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[test]
fn state_round_trips_and_a_malformed_file_names_itself() {
    let dir = tempfile::tempdir().unwrap();
    state().save(dir.path()).unwrap();
    assert_eq!(SandboxState::load(dir.path()).unwrap(), state());
    let path = dir.path().join(STATE_FILE);
    std::fs::write(&path, "{not json").unwrap();
    let err = SandboxState::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, KoError::StateMalformed { path: p, .. } if *p == path),
        "{err}"
    );
}

#[test]
fn a_failed_save_keeps_the_previous_state() {
    let dir = tempfile::tempdir().unwrap();
    state().save(dir.path()).unwrap();
    // the temporary file's place is taken by a directory: the write fails
    std::fs::create_dir(dir.path().join(".sandbox.json.tmp")).unwrap();
    let mut other = state();
    other.nb_remote = "unix:/elsewhere".into();
    assert!(matches!(
        other.save(dir.path()),
        Err(KoError::StateWrite { .. })
    ));
    assert_eq!(SandboxState::load(dir.path()).unwrap(), state());
}

#[test]
fn missing_state_and_unknown_node_name_the_offender() {
    let err = StateDir::Explicit(PathBuf::from("/nonexistent-ko"))
        .load()
        .unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent-ko/sandbox.json"),
        "{err}"
    );
    let err = state().node("n9").unwrap_err();
    assert_eq!(err.to_string(), "unknown node \"n9\" (known: n1)");
}

#[test]
fn sandbox_invocations_name_the_databases_and_the_node() {
    let s = state();
    let inv = sandbox_invocation(&s, &Place::Nb, "ovn-nbctl", &args(&["show"])).unwrap();
    assert_eq!(inv.program(), "ovn-nbctl");
    assert!(
        matches!(&inv, Invocation::Local { args, .. } if *args == ["--db=unix:/run/nb.sock", "show"])
    );
    let inv =
        sandbox_invocation(&s, &Place::Node("n1".into()), "ovs-vsctl", &args(&["show"])).unwrap();
    let Invocation::Local { program, args, env } = inv else {
        panic!("local")
    };
    assert_eq!(program, "ip");
    assert_eq!(
        args,
        [
            "netns",
            "exec",
            "ns1",
            "ovs-vsctl",
            "--db=unix:/run/n1/db.sock",
            "show"
        ]
    );
    assert_eq!(env["OVS_RUNDIR"], "/run/n1");
}

#[test]
fn cluster_mode_picks_kube_ovns_pods_and_builds_its_exec() {
    let pods = vec![
        pod(
            "ovn-central-a",
            &[("app", "ovn-central")],
            Some("m1"),
            "Running",
        ),
        pod(
            "ovn-central-b",
            &[("app", "ovn-central"), ("ovn-nb-leader", "true")],
            Some("m2"),
            "Running",
        ),
        pod(
            "ovn-central-c",
            &[("app", "ovn-central"), ("ovn-sb-leader", "true")],
            Some("m3"),
            "Pending",
        ),
        pod("ovs-ovn-x", &[("app", "ovs")], Some("w1"), "Running"),
        pod("ovs-ovn-y", &[("app", "ovs")], Some("w2"), "Running"),
    ];
    let inv = cluster_invocation(&pods, &Place::Nb, "ovn-nbctl", &args(&["show"])).unwrap();
    assert_eq!(
        inv,
        Invocation::Exec {
            namespace: "kube-system".into(),
            pod: "ovn-central-b".into(),
            container: "ovn-central".into(),
            command: args(&["ovn-nbctl", "show"]),
        }
    );
    let inv = cluster_invocation(
        &pods,
        &Place::Node("w2".into()),
        "ovs-vsctl",
        &args(&["show"]),
    )
    .unwrap();
    assert!(
        matches!(&inv, Invocation::Exec { pod, container, .. } if pod == "ovs-ovn-y" && container == "openvswitch")
    );
    // the SB leader's pod is not running: no pod, and the error says which role
    let err = cluster_invocation(&pods, &Place::Sb, "ovn-sbctl", &[]).unwrap_err();
    assert!(err.to_string().contains("ovn-sb-leader=true"), "{err}");
    let err = pick_pod(&pods, &Place::Node("w9".into())).unwrap_err();
    assert!(err.to_string().contains("on node w9"), "{err}");
}

#[test]
fn exec_status_gives_the_exit_code() {
    let status = |json| serde_json::from_value::<Status>(json).unwrap();
    assert_eq!(
        exit_code(Some(&status(serde_json::json!({"status": "Success"})))),
        0
    );
    let failed = status(
        serde_json::json!({"status": "Failure", "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}),
    );
    assert_eq!(exit_code(Some(&failed)), 3);
    assert_eq!(exit_code(None), 1);
}

#[test]
fn trace_requests_parse_and_bad_ones_name_the_argument() {
    let req = TraceRequest::parse(&args(&["default/a", "10.0.0.1", "udp", "53"])).unwrap();
    assert_eq!((req.protocol.as_str(), req.port), ("udp", Some(53)));
    let req = TraceRequest::parse(&args(&["default/a", "fd00::1"])).unwrap();
    assert_eq!(req.protocol, "icmp");
    for (bad, offender) in [
        (vec!["default/a", "10.0.0.300"], "10.0.0.300"),
        (vec!["default/a", "10.0.0.1", "sctp", "1"], "sctp"),
        (vec!["default/a", "10.0.0.1", "tcp"], "tcp"),
        (vec!["nopod", "10.0.0.1"], "nopod"),
    ] {
        let err = TraceRequest::parse(&args(&bad)).unwrap_err();
        assert!(err.to_string().contains(&format!("{offender:?}")), "{err}");
    }
    assert!(split_pod("a/b/c").is_err());
}

const DROPPED: &str = r#"# tcp,reg14=0x3
ingress(dp="ls", inport="a")
----------------------------
 0. ls_in_check_port_sec (northd.c:8590): 1, priority 50, uuid 1b3b1b63
    reg0[15] = check_in_port_sec();
    next;
 7. ls_in_acl (northd.c:6780): ip4.dst == 10.16.0.11, priority 3000, uuid 5c0a7d21
    drop;
"#;

#[test]
fn the_verdict_names_the_dropping_stage_or_the_output() {
    assert_eq!(
        verdict(DROPPED),
        Verdict::Dropped {
            stage: "ls_in_acl".into(),
            uuid: "5c0a7d21".into(),
            matched: "ip4.dst == 10.16.0.11".into()
        }
    );
    let out = "egress(dp=\"ls\")\n 9. ls_out_check_port_sec (northd.c:1): 1, priority 0, uuid 1\n    output;\n    /* output to \"b.default\", type \"\" */\n";
    assert_eq!(verdict(out), Verdict::Delivered("b.default".into()));
    assert_eq!(verdict("nothing"), Verdict::Unknown);
    let logged = "LOG: ACL name=deny-b, direction=IN, verdict=drop, severity=info";
    assert_eq!(logged_acl(logged).as_deref(), Some("ACL deny-b"));
    let short = condense(DROPPED);
    assert!(
        short.contains(" ls_in_acl: ip4.dst == 10.16.0.11\n"),
        "{short}"
    );
    assert!(
        !short.contains("northd.c") && !short.contains("----"),
        "{short}"
    );
}
