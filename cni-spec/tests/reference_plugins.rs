//! Our runtime side driving the real reference plugins (Debian's containernetworking-plugins
//! in /usr/lib/cni, which support 0.1.0 to 1.0.0) and our skeleton-based `cni-spec-veth`
//! plugin into real network namespaces. Needs root; fails instead of skipping under CI (`ovn_harness::in_ci`).
//!
//! Every test uses its own namespace, bridge, network name and subnet (tests run in
//! parallel) and removes them when done, also on failure (guards with `Drop`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use cni_spec::runtime::{CniRuntime, RuntimeConf, RuntimeError};
use cni_spec::{CniResult, CniVersion, ErrorCode, NetworkConfigList};
use serde_json::{json, Value};

const REFERENCE_DIR: &str = "/usr/lib/cni";

/// Whether the privileged parts are here; panics under CI when they are not.
fn privileged() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    let plugins = Path::new(REFERENCE_DIR).join("bridge").exists();
    let ip = Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if root && plugins && ip {
        return true;
    }
    let why =
        format!("needs root ({root}), {REFERENCE_DIR}/bridge ({plugins}) and iproute2 ({ip})");
    if ovn_harness::in_ci() {
        panic!("{why}");
    }
    eprintln!("skipping outside CI: {why}");
    false
}

/// A unique short tag per test (names must fit 15 bytes).
fn tag() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}{}",
        std::process::id() % 100_000,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A subnet octet that differs between tests of this process.
fn octet() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(10);
    (std::process::id() + NEXT.fetch_add(1, Ordering::Relaxed)) % 250 + 1
}

fn ip(args: &[&str]) -> std::process::Output {
    Command::new("ip").args(args).output().expect("ip runs")
}

/// A network namespace, deleted on drop.
struct Netns {
    name: String,
}

impl Netns {
    fn new(tag: &str) -> Self {
        let name = format!("cni-spec-{tag}");
        let out = ip(&["netns", "add", &name]);
        assert!(out.status.success(), "ip netns add {name}: {out:?}");
        Netns { name }
    }

    fn path(&self) -> PathBuf {
        Path::new("/run/netns").join(&self.name)
    }

    /// `ip -j -n NS ...` as JSON, or `None` when ip fails (e.g. no such device).
    fn json(&self, args: &[&str]) -> Option<Value> {
        let mut full = vec!["-j", "-n", &self.name];
        full.extend_from_slice(args);
        let out = ip(&full);
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).expect("ip -j prints JSON"))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// A host link (e.g. a bridge), deleted on drop.
struct HostLink(String);

impl Drop for HostLink {
    fn drop(&mut self) {
        let _ = ip(&["link", "del", "dev", &self.0]);
    }
}

/// Runs DEL for an attachment on drop, so a failing test still removes what the plugins
/// set up outside the namespace (portmap's iptables rules, host veths). DEL is idempotent,
/// so a test that already deleted loses nothing.
struct DelOnDrop<'a> {
    runtime: &'a CniRuntime,
    list: &'a NetworkConfigList,
    attachment: RuntimeConf,
}

impl Drop for DelOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.runtime.del_network_list(self.list, &self.attachment);
    }
}

fn veth_plugin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_cni-spec-veth"))
        .parent()
        .unwrap()
        .to_owned()
}

fn runtime(cache: &Path) -> CniRuntime {
    CniRuntime::new(
        vec![REFERENCE_DIR.into(), veth_plugin_dir()],
        cache.to_owned(),
    )
}

fn host_local(octet: u32, data_dir: &Path) -> Value {
    json!({"type": "host-local", "subnet": format!("10.251.{octet}.0/24"),
           "dataDir": data_dir, "routes": [{"dst": "0.0.0.0/0"}]})
}

fn portmap_and_tuning(tmp: &Path) -> [Value; 2] {
    [
        json!({"type": "portmap", "capabilities": {"portMappings": true}, "snat": false}),
        json!({"type": "tuning", "mtu": 1400, "dataDir": tmp.join("tuning")}),
    ]
}

fn attachment(ns: &Netns, octet: u32) -> RuntimeConf {
    let mut rt = RuntimeConf::new(&format!("ctr{}", ns.name), ns.path(), "eth0");
    rt.args =
        cni_spec::CniArgs::parse("IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web")
            .unwrap();
    rt.capability_args.insert(
        "portMappings".into(),
        json!([{"hostPort": 20000 + octet, "containerPort": 80, "protocol": "tcp"}]),
    );
    rt
}

/// CHECK's attachment: portmap 1.1.1 fails CHECK of IPv4-only port mappings whenever
/// ip6tables is usable ("could not check ipv6 dnat", containernetworking/plugins#819,
/// fixed after 1.1.1), so CHECK is sent without port mappings; ADD and DEL use them.
fn for_check(rt: &RuntimeConf) -> RuntimeConf {
    let mut rt = rt.clone();
    rt.capability_args.remove("portMappings");
    rt
}

/// The container's address from a result of any version.
fn container_address(result: &CniResult) -> String {
    result.to_current().unwrap().ips[0].address.to_string()
}

/// The interface, address and default route are in the namespace.
fn assert_attached(ns: &Netns, address: &str, octet: u32, mtu: Option<u64>) {
    let addrs = ns
        .json(&["addr", "show", "dev", "eth0"])
        .expect("eth0 exists");
    let found: Vec<String> = addrs[0]["addr_info"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{}/{}", a["local"].as_str().unwrap(), a["prefixlen"]))
        .collect();
    assert!(
        found.contains(&address.to_owned()),
        "{address} not in {found:?}"
    );
    let flags = addrs[0]["flags"].as_array().unwrap();
    assert!(flags.contains(&json!("UP")), "eth0 is not up: {flags:?}");
    if let Some(mtu) = mtu {
        assert_eq!(addrs[0]["mtu"], mtu, "tuning set the MTU");
    }
    let routes = ns.json(&["route", "show"]).unwrap();
    let gateway = format!("10.251.{octet}.1");
    assert!(
        routes
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["dst"] == "default"
                && r["gateway"] == gateway.as_str()
                && r["dev"] == "eth0"),
        "no default route via {gateway}: {routes}"
    );
}

/// Whether portmap's DNAT rule to the container's port 80 is in the host's nat table.
fn has_dnat_to(address: &str) -> bool {
    let out = Command::new("iptables")
        .args(["-w", "-t", "nat", "-S"])
        .output()
        .expect("iptables runs");
    let ip_only = address.split('/').next().unwrap();
    String::from_utf8_lossy(&out.stdout).contains(&format!("--to-destination {ip_only}:80"))
}

/// Nothing of the attachment is left in the namespace nor in host-local's store.
fn assert_detached(ns: &Netns, address: &str, data_dir: &Path, network: &str) {
    assert!(
        ns.json(&["link", "show", "dev", "eth0"]).is_none(),
        "eth0 still exists"
    );
    let routes = ns.json(&["route", "show"]).unwrap();
    assert_eq!(routes, json!([]), "routes left behind");
    let ip_only = address.split('/').next().unwrap();
    assert!(
        !data_dir.join(network).join(ip_only).exists(),
        "host-local still holds {ip_only}"
    );
}

fn bridge_chain(version: CniVersion) {
    if !privileged() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tag = tag();
    let octet = octet();
    let ns = Netns::new(&tag);
    let bridge = HostLink(format!("csbr{tag}"));
    let network = format!("csnet-{tag}");
    let data_dir = tmp.path().join("ipam");
    let [portmap, tuning] = portmap_and_tuning(tmp.path());
    let list = json!({"cniVersion": version.as_str(), "name": network, "plugins": [
        {"type": "bridge", "bridge": bridge.0, "isGateway": false, "ipMasq": false,
         "ipam": host_local(octet, &data_dir)},
        portmap, tuning]});
    let list = NetworkConfigList::from_slice(list.to_string().as_bytes()).unwrap();
    let rt = runtime(&tmp.path().join("cache"));
    let att = attachment(&ns, octet);
    let _cleanup = DelOnDrop {
        runtime: &rt,
        list: &list,
        attachment: att.clone(),
    };

    let result = rt.add_network_list(&list, &att).unwrap();
    assert_eq!(result.version(), version);
    let address = container_address(&result);
    assert!(
        address.starts_with(&format!("10.251.{octet}.")),
        "{address}"
    );
    assert_attached(&ns, &address, octet, Some(1400));
    assert!(has_dnat_to(&address), "portmap added no DNAT rule");
    if version.supports_check() {
        rt.check_network_list(&list, &for_check(&att)).unwrap();
    }
    rt.del_network_list(&list, &att).unwrap();
    assert_detached(&ns, &address, &data_dir, &network);
    assert!(!has_dnat_to(&address), "portmap left its DNAT rule");
}

#[test]
fn bridge_portmap_tuning_at_0_3_1() {
    bridge_chain(CniVersion::V0_3_1);
}

#[test]
fn bridge_portmap_tuning_at_0_4_0() {
    bridge_chain(CniVersion::V0_4_0);
}

#[test]
fn bridge_portmap_tuning_at_1_0_0() {
    bridge_chain(CniVersion::V1_0_0);
}

/// Our plugin (IPAM delegated to host-local) first, then portmap and tuning, which must
/// accept its result as `prevResult` at every version they support. Versions before 0.3.0
/// have no chaining, so there our plugin runs alone.
#[test]
fn veth_plugin_chained_with_reference_plugins_at_every_version() {
    if !privileged() {
        return;
    }
    for version in [
        CniVersion::V0_1_0,
        CniVersion::V0_2_0,
        CniVersion::V0_3_0,
        CniVersion::V0_3_1,
        CniVersion::V0_4_0,
        CniVersion::V1_0_0,
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let tag = tag();
        let octet = octet();
        let ns = Netns::new(&tag);
        let network = format!("csveth-{tag}");
        let data_dir = tmp.path().join("ipam");
        let mut plugins = vec![
            json!({"type": "cni-spec-veth", "ipam": host_local(octet, &data_dir),
            "dns": {"nameservers": ["10.251.0.53"]}}),
        ];
        let chained = version.supports_chaining();
        if chained {
            plugins.extend(portmap_and_tuning(tmp.path()));
        }
        let list = json!({"cniVersion": version.as_str(), "name": network, "plugins": plugins});
        let list = NetworkConfigList::from_slice(list.to_string().as_bytes()).unwrap();
        let rt = runtime(&tmp.path().join("cache"));
        let att = attachment(&ns, octet);
        let _cleanup = DelOnDrop {
            runtime: &rt,
            list: &list,
            attachment: att.clone(),
        };

        let result = rt
            .add_network_list(&list, &att)
            .unwrap_or_else(|e| panic!("ADD at {version}: {e}"));
        assert_eq!(result.version(), version);
        assert_eq!(result.to_value()["dns"]["nameservers"][0], "10.251.0.53");
        let address = container_address(&result);
        assert_attached(&ns, &address, octet, chained.then_some(1400));
        assert_eq!(
            has_dnat_to(&address),
            chained,
            "portmap used our result's address"
        );
        if version.supports_check() {
            rt.check_network_list(&list, &for_check(&att))
                .unwrap_or_else(|e| panic!("CHECK at {version}: {e}"));
        }
        rt.del_network_list(&list, &att)
            .unwrap_or_else(|e| panic!("DEL at {version}: {e}"));
        assert_detached(&ns, &address, &data_dir, &network);
        assert!(!has_dnat_to(&address), "portmap left its DNAT rule");
    }
}

fn host_link_exists(name: &str) -> bool {
    ip(&["link", "show", "dev", name]).status.success()
}

/// The host side of our plugin's veth for an attachment (it is the result's first
/// interface, the one without a sandbox).
fn host_side(result: &CniResult) -> String {
    result.to_current().unwrap().interfaces[0].name.clone()
}

/// 1.1.0: our plugin alone (the reference plugins predate 1.1.0); host-local is reached at
/// 1.0.0 through the delegate's version fallback. STATUS, CHECK, and GC both ways: the
/// runtime's DEL of a stale cached attachment, and the plugin's own GC of a veth the
/// runtime no longer knows about.
#[test]
fn veth_plugin_status_and_gc_at_1_1_0() {
    if !privileged() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (tag_a, tag_b) = (tag(), tag());
    let octet = octet();
    let (ns_a, ns_b) = (Netns::new(&tag_a), Netns::new(&tag_b));
    let network = format!("csgc-{tag_a}");
    let data_dir = tmp.path().join("ipam");
    let list = json!({"cniVersion": "1.1.0", "name": network, "plugins": [
        {"type": "cni-spec-veth", "ipam": host_local(octet, &data_dir)}]});
    let list = NetworkConfigList::from_slice(list.to_string().as_bytes()).unwrap();
    let rt = runtime(&tmp.path().join("cache"));
    rt.status_network_list(&list).unwrap();

    let (att_a, att_b) = (attachment(&ns_a, octet), attachment(&ns_b, octet));
    let result_a = rt.add_network_list(&list, &att_a).unwrap();
    let result_b = rt.add_network_list(&list, &att_b).unwrap();
    let _guards = [
        HostLink(host_side(&result_a)),
        HostLink(host_side(&result_b)),
    ];
    assert_eq!(result_a.version(), CniVersion::V1_1_0);
    rt.check_network_list(&list, &att_a).unwrap();
    let (addr_a, addr_b) = (container_address(&result_a), container_address(&result_b));
    assert_ne!(addr_a, addr_b);
    assert_attached(&ns_a, &addr_a, octet, None);
    assert_attached(&ns_b, &addr_b, octet, None);

    // The runtime forgets B (its cache entry is lost): only the plugin's GC can find it.
    let cache_b = tmp
        .path()
        .join("cache/results")
        .join(format!("{network}-{}-eth0", att_b.container_id));
    std::fs::remove_file(&cache_b).unwrap();
    // Nothing is valid any more: A is DELeted from the cache, B's veth by the plugin's GC.
    rt.gc_network_list(&list, &[]).unwrap();
    assert_detached(&ns_a, &addr_a, &data_dir, &network);
    assert!(!host_link_exists(&host_side(&result_b)), "GC left B's veth");
    assert!(ns_b.json(&["link", "show", "dev", "eth0"]).is_none());
    assert!(rt
        .cached_result(&list, &att_a, CniVersion::V1_1_0)
        .unwrap()
        .is_none());
}

/// STATUS through the runtime reports our plugin's "not available" (50) when its IPAM
/// plugin is missing from CNI_PATH.
#[test]
fn status_reports_missing_ipam_plugin() {
    if !privileged() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let list = json!({"cniVersion": "1.1.0", "name": "csstatus", "plugins": [
        {"type": "cni-spec-veth", "ipam": {"type": "host-local"}}]});
    let list = NetworkConfigList::from_slice(list.to_string().as_bytes()).unwrap();
    let rt = CniRuntime::new(vec![veth_plugin_dir()], tmp.path().to_owned());
    let err = rt.status_network_list(&list).unwrap_err();
    let RuntimeError::Plugin {
        source, command, ..
    } = err
    else {
        panic!("expected a plugin error")
    };
    assert_eq!(command, "STATUS");
    let cni = source.to_cni_error();
    assert_eq!(cni.code, ErrorCode::PluginNotAvailable);
    assert!(cni.msg.contains("host-local"), "{cni}");
}

/// ADD of an interface that already exists fails, and the IPAM lease is given back.
#[test]
fn add_twice_fails_and_releases_the_lease() {
    if !privileged() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tag = tag();
    let octet = octet();
    let ns = Netns::new(&tag);
    let network = format!("csdup-{tag}");
    let data_dir = tmp.path().join("ipam");
    let list = json!({"cniVersion": "1.0.0", "name": network, "plugins": [
        {"type": "cni-spec-veth", "ipam": host_local(octet, &data_dir)}]});
    let list = NetworkConfigList::from_slice(list.to_string().as_bytes()).unwrap();
    let rt = runtime(&tmp.path().join("cache"));
    let att = attachment(&ns, octet);
    let first = rt.add_network_list(&list, &att).unwrap();
    let _guard = HostLink(host_side(&first));
    let mut other = att.clone();
    other.container_id = format!("other{tag}");
    let err = rt.add_network_list(&list, &other).unwrap_err();
    let RuntimeError::Plugin { source, .. } = err else {
        panic!("expected a plugin error")
    };
    let cni = source.to_cni_error();
    assert_eq!(cni.code, ErrorCode::Plugin(100), "{cni}");
    let leases: Vec<_> = std::fs::read_dir(data_dir.join(&network))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("10.251."))
        .collect();
    assert_eq!(leases.len(), 1, "the failed ADD's lease was released");
    rt.del_network_list(&list, &att).unwrap();
    assert_detached(&ns, &container_address(&first), &data_dir, &network);
}

/// CHECK really looks: with the address removed from the container it fails with our
/// plugin's code; DEL still succeeds after the namespace is gone (DEL is idempotent).
#[test]
fn check_notices_a_removed_address_and_del_survives_a_lost_netns() {
    if !privileged() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tag = tag();
    let octet = octet();
    let ns = Netns::new(&tag);
    let network = format!("cschk-{tag}");
    let data_dir = tmp.path().join("ipam");
    let list = json!({"cniVersion": "1.0.0", "name": network, "plugins": [
        {"type": "cni-spec-veth", "ipam": host_local(octet, &data_dir)}]});
    let list = NetworkConfigList::from_slice(list.to_string().as_bytes()).unwrap();
    let rt = runtime(&tmp.path().join("cache"));
    let att = attachment(&ns, octet);
    let result = rt.add_network_list(&list, &att).unwrap();
    let host = HostLink(host_side(&result));
    rt.check_network_list(&list, &att).unwrap();

    let address = container_address(&result);
    let out = ip(&["-n", &ns.name, "addr", "del", &address, "dev", "eth0"]);
    assert!(out.status.success(), "{out:?}");
    let err = rt.check_network_list(&list, &att).unwrap_err();
    let RuntimeError::Plugin {
        source, command, ..
    } = err
    else {
        panic!("expected a plugin error")
    };
    assert_eq!(command, "CHECK");
    let cni = source.to_cni_error();
    assert_eq!(cni.code, ErrorCode::Plugin(100));
    assert_eq!(cni.msg, "address missing on interface");
    assert_eq!(cni.details, format!("{address} on eth0"));

    drop(ns);
    rt.del_network_list(&list, &att).unwrap();
    rt.del_network_list(&list, &att).unwrap();
    assert!(
        !host_link_exists(&host.0),
        "host side of the veth left behind"
    );
    let ip_only = address.split('/').next().unwrap();
    assert!(!data_dir.join(&network).join(ip_only).exists());
}
