//! The plugin skeleton: validation and error codes like the reference `skel`, the VERSION
//! answer, and results printed in the configuration's version. Runs both in-process
//! (`run_with`) and through the real `cni-spec-veth` binary.

use std::collections::HashMap;
use std::process::{Command, Stdio};

use cni_spec::plugin::{run_with, CmdArgs, Plugin};
use cni_spec::{
    CniError, CniResult, CniVersion, ErrorCode, IpConfig, PluginConfig, V1Result, ALL_VERSIONS,
};

/// A plugin that returns one address, for testing the skeleton itself.
#[derive(Debug)]
struct OneAddress;

impl Plugin for OneAddress {
    fn add(&self, _: &CmdArgs, _: &PluginConfig) -> Result<CniResult, CniError> {
        let mut r = V1Result::empty();
        r.ips.push(IpConfig {
            interface: None,
            address: "10.9.0.2/24".parse().unwrap(),
            gateway: Some("10.9.0.1".parse().unwrap()),
        });
        Ok(r.into())
    }
    fn del(&self, _: &CmdArgs, _: &PluginConfig) -> Result<(), CniError> {
        Ok(())
    }
    fn check(&self, _: &CmdArgs, _: &PluginConfig) -> Result<(), CniError> {
        Ok(())
    }
}

fn env(command: &str) -> HashMap<String, String> {
    [
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", "c1"),
        ("CNI_NETNS", "/run/netns/none"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/usr/lib/cni"),
        ("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=p"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn call(env: &HashMap<String, String>, stdin: &str) -> (u8, String) {
    let mut out = Vec::new();
    let code = run_with(
        &OneAddress,
        |k| env.get(k).cloned(),
        &mut stdin.as_bytes(),
        &mut out,
    );
    (code, String::from_utf8(out).unwrap())
}

fn error_of(output: &str) -> CniError {
    serde_json::from_str(output).unwrap_or_else(|e| panic!("not an error object {output:?}: {e}"))
}

fn conf(version: &str) -> String {
    format!(r#"{{"cniVersion":"{version}","name":"net1","type":"one"}}"#)
}

#[test]
fn add_answers_in_the_config_version() {
    for version in ALL_VERSIONS {
        let (code, out) = call(&env("ADD"), &conf(version.as_str()));
        assert_eq!(code, 0, "{version}: {out}");
        let result = CniResult::from_slice(out.as_bytes()).unwrap();
        assert_eq!(result.version(), version);
        let v1 = result.to_current().unwrap();
        assert_eq!(v1.ips[0].address.to_string(), "10.9.0.2/24");
    }
}

#[test]
fn version_lists_all() {
    let (code, out) = call(&env("VERSION"), "");
    assert_eq!(code, 0);
    let info: cni_spec::VersionInfo = serde_json::from_str(&out).unwrap();
    assert_eq!(info.known_versions(), ALL_VERSIONS.to_vec());
}

/// (what, environment, stdin, expected code, expected message part)
type BadCase = (
    &'static str,
    HashMap<String, String>,
    String,
    ErrorCode,
    &'static str,
);

#[test]
fn bad_input_gets_the_reference_codes() {
    let cases: Vec<BadCase> = vec![
        (
            "unknown version",
            env("ADD"),
            conf("0.9.0"),
            ErrorCode::IncompatibleCniVersion,
            "incompatible CNI versions",
        ),
        (
            "broken JSON",
            env("ADD"),
            "{\"cniVersion\":".into(),
            ErrorCode::DecodingFailure,
            "error unmarshalling network config",
        ),
        (
            "broken JSON on CHECK",
            env("CHECK"),
            "[1,".into(),
            ErrorCode::DecodingFailure,
            "decoding version from network config",
        ),
        (
            "missing name wins over unknown version on ADD",
            env("ADD"),
            r#"{"cniVersion":"7.7.7","type":"x"}"#.into(),
            ErrorCode::InvalidNetworkConfig,
            "missing network name",
        ),
        (
            "CHECK before 0.4.0",
            env("CHECK"),
            conf("0.3.1"),
            ErrorCode::IncompatibleCniVersion,
            "config version does not allow CHECK",
        ),
        (
            "STATUS before 1.1.0",
            env("STATUS"),
            conf("1.0.0"),
            ErrorCode::IncompatibleCniVersion,
            "config version does not allow STATUS",
        ),
        (
            "GC before 1.1.0",
            env("GC"),
            conf("0.4.0"),
            ErrorCode::IncompatibleCniVersion,
            "config version does not allow GC",
        ),
        (
            "missing name",
            env("ADD"),
            r#"{"cniVersion":"1.0.0","type":"x"}"#.into(),
            ErrorCode::InvalidNetworkConfig,
            "missing network name",
        ),
        (
            "unknown command",
            env("FROB"),
            conf("1.0.0"),
            ErrorCode::InvalidEnvironmentVariables,
            "unknown CNI_COMMAND: FROB",
        ),
        (
            "ipam not an object",
            env("ADD"),
            r#"{"cniVersion":"1.0.0","name":"n","type":"x","ipam":3}"#.into(),
            ErrorCode::DecodingFailure,
            "error unmarshalling network config",
        ),
    ];
    for (what, env, stdin, code, msg) in cases {
        let (exit, out) = call(&env, &stdin);
        assert_eq!(exit, 1, "{what}");
        let err = error_of(&out);
        assert_eq!(err.code, code, "{what}: {out}");
        assert!(err.msg.contains(msg), "{what}: {out}");
    }
}

#[test]
fn unknown_version_details_name_supported_versions() {
    let (_, out) = call(&env("ADD"), &conf("0.9.0"));
    let err = error_of(&out);
    assert_eq!(err.cni_version, "0.9.0");
    assert!(err
        .details
        .starts_with(r#"config is "0.9.0", plugin supports ["0.1.0" "0.2.0""#));
}

#[test]
fn environment_is_validated() {
    let mut missing = env("ADD");
    missing.remove("CNI_IFNAME");
    missing.remove("CNI_NETNS");
    let (_, out) = call(&missing, &conf("1.0.0"));
    let err = error_of(&out);
    assert_eq!(err.code, ErrorCode::InvalidEnvironmentVariables);
    assert_eq!(
        err.msg,
        "required env variables [CNI_NETNS,CNI_IFNAME] missing"
    );

    // DEL does not need CNI_NETNS.
    let mut del = env("DEL");
    del.remove("CNI_NETNS");
    assert_eq!(call(&del, &conf("1.0.0")).0, 0);

    let mut bad_if = env("ADD");
    bad_if.insert("CNI_IFNAME".into(), "eth0:1".into());
    let err = error_of(&call(&bad_if, &conf("1.0.0")).1);
    assert_eq!(err.code, ErrorCode::InvalidEnvironmentVariables);
    assert!(err.msg.contains("contains / or :"), "{err}");

    let mut bad_id = env("DEL");
    bad_id.insert("CNI_CONTAINERID".into(), "-x".into());
    let err = error_of(&call(&bad_id, &conf("1.0.0")).1);
    assert_eq!(err.code, ErrorCode::InvalidEnvironmentVariables);
    assert!(
        err.msg.contains("invalid characters in containerID"),
        "{err}"
    );

    let mut bad_args = env("ADD");
    bad_args.insert("CNI_ARGS".into(), "K8S_POD_NAME".into());
    let err = error_of(&call(&bad_args, &conf("1.0.0")).1);
    assert_eq!(err.code, ErrorCode::InvalidEnvironmentVariables);
    assert_eq!(err.msg, "CNI_ARGS: invalid pair \"K8S_POD_NAME\"");
}

#[test]
fn result_that_cannot_be_converted_is_an_error() {
    #[derive(Debug)]
    struct NoAddress;
    impl Plugin for NoAddress {
        fn add(&self, _: &CmdArgs, _: &PluginConfig) -> Result<CniResult, CniError> {
            Ok(V1Result::empty().into())
        }
        fn del(&self, _: &CmdArgs, _: &PluginConfig) -> Result<(), CniError> {
            Ok(())
        }
        fn check(&self, _: &CmdArgs, _: &PluginConfig) -> Result<(), CniError> {
            Ok(())
        }
    }
    let env = env("ADD");
    let mut out = Vec::new();
    let code = run_with(
        &NoAddress,
        |k| env.get(k).cloned(),
        &mut conf("0.2.0").as_bytes(),
        &mut out,
    );
    assert_eq!(code, 1);
    let err = error_of(std::str::from_utf8(&out).unwrap());
    assert_eq!(err.code, ErrorCode::INTERNAL);
    assert!(err.msg.contains("no valid IP addresses"), "{err}");
}

/// The real binary: exit status, stdout only, and the delegate missing from CNI_PATH.
#[test]
fn binary_prints_errors_on_stdout_with_nonzero_exit() {
    let bin = env!("CARGO_BIN_EXE_cni-spec-veth");
    let run = |vars: &[(&str, &str)], stdin: &str| {
        let mut child = Command::new(bin)
            .env_clear()
            .envs(vars.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        // VERSION does not read stdin; a broken pipe there is expected.
        let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
        child.wait_with_output().unwrap()
    };
    let out = run(&[("CNI_COMMAND", "VERSION")], "");
    assert!(out.status.success());
    let info: cni_spec::VersionInfo = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info.cni_version, CniVersion::V1_1_0.as_str());

    let out = run(&[("CNI_COMMAND", "ADD")], "{}");
    assert_eq!(out.status.code(), Some(1));
    let err: CniError = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err.code, ErrorCode::InvalidEnvironmentVariables);
    assert_eq!(
        err.msg,
        "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing"
    );

    let empty_path = tempfile::tempdir().unwrap();
    let conf =
        r#"{"cniVersion":"1.1.0","name":"n","type":"cni-spec-veth","ipam":{"type":"host-local"}}"#;
    let out = run(
        &[
            ("CNI_COMMAND", "STATUS"),
            ("CNI_PATH", empty_path.path().to_str().unwrap()),
        ],
        conf,
    );
    assert_eq!(out.status.code(), Some(1));
    let err: CniError = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(err.code, ErrorCode::PluginNotAvailable);
    assert!(err.msg.contains("\"host-local\" not found"), "{err}");
}
