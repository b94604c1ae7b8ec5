//! The runtime side against small shell-script plugins (no privileges needed): ordering,
//! environment, `prevResult` / `runtimeConfig` injection, caching, GC sequence, and clear
//! errors for plugins that are missing, time out, fail or print garbage.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cni_spec::exec::ExecError;
use cni_spec::runtime::{CniRuntime, RuntimeConf, RuntimeError};
use cni_spec::{AttachmentRef, ErrorCode, NetworkConfigList};
use serde_json::Value;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("bin")).unwrap();
        Fixture { dir }
    }

    fn bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("calls.log")
    }

    /// A plugin that logs `COMMAND NAME CNI_IFNAME STDIN` and runs `body` afterwards.
    fn script(&self, name: &str, body: &str) {
        let path = self.bin().join(name);
        let text = format!(
            "#!/bin/sh\ninput=$(cat)\nprintf '%s %s %s %s\\n' \"$CNI_COMMAND\" {name} \"${{CNI_IFNAME:--}}\" \"$input\" >> {log}\n{body}\n",
            log = self.log().display()
        );
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A plugin answering ADD with one address.
    fn recording(&self, name: &str, address: &str) {
        let result = format!(r#"{{"cniVersion":"1.1.0","ips":[{{"address":"{address}"}}]}}"#);
        self.script(
            name,
            &format!("if [ \"$CNI_COMMAND\" = ADD ]; then printf '%s' '{result}'; fi"),
        );
    }

    fn runtime(&self) -> CniRuntime {
        CniRuntime::new(vec![self.bin()], self.dir.path().join("cache"))
    }

    /// Logged calls: (command, plugin, ifname, stdin JSON).
    fn calls(&self) -> Vec<(String, String, String, Value)> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        text.lines()
            .map(|l| {
                let mut parts = l.splitn(4, ' ');
                let cmd = parts.next().unwrap().to_owned();
                let name = parts.next().unwrap().to_owned();
                let ifname = parts.next().unwrap().to_owned();
                (
                    cmd,
                    name,
                    ifname,
                    serde_json::from_str(parts.next().unwrap()).unwrap(),
                )
            })
            .collect()
    }

    fn clear_log(&self) {
        let _ = std::fs::remove_file(self.log());
    }
}

fn list(version: &str, plugins: &[&str]) -> NetworkConfigList {
    let plugins: Vec<Value> = plugins
        .iter()
        .map(|p| serde_json::json!({"type": p, "capabilities": {"portMappings": *p == "b"}}))
        .collect();
    let json = serde_json::json!({"cniVersion": version, "name": "recnet", "plugins": plugins});
    NetworkConfigList::from_slice(json.to_string().as_bytes()).unwrap()
}

fn attachment(cid: &str) -> RuntimeConf {
    let mut rt = RuntimeConf::new(cid, "/run/netns/unused", "eth0");
    rt.capability_args.insert(
        "portMappings".into(),
        serde_json::json!([{"hostPort": 8080}]),
    );
    rt
}

#[test]
fn add_check_del_order_and_injection() {
    let fx = Fixture::new();
    fx.recording("a", "10.0.0.2/24");
    fx.recording("b", "10.0.0.3/24");
    let rt = fx.runtime();
    let net = list("1.0.0", &["a", "b"]);
    let att = attachment("c1");

    let result = rt.add_network_list(&net, &att).unwrap();
    assert_eq!(result.version().as_str(), "1.0.0");
    assert_eq!(result.to_value()["ips"][0]["address"], "10.0.0.3/24");
    let calls = fx.calls();
    assert_eq!(calls.len(), 2);
    let (_, first, _, a_in) = &calls[0];
    let (_, second, _, b_in) = &calls[1];
    assert_eq!((first.as_str(), second.as_str()), ("a", "b"));
    assert_eq!(a_in["cniVersion"], "1.0.0");
    assert_eq!(a_in["name"], "recnet");
    assert!(a_in.get("prevResult").is_none());
    assert!(
        a_in.get("runtimeConfig").is_none(),
        "a declared no used capability"
    );
    assert!(a_in.get("capabilities").is_none());
    assert_eq!(b_in["prevResult"]["ips"][0]["address"], "10.0.0.2/24");
    assert_eq!(
        b_in["prevResult"]["cniVersion"], "1.0.0",
        "converted to list version"
    );
    assert_eq!(b_in["runtimeConfig"]["portMappings"][0]["hostPort"], 8080);

    fx.clear_log();
    rt.check_network_list(&net, &att).unwrap();
    let calls = fx.calls();
    assert_eq!(
        calls.iter().map(|c| c.1.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert!(calls.iter().all(|c| c.0 == "CHECK"));
    assert_eq!(calls[0].3["prevResult"]["ips"][0]["address"], "10.0.0.3/24");

    fx.clear_log();
    rt.del_network_list(&net, &att).unwrap();
    let calls = fx.calls();
    assert_eq!(
        calls.iter().map(|c| c.1.as_str()).collect::<Vec<_>>(),
        ["b", "a"]
    );
    assert_eq!(calls[0].3["prevResult"]["ips"][0]["address"], "10.0.0.3/24");
    assert!(rt
        .cached_result(&net, &att, cni_spec::CniVersion::V1_0_0)
        .unwrap()
        .is_none());

    // DEL again still runs the plugins (idempotent) but without prevResult.
    fx.clear_log();
    rt.del_network_list(&net, &att).unwrap();
    assert!(fx.calls().iter().all(|c| c.3.get("prevResult").is_none()));
    let err = rt.check_network_list(&net, &att).unwrap_err();
    assert!(matches!(err, RuntimeError::NotCached { .. }), "{err}");
}

#[test]
fn old_versions_limit_commands() {
    let fx = Fixture::new();
    fx.recording("a", "10.0.0.2/24");
    let rt = fx.runtime();
    let old = list("0.3.1", &["a"]);
    let att = attachment("c1");
    let result = rt.add_network_list(&old, &att).unwrap();
    assert_eq!(result.to_value()["ips"][0]["version"], "4");
    let err = rt.check_network_list(&old, &att).unwrap_err();
    assert_eq!(
        err.to_string(),
        "configuration version 0.3.1 does not support the CHECK command"
    );
    fx.clear_log();
    rt.del_network_list(&old, &att).unwrap();
    assert!(
        fx.calls()[0].3.get("prevResult").is_none(),
        "no prevResult on DEL before 0.4.0"
    );
    // STATUS does not exist before 1.1.0: nothing is executed.
    fx.clear_log();
    rt.status_network_list(&old).unwrap();
    assert!(fx.calls().is_empty());
}

#[test]
fn gc_deletes_stale_attachments_then_sends_gc() {
    let fx = Fixture::new();
    fx.recording("a", "10.0.0.2/24");
    fx.recording("b", "10.0.0.3/24");
    let rt = fx.runtime();
    let net = list("1.1.0", &["a", "b"]);
    rt.add_network_list(&net, &attachment("keep")).unwrap();
    rt.add_network_list(&net, &attachment("stale")).unwrap();
    fx.clear_log();
    let valid = [AttachmentRef {
        container_id: "keep".into(),
        ifname: "eth0".into(),
    }];
    rt.gc_network_list(&net, &valid).unwrap();
    let calls = fx.calls();
    let seq: Vec<String> = calls.iter().map(|c| format!("{} {}", c.0, c.1)).collect();
    assert_eq!(seq, ["DEL b", "DEL a", "GC a", "GC b"]);
    assert_eq!(calls[0].3["prevResult"]["ips"][0]["address"], "10.0.0.3/24");
    let gc_in = &calls[2].3;
    assert_eq!(gc_in["cni.dev/valid-attachments"][0]["containerID"], "keep");
    assert_eq!(gc_in["cni.dev/attachments"][0]["ifname"], "eth0");
    assert_eq!(calls[2].2, "-", "GC gets no CNI_IFNAME");
    // STATUS reaches every plugin at 1.1.0.
    fx.clear_log();
    rt.status_network_list(&net).unwrap();
    assert_eq!(fx.calls().len(), 2);
}

fn plugin_source(err: RuntimeError) -> ExecError {
    match err {
        RuntimeError::Plugin { source, .. } => *source,
        other => panic!("expected a plugin error, got {other}"),
    }
}

#[test]
fn broken_plugins_give_clear_errors() {
    let fx = Fixture::new();
    fx.script("garbage", "echo 'hello, world'");
    fx.script("silent", "exit 0");
    fx.script("mute-failure", "echo oops >&2; exit 3");
    fx.script(
        "cni-failure",
        r#"printf '%s' '{"code":11,"msg":"busy","details":"retry"}'; exit 1"#,
    );
    fx.script("slow", "exec sleep 30");
    let rt = fx.runtime().with_timeout(Duration::from_millis(300));
    let att = attachment("c1");
    let add = |plugin: &str| {
        rt.add_network_list(&list("1.0.0", &[plugin]), &att)
            .unwrap_err()
    };

    let err = add("garbage");
    assert!(
        err.to_string()
            .starts_with("ADD of plugin \"garbage\" (#0 in network \"recnet\") failed"),
        "{err}"
    );
    assert!(
        matches!(plugin_source(err), ExecError::Garbage { ref output, .. } if output.contains("hello"))
    );

    let err = plugin_source(add("silent"));
    assert!(matches!(err, ExecError::NoOutput { .. }), "{err}");
    assert!(err
        .to_string()
        .ends_with("exited without output, expected a result"));
    assert_eq!(err.to_cni_error().code, ErrorCode::DecodingFailure);

    let err = plugin_source(add("mute-failure"));
    assert!(
        matches!(err, ExecError::NoErrorMessage { ref stderr, .. } if stderr.contains("oops")),
        "{err}"
    );

    let err = plugin_source(add("cni-failure"));
    let ExecError::Failed { error, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        (error.code, error.msg.as_str(), error.details.as_str()),
        (ErrorCode::TryAgainLater, "busy", "retry")
    );

    let err = plugin_source(add("slow"));
    assert!(matches!(err, ExecError::Timeout { .. }), "{err}");

    let err = plugin_source(add("no-such-plugin"));
    assert!(
        err.to_string()
            .starts_with("failed to find plugin \"no-such-plugin\" in path"),
        "{err}"
    );

    let err = plugin_source(add("../escape"));
    assert!(matches!(err, ExecError::InvalidName(_)), "{err}");
}

#[test]
fn bad_attachments_and_lists_are_rejected() {
    let fx = Fixture::new();
    fx.recording("a", "10.0.0.2/24");
    let rt = fx.runtime();
    let net = list("1.0.0", &["a"]);
    let mut att = attachment("c1");
    att.ifname = "much-too-long-name".into();
    let err = rt.add_network_list(&net, &att).unwrap_err();
    assert!(
        err.to_string()
            .contains("interface name should be less than 16 characters"),
        "{err}"
    );
    let err = rt
        .add_network_list(&net, &attachment("bad id"))
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Attachment(_)), "{err}");
    assert!(
        fx.calls().is_empty(),
        "nothing executed for invalid attachments"
    );
    let missing = Path::new("/nonexistent/net.conflist");
    let err = NetworkConfigList::from_file(missing).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("reading network configuration /nonexistent/net.conflist"));
}
