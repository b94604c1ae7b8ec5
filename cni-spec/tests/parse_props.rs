//! Property tests of parsing: what we emit we parse back unchanged, at every version, and
//! no input makes a parser panic. The cargo-fuzz target in `fuzz/` checks the same
//! properties on arbitrary bytes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cni_spec::version::ResultLayout;
use cni_spec::{
    CniError, CniResult, Dns, Interface, IpConfig, NetworkConfigList, PluginConfig, Route,
    V1Result, ALL_VERSIONS,
};
use ipnet::IpNet;
use proptest::prelude::*;

fn ip_addr() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<u32>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(n))),
        any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n))),
    ]
}

fn ip_net() -> impl Strategy<Value = IpNet> {
    (ip_addr(), any::<u8>()).prop_map(|(addr, len)| {
        let max = if addr.is_ipv4() { 33 } else { 129 };
        IpNet::new(addr, len % max).unwrap()
    })
}

fn route() -> impl Strategy<Value = Route> {
    (
        ip_net(),
        proptest::option::of(ip_addr()),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u32>()),
        proptest::option::of(any::<u8>()),
    )
        .prop_map(|(dst, gw, mtu, table, scope)| Route {
            mtu,
            table,
            scope,
            ..Route::new(dst, gw)
        })
}

fn interface() -> impl Strategy<Value = Interface> {
    (
        "[a-z][a-z0-9]{0,14}",
        proptest::option::of("[0-9a-f]{2}(:[0-9a-f]{2}){5}"),
        proptest::option::of(any::<u32>()),
        proptest::option::of("/run/netns/[a-z0-9]{1,8}"),
        proptest::option::of("[0-9]{4}:[0-9]{2}:[0-9]{2}\\.[0-7]"),
    )
        .prop_map(|(name, mac, mtu, sandbox, pci_id)| Interface {
            name,
            mac,
            mtu,
            sandbox,
            pci_id,
            socket_path: None,
        })
}

fn v1_result() -> impl Strategy<Value = V1Result> {
    (
        proptest::collection::vec(interface(), 0..3),
        proptest::collection::vec(
            (
                proptest::option::of(0i32..3),
                ip_net(),
                proptest::option::of(ip_addr()),
            ),
            0..4,
        ),
        proptest::collection::vec(route(), 0..4),
        proptest::collection::vec("[0-9.]{1,15}", 0..3),
    )
        .prop_map(|(interfaces, ips, routes, nameservers)| V1Result {
            interfaces,
            ips: ips
                .into_iter()
                .map(|(interface, address, gateway)| IpConfig {
                    interface,
                    address,
                    gateway,
                })
                .collect(),
            routes,
            // An empty DNS object is not emitted, so generate it as absent.
            dns: Some(Dns {
                nameservers,
                ..Dns::default()
            })
            .filter(|d| !d.is_empty()),
            ..V1Result::empty()
        })
}

/// The fuzz target's property (fuzz/fuzz_targets/parse.rs): whatever parses re-emits to
/// JSON that parses back equal, also after conversion to every version.
fn check_parse_properties(data: &[u8]) {
    if let Ok(result) = CniResult::from_slice(data) {
        let again = CniResult::from_slice(result.to_json().as_bytes()).expect("re-parse");
        assert_eq!(again, result);
        for version in ALL_VERSIONS {
            match result.convert_to(version) {
                Ok(converted) => {
                    let back = CniResult::from_slice(converted.to_json().as_bytes()).unwrap();
                    assert_eq!(back, converted);
                }
                Err(_) => assert_eq!(version.result_layout(), ResultLayout::Legacy),
            }
        }
    }
    if let Ok(list) = NetworkConfigList::from_slice(data) {
        let bytes = serde_json::to_vec(&list).unwrap();
        assert_eq!(NetworkConfigList::from_slice(&bytes).unwrap(), list);
    }
    if let Ok(conf) = PluginConfig::from_slice(data) {
        assert_eq!(PluginConfig::from_slice(&conf.to_bytes()).unwrap(), conf);
    }
    if let Ok(err) = serde_json::from_slice::<CniError>(data) {
        assert_eq!(
            serde_json::from_str::<CniError>(&err.to_json()).unwrap(),
            err
        );
    }
}

/// JSON built from the spec's own keys and plausible values, so the parsers get past the
/// first brace far more often than with random bytes.
fn cni_like_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let keys = prop::sample::select(vec![
        "cniVersion",
        "cniVersions",
        "name",
        "type",
        "plugins",
        "ips",
        "ip4",
        "ip6",
        "ip",
        "address",
        "gateway",
        "version",
        "interface",
        "interfaces",
        "routes",
        "dst",
        "gw",
        "dns",
        "nameservers",
        "mtu",
        "sandbox",
        "prevResult",
        "ipam",
        "disableCheck",
        "disableGC",
        "capabilities",
        "runtimeConfig",
        "args",
        "code",
        "msg",
        "details",
        "x",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            "0.1.0",
            "0.2.0",
            "0.3.0",
            "0.3.1",
            "0.4.0",
            "1.0.0",
            "1.1.0",
            "9.9.9",
            "",
            "4",
            "6",
            "10.0.0.2/24",
            "fd00::2/64",
            "10.0.0.1",
            "0.0.0.0/0",
            "::/0",
            "net1",
            "true",
            "eth0",
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

proptest! {
    #[test]
    fn results_round_trip_at_every_version(result in v1_result()) {
        let result = CniResult::V1(result);
        for version in ALL_VERSIONS {
            let Ok(converted) = result.convert_to(version) else {
                // Only the legacy layout can refuse (no address at all).
                prop_assert!(version.result_layout() == ResultLayout::Legacy);
                continue;
            };
            let reparsed = CniResult::from_slice(converted.to_json().as_bytes()).unwrap();
            prop_assert_eq!(reparsed, converted);
        }
    }

    #[test]
    fn configs_keep_unknown_keys(
        // Plugin-specific keys; the `x` prefix keeps them apart from the spec's keys.
        extra in proptest::collection::btree_map("x[a-zA-Z]{0,8}", any::<i64>(), 0..5),
        name in "[a-z0-9][a-z0-9_.-]{0,20}",
    ) {
        let mut plugin = serde_json::json!({"type": "bridge"});
        for (k, v) in &extra {
            plugin[k] = (*v).into();
        }
        let list = serde_json::json!({"cniVersion": "1.0.0", "name": name, "plugins": [plugin]});
        let parsed = NetworkConfigList::from_slice(list.to_string().as_bytes()).unwrap();
        for (k, v) in &extra {
            prop_assert_eq!(&parsed.plugins[0].extra[k], &serde_json::Value::from(*v));
        }
        let again = serde_json::to_vec(&parsed).unwrap();
        prop_assert_eq!(NetworkConfigList::from_slice(&again).unwrap(), parsed);
    }

    #[test]
    fn arbitrary_bytes_parse_or_fail_cleanly(
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        check_parse_properties(&bytes);
    }

    #[test]
    fn cni_like_json_round_trips(value in cni_like_json()) {
        check_parse_properties(value.to_string().as_bytes());
    }
}
